"""Tests of the Recorder against the real simulator on loopback: live channels into
Parquet, forced drops recorded as gap rows, notebook-style start/stop, DuckDB read-back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from toolkit.errors import InvalidRequest
from toolkit.recording._read import read_recording
from toolkit.recording._recorder import Recorder
from toolkit.recording._writer import RecorderBusy
from toolkit.sim import Simulator
from toolkit.stream._channels import Backoff


@pytest.fixture(scope="module")
def busy_sim() -> Iterator[Simulator]:
    """A simulator whose engine moves prices fast and places orders often."""
    with Simulator(
        seed=5, engine=True, tick_interval_s=0.02, order_interval_s=0.2, history_orders=30
    ) as s:
        yield s


async def _until(
    cond: Callable[[], bool], what: str, timeout: float = 60.0, every: float = 0.02
) -> None:
    """Wait for a condition of what the recorder did or received; generous, as it must hold
    with both cores taken by other work."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(every)


LIVE_CHANNELS = {"watchticker", "watchtickers", "watchorders"}


def _channels(seen: list[tuple[str, str]], but: str | None = None) -> set[str]:
    """The channels of the data messages ``seen`` (channel, connection id), but those of
    connection ``but``."""
    return {channel for channel, conn in seen if conn != but}


@pytest.mark.timeout(300)  # the stop converts what the converter has not yet (under load)
def test_live_recording_with_a_forced_drop_has_a_gap_row(
    busy_sim: Simulator, tmp_path: Path
) -> None:
    client = busy_sim.client()

    async def main() -> None:
        rec = Recorder(
            client,
            tmp_path,
            channels=["watchOrders", "watchTicker:BTC/BRL", "watchTickers", "watchBalance"],
            flush_interval=0.1,
            rotate_interval=0.3,
            stream_options={"backoff": Backoff(initial=0.01, maximum=0.1)},
        )
        rec.start()
        assert rec.running
        await rec.wait_subscribed(timeout=120)  # every channel, before the drop
        # what the recorder receives, as it receives it (its Parquet files lag behind
        # under load: the converter can take much longer than the recording)
        seen: list[tuple[str, str]] = []
        rec._session.add_raw_callback(
            lambda text, _at, conn, _seq: seen.append((json.loads(text)["channel"].lower(), conn))
        )
        # data of every channel before the drop (the engine places an order every 0.2 s)
        await _until(lambda: _channels(seen) >= LIVE_CHANNELS, "every channel before the drop")
        first = seen[-1][1]
        # (the control call blocks: off the loop, which keeps receiving meanwhile)
        assert await asyncio.to_thread(busy_sim.control.drop_connections) >= 1
        await _until(
            lambda: _channels(seen, but=first) >= LIVE_CHANNELS, "every channel after the gap"
        )
        stats = await rec.stop()
        assert not rec.running
        assert stats.files >= 2 and stats.dropped == 0

    asyncio.run(main())
    client.close()

    df = read_recording(tmp_path)
    session = df[df["channel"] == "_session"]
    kinds = session["kind"].tolist()
    assert kinds[0] == "connected"
    assert kinds.count("subscribed") == 4
    for kind in ("disconnected", "resubscribed", "gap"):
        assert kind in kinds
    gap = session[session["kind"] == "gap"].iloc[0]
    assert gap["gap_start"] < gap["gap_end"]
    data = df[df["channel"] != "_session"]
    assert set(data["channel"]) >= {"watchticker", "watchtickers", "watchorders"}
    # data on both sides of the gap, from two connections
    assert data["connection_id"].nunique() == 2
    assert (data["received_at"] > gap["gap_end"]).any()
    assert (data["received_at"] < gap["gap_start"]).any()
    ticks = data[data["channel"] == "watchticker"]
    assert (ticks["symbol"] == "BTC/BRL").all() and ticks["bid"].notna().all()
    orders = data[data["channel"] == "watchorders"]
    assert orders["order_id"].notna().all() and orders["updated_at"].notna().all()
    # no secret reaches the recording
    assert not df["raw"].fillna("").str.contains("demo-secret").any()
    assert not df["detail"].fillna("").str.contains(r"token=[^*]", regex=True).any()
    # per connection, sequence numbers never repeat
    assert not df.duplicated(["connection_id", "seq"]).any()
    # every file is complete, the write-ahead log is empty, DuckDB agrees
    for path in tmp_path.rglob("*.parquet"):
        pq.read_table(path)
    assert list((tmp_path / "_wal").glob("*.wal")) == []
    rel = duckdb.sql(
        f"SELECT channel, count(*) AS n FROM read_parquet('{tmp_path}/*/*/*.parquet', "
        "hive_partitioning=true) GROUP BY channel ORDER BY channel"
    )
    assert rel is not None
    rows = rel.fetchall()
    assert rows == sorted(df.groupby("channel").size().items())


