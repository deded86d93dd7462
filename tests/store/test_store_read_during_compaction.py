"""Readers of the store while a sync writes and compacts it: ``frames()``, ``coverage()``
and ``len()`` never meet a vanished part file and see every order exactly once.

The compaction is paused between its steps (the seam ``toolkit.store._files._step``), and
so is the reader between listing the files and opening them, so each pair of moments is
tried, without timing; then the same against the simulator with syncs running."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_store_compaction_kill import rows as _rows

from toolkit.client import Client
from toolkit.sim import Simulator
from toolkit.store import OrderStore
from toolkit.store import _files as files_module
from toolkit.store._files import StoreFiles

MONTH = "2026-11"
OTHER = "2026-10"
T0_MS = 1_795_305_600_000  # 2026-11-22T00:00:00Z
OTHER_MS = 1_792_800_000_000  # 2026-10-24
PARTS = 4
PER_PART = 3
WAIT_S = 60.0
#: the compaction's pauses: planned, merged, one per old part removed; then it has ended
STEPS = 2 + PARTS


def _store(root: Path) -> set[str]:
    """A store of PARTS small parts in MONTH and one in OTHER; the ids it holds."""
    files = StoreFiles(root)
    for p in range(PARTS):
        files.add_part(MONTH, _rows(p * PER_PART, PER_PART))
    files.add_part(OTHER, _rows(900, 2, OTHER_MS))
    return {f"o-{i:03d}" for i in range(PARTS * PER_PART)} | {"o-900", "o-901"}


class PausedCompaction:
    """``StoreFiles.compact`` run in a thread that stops after each of its steps until
    :meth:`advance` lets it take the next one."""

    def __init__(self, files: StoreFiles) -> None:
        self.reached: queue.Queue[str] = queue.Queue()
        self._go = threading.Semaphore(0)
        self.failed: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(files,), daemon=True)

    def hook(self, where: str) -> None:
        if where.startswith("compact") and threading.current_thread() is self.thread:
            self.reached.put(where)
            assert self._go.acquire(timeout=WAIT_S), "the test never let the compaction on"

    def _run(self, files: StoreFiles) -> None:
        try:
            assert files.compact(MONTH, 1)
        except BaseException as exc:  # reported by the test
            self.failed.append(exc)
        finally:
            self.reached.put("ended")

    def start(self) -> str:
        self.thread.start()
        return self.reached.get(timeout=WAIT_S)

    def advance(self) -> str:
        self._go.release()
        return self.reached.get(timeout=WAIT_S)

    def finish(self) -> None:
        for _ in range(STEPS + 1):
            self._go.release()
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive() and not self.failed, self.failed


def _readers() -> dict[str, Callable[[OrderStore], list[str]]]:
    """Each way to read the store, as the order ids it saw (one per row)."""
    return {
        "frames": lambda store: store.frames().orders["id"].tolist(),
        "coverage": lambda store: ["?"] * store.coverage()["orders"],
        "len": lambda store: ["?"] * len(store),
        "frames since": lambda store: store.frames(since=T0_MS - 86_400_000).orders["id"].tolist(),
    }


@pytest.mark.parametrize("reader", list(_readers()))
def test_a_read_listing_and_opening_at_any_two_steps_of_a_compaction_sees_each_order_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    read = _readers()[reader]
    rounds = 0
    # the reader lists the files after step `listed` and opens them after step `opened`
    for listed in range(1, STEPS + 2):
        for opened in range(listed, STEPS + 2):
            root = tmp_path / f"{listed}-{opened}"
            want = _store(root)
            if reader == "frames since":
                want = {i for i in want if not i.startswith("o-9")}
            store = OrderStore(root)
            compaction = PausedCompaction(StoreFiles(root))
            first = [True]

            def hook(
                where: str,
                compaction: PausedCompaction = compaction,
                first: list[bool] = first,
                steps: int = opened - listed,
            ) -> None:
                compaction.hook(where)
                if where == "snapshot listed" and first[0]:
                    first[0] = False
                    for _ in range(steps):
                        compaction.advance()

            monkeypatch.setattr(files_module, "_step", hook)
            at = compaction.start()
            for _ in range(listed - 1):
                at = compaction.advance()
            assert (at == "ended") == (listed == STEPS + 1), at
            seen = read(store)
            compaction.finish()
            monkeypatch.undo()
            if reader in ("frames", "frames since"):
                assert sorted(seen) == sorted(want), (listed, opened)
            else:
                assert len(seen) == len(want), (listed, opened)
            assert len(StoreFiles(root).month_files([MONTH])) == 1
            rounds += 1
    assert rounds == (STEPS + 1) * (STEPS + 2) // 2


def test_a_read_that_keeps_losing_its_files_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose files change under every listing (never in practice: a compaction
    needs many syncs' parts) ends the read with a ToolkitError, not a raw OSError."""
    from toolkit.errors import ToolkitError

    _store(tmp_path)
    files = StoreFiles(tmp_path)
    n = [0]

    def hook(where: str) -> None:
        if where == "snapshot listed":
            n[0] += 1
            files.add_part(MONTH, _rows(500 + n[0], 1))

    monkeypatch.setattr(files_module, "_step", hook)
    with pytest.raises(ToolkitError, match="changed under this read"):
        files.read(["id"])
    assert n[0] == files_module.SNAPSHOT_TRIES


