"""Live feeds of the order store: the journal of a follower (written at once, fsynced,
locked while it runs, torn lines ignored) and an OrderBook / StreamSession / Recorder
followed against the simulator, whose market orders the next sync then holds."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from _recordings import write_order_recording

from toolkit.errors import InvalidRequest
from toolkit.recording import Recorder
from toolkit.sim import Simulator
from toolkit.store import OrderStore, _follow
from toolkit.store._follow import LIVE_DIR, Journal, read_journals
from toolkit.stream import OrderBook
from toolkit.stream._events import order_event

# -- the journal (sans-I/O of the network) --------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_ids_are_written_at_once_and_once(tmp_path: Path) -> None:
    journal = Journal(tmp_path, clock=Clock())
    assert journal.add_order("m-1") and not journal.add_order("m-1")
    journal.add_order("l-2")
    # on disk before any flush: a killed process loses nothing the kernel has
    assert journal.path.read_text() == "o m-1\no l-2\n"
    assert journal.ids == 2
    journal.close()


@pytest.mark.parametrize("bad", ["", " m-1", "a\nb", "x/y", 7, None])
def test_a_bad_id_is_refused_before_anything_is_written(tmp_path: Path, bad: Any) -> None:
    journal = Journal(tmp_path)
    with pytest.raises(InvalidRequest):
        journal.add_order(bad)
    assert journal.path.read_bytes() == b""
    journal.close()


def test_fsync_every_interval_and_on_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    clock = Clock()
    journal = Journal(tmp_path, fsync_interval=1.0, clock=clock)
    synced.clear()  # the folder's fsync (its new name)
    journal.add_order("a")
    journal.add_order("b")
    assert synced == []  # within the interval: written, not yet fsynced
    clock.now = 1.5
    journal.add_order("c")
    assert len(synced) == 1
    journal.add_order("d")
    journal.close()
    assert len(synced) == 2  # the rest on close
    journal.close()  # twice is harmless
    assert len(synced) == 2
    with pytest.raises(Exception, match="stopped"):
        journal.add_order("e")


def test_the_journal_name_is_made_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dirs: list[str] = []
    monkeypatch.setattr(_follow, "fsync_path", lambda p: dirs.append(Path(p).name))
    Journal(tmp_path).close()
    assert dirs == [LIVE_DIR]


def test_a_journal_is_locked_before_a_sync_can_see_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, bool]] = []
    real = os.rename

    def rename(src: Any, dst: Any) -> None:
        assert not Path(src).name.endswith(".ids")  # syncs read *.ids only
        seen.append((Path(dst).suffix, _follow._running(Path(src))))
        real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    journal = Journal(tmp_path)
    assert seen == [(".ids", True)]  # already locked when it got its readable name
    assert [p.name for p in (tmp_path / LIVE_DIR).iterdir()] == [journal.path.name]
    journal.close()


def test_running_journals_are_kept_ended_ones_handed_back(tmp_path: Path) -> None:
    running = Journal(tmp_path)
    running.add_order("r-1")
    ended = Journal(tmp_path)
    ended.add_order("e-1")
    ended.add_recording(tmp_path / "rec")
    ended.close()
    ids, roots, done = read_journals(tmp_path)
    assert sorted(ids) == ["e-1", "r-1"]
    assert roots == [(tmp_path / "rec").resolve()]
    assert done == [ended.path]  # the running one stays until its follower stops
    running.close()
    assert sorted(read_journals(tmp_path)[2]) == sorted([ended.path, running.path])


def test_torn_and_unreadable_lines_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / LIVE_DIR
    folder.mkdir()
    (folder / "1-1-a.ids").write_bytes(b"o m-1\nzz\no bad/id\no m-2\no m-3-torn")
    (folder / ".2-2-b.tmp").write_bytes(b"")  # a follower that died while starting
    ids, roots, done = read_journals(tmp_path)
    assert ids == ["m-1", "m-2"] and roots == [] and len(done) == 1
    assert not (folder / ".2-2-b.tmp").exists()
    assert "torn last line" in caplog.text and "2 unreadable line(s)" in caplog.text


def test_a_full_disk_is_said_once_and_counted_never_raised_into_the_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    book = OrderBook()
    follower = OrderStore(tmp_path).follow(book)
    real = os.write

    def full(fd: int, data: bytes) -> int:
        if fd == follower.journal._fd:
            raise OSError(28, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    for i in range(3):
        book.apply(order_event({"id": f"m-{i}", "status": "pending"}, received_at_ns=i + 1))
    assert follower.failed == 3 and follower.ids == 0
    errors = [r for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(errors) == 1 and "failed=3" in repr(follower)
    assert "an OrderBook listener failed" not in caplog.text
    monkeypatch.setattr(os, "write", real)
    follower.stop()


def test_follow_refuses_what_it_cannot_follow(tmp_path: Path) -> None:
    store = OrderStore(tmp_path)
    with pytest.raises(InvalidRequest, match="OrderBook, a StreamSession or a Recorder"):
        store.follow(object())
    with pytest.raises(InvalidRequest, match="fsync_interval"):
        store.follow(OrderBook(), fsync_interval=-1)
    assert not (tmp_path / LIVE_DIR).exists() or not list((tmp_path / LIVE_DIR).iterdir())


# -- against the simulator ------------------------------------------------------------------


def test_an_order_book_feeds_the_store_its_market_orders(
    fresh_sim: Simulator, tmp_path: Path
) -> None:
    store = OrderStore(tmp_path / "store")
    with fresh_sim.client() as client:
        store.sync(client)
        before = len(store)

        async def follow_while_trading() -> list[str]:
            book = OrderBook(client, reconcile_interval=None)
            seen = asyncio.Event()
            placed: list[str] = []
            # the order just placed: a later state of the one before must not end the wait
            book.add_listener(lambda e: seen.set() if placed and e.order_id == placed[-1] else None)
            follower = store.follow(book)
            async with client.stream(queue_size=0) as session:
                await session.subscribe("watchOrders")
                task = asyncio.create_task(book.run(session))
                try:
                    for _ in range(2):
                        seen.clear()
                        order = fresh_sim.control.market_order(
                            symbol="BTC/BRL", side="buy", amount="0.001"
                        )
                        placed.append(order["id"])
                        await asyncio.wait_for(seen.wait(), 10)
                finally:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    follower.stop()
            assert follower.ids >= 2 and not follower.running
            return placed

        placed = client._run(follow_while_trading())
        result = store.sync(client)
    orders = store.frames().orders.set_index("id")
    assert set(placed) <= set(orders.index)
    assert set(orders.loc[placed, "_source"]) == {"live"}
    assert result.new_by_source.get("live") == 2 and len(store) == before + 2
    # the journal of the ended follower is gone once its ids are in the store
    assert list((tmp_path / "store" / LIVE_DIR).glob("*.ids")) == []


def test_a_stream_session_feeds_the_store(fresh_sim: Simulator, tmp_path: Path) -> None:
    store = OrderStore(tmp_path / "store")
    with fresh_sim.client() as client:

        async def follow() -> str:
            got = asyncio.Event()
            async with client.stream(queue_size=0) as session:
                follower = store.follow(session)
                session.add_callback(lambda e: got.set(), channels=["watchorders"])
                await session.subscribe("watchOrders")
                order = fresh_sim.control.market_order(symbol="ETH/BRL", side="sell", amount="0.01")
                await asyncio.wait_for(got.wait(), 10)
                follower.stop()
            return str(order["id"])

        oid = client._run(follow())
        result = store.sync(client, listing=False)
    assert result.new_by_source == {"live": 1}
    assert store.frames().orders.set_index("id").loc[oid, "_source"] == "live"


def test_a_followed_recorder_feeds_the_store_while_it_runs(
    fresh_sim: Simulator, tmp_path: Path
) -> None:
    market = sorted(fresh_sim.control.order_ids(type="market"))[:3]
    store = OrderStore(tmp_path / "store")
    with fresh_sim.client() as client:
        recorder = Recorder(client, tmp_path / "rec", channels=["watchOrders"])
        with store.follow(recorder) as follower:
            # not started yet: the folder does not exist, and the sync says so
            result = store.sync(client, listing=False)
            assert any("followed recording is gone" in w for w in result.warnings)
            write_order_recording(tmp_path / "rec", market, fresh_sim.profile)
            result = store.sync(client, listing=False)
            assert result.new_by_source == {"recording": 3}
            assert list((tmp_path / "store" / LIVE_DIR).glob("*.ids")) == [follower.journal.path]
        store.sync(client, listing=False)
        assert list((tmp_path / "store" / LIVE_DIR).glob("*.ids")) == []
    assert set(store.frames().orders.set_index("id").loc[market, "_source"]) == {"recording"}