def test_run_for_a_duration_returns_the_final_stats(busy_sim: Simulator, tmp_path: Path) -> None:
    client = busy_sim.client()
    seen: list[int] = []
    rec = Recorder(
        client,
        tmp_path,
        channels=["watchTicker:ETH/BRL"],
        flush_interval=0.1,
        on_status=lambda s: seen.append(s.flushed_rows),
    )
    stats = asyncio.run(rec.run(duration=0.6))
    client.close()
    assert stats.messages > 0 and seen and seen == sorted(seen)
    df = read_recording(tmp_path, "watchticker")
    assert len(df) == stats.messages
    assert set(df["symbol"]) == {"ETH/BRL"}


def test_bad_channel_spec_fails_before_connecting(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest):
        Recorder(object(), tmp_path, channels=["watchTicker"])
    with pytest.raises(InvalidRequest):
        Recorder(object(), tmp_path, channels=["watchEverything"])
    assert not tmp_path.joinpath("_wal").exists()


def test_an_empty_root_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for root in ("", " "):
        with pytest.raises(InvalidRequest, match="root is empty"):
            Recorder(object(), root, channels=["watchOrders"])
    assert list(tmp_path.iterdir()) == []


def test_the_thread_converter_records_the_same(busy_sim: Simulator, tmp_path: Path) -> None:
    client = busy_sim.client()
    rec = Recorder(
        client,
        tmp_path,
        channels=["watchTicker:BTC/BRL"],
        flush_interval=0.05,
        rotate_interval=0.1,
        converter="thread",
    )
    stats = asyncio.run(rec.run(duration=0.6))
    client.close()
    assert stats.messages > 0 and stats.files >= 2 and stats.backlog_bytes == 0
    assert len(read_recording(tmp_path, "watchticker")) == stats.messages
    assert list((tmp_path / "_wal").glob("*.wal")) == []


def test_two_recorders_cannot_share_a_root(busy_sim: Simulator, tmp_path: Path) -> None:
    client = busy_sim.client()

    async def main() -> None:
        first = Recorder(client, tmp_path, channels=["watchOrders"], flush_interval=0.1)
        first.start()
        await _until(lambda: (tmp_path / "_wal" / "LOCK").exists(), "the lock")
        await _until(lambda: any((tmp_path / "_wal").glob("*.wal")), "a write-ahead segment")
        second = Recorder(client, tmp_path, channels=["watchOrders"])
        with pytest.raises(RecorderBusy):
            await second.run(duration=1)
        await first.stop()

    asyncio.run(main())
    client.close()


def test_refused_subscription_ends_the_run_with_the_error(
    busy_sim: Simulator, tmp_path: Path
) -> None:
    from toolkit.errors import PermissionDenied

    client = busy_sim.client("market-only", "market-only-secret")
    rec = Recorder(client, tmp_path, channels=["watchTickers", "watchOrders"])
    with pytest.raises(PermissionDenied):
        asyncio.run(rec.run(duration=5))
    client.close()
    # what arrived before the refusal is still written
    assert list((tmp_path / "_wal").glob("*.wal")) == []
    assert "subscribed" in read_recording(tmp_path, "_session")["kind"].tolist()