# -- against the simulator -------------------------------------------------------------------


class Reader:
    """A thread reading the store over and over until stopped; each compaction step of
    the sync waits for a read begun after it to end, so reads meet every step."""

    def __init__(self, store: OrderStore) -> None:
        self.store = store
        self.reads = 0
        self.seen: list[tuple[list[str], int, int]] = []
        self.errors: list[BaseException] = []
        self._done = threading.Condition()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                ids = self.store.frames().orders["id"].tolist()
                counted = (self.store.coverage()["orders"], len(self.store))
            except BaseException as exc:
                self.errors.append(exc)
                return
            with self._done:
                self.seen.append((ids, *counted))
                self.reads += 1
                self._done.notify_all()

    def hook(self, where: str) -> None:
        if not where.startswith("compact") or threading.current_thread() is self.thread:
            return
        with self._done:
            target = self.reads + 2  # one read begun after this step, ended
            assert self._done.wait_for(
                lambda: self.reads >= target or bool(self.errors), timeout=WAIT_S
            )

    def __enter__(self) -> Reader:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join(WAIT_S)


@pytest.fixture
def client(fresh_sim: Simulator) -> Iterator[Client]:
    with fresh_sim.client() as client:
        yield client


def test_reads_while_syncs_compact_the_store_see_every_order_once(
    fresh_sim: Simulator, client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.store import _sync

    monkeypatch.setattr(_sync, "MAX_FILES_PER_MONTH", 2)  # a compaction every sync
    store = OrderStore(tmp_path)
    store.sync(client, chunk=3)
    before = set(store.frames().orders["id"])
    assert before
    rounds = 4
    compactions = 0
    for r in range(rounds):
        market = [
            fresh_sim.control.market_order(symbol="BTC/BRL", side="buy", amount="0.001")["id"]
            for _ in range(7)
        ]
        with Reader(OrderStore(tmp_path)) as reader:
            steps: list[str] = []

            def hook(where: str, reader: Reader = reader, steps: list[str] = steps) -> None:
                if where.startswith("compact"):
                    steps.append(where)
                reader.hook(where)

            monkeypatch.setattr(files_module, "_step", hook)
            store.sync(client, ids=market, chunk=2)
            monkeypatch.setattr(files_module, "_step", lambda where: None)
        assert not reader.errors, reader.errors
        compactions += steps.count("compact merged")
        after = before | set(market)
        assert set(store.frames().orders["id"]) == after
        for ids, covered, length in reader.seen:
            assert len(ids) == len(set(ids)), r  # never an order twice
            assert before <= set(ids) <= after, r  # never one missed
            assert len(before) <= covered <= len(after) and len(before) <= length <= len(after)
        assert reader.reads >= len(steps)
        before = after
    assert compactions >= rounds
