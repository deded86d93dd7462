"""A Recorder against the simulator on loopback compacts the closed days of its root on its
own thread while it records (fake clock): at its start the day a previous run left, then
the day that closes while it runs, each into one file with every row once; the messages
received meanwhile are all recorded, none dropped nor doubled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from _tick_recording import HOUR, T0, content, write_tick_files

from toolkit.recording import read_recording
from toolkit.recording._compact import GRACE_NS
from toolkit.recording._recorder import Recorder
from toolkit.recording._stats import RecorderStats
from toolkit.sim import Simulator

DAY = 24 * HOUR
SECOND = 10**9


def _files(root: Path, date: str) -> list[Path]:
    return sorted(root.glob(f"channel=watchticker/date={date}/*.parquet"))


@pytest.mark.timeout(300)
def test_a_running_recorder_compacts_each_day_once_over_and_records_throughout(
    sim: Simulator, tmp_path: Path
) -> None:
    # a previous run's 60 s files: the day before (over) and the day the clock is in
    write_tick_files(tmp_path, T0 - DAY, 10, 5, 12 * SECOND)
    write_tick_files(tmp_path, T0, 10, 5, 12 * SECOND)
    old = {
        date: content(read_recording(tmp_path, start=start, end=start + DAY).to_dict("records"))
        for date, start in (("2026-11-21", T0 - DAY), ("2026-11-22", T0))
    }
    now = [T0 + DAY - 60 * SECOND]  # 2026-11-22 23:59, while the live rows are of today
    changed = asyncio.Event()
    moves = 40

    def status(_: RecorderStats) -> None:
        changed.set()

    async def until(cond: Callable[[], bool], what: str, timeout: float = 120) -> None:
        # woken at every flush; generous, as it must hold with both cores busy
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not cond():
            changed.clear()
            try:
                await asyncio.wait_for(changed.wait(), timeout=max(0, deadline - loop.time()))
            except TimeoutError:
                raise AssertionError(f"{what}: not within {timeout} s") from None

    async def move(n: int) -> None:
        for i in range(n):
            await asyncio.to_thread(sim.control.move_price, "BTC/BRL", 500_000 + i)

    async def main() -> RecorderStats:
        rec = Recorder(
            sim.client(),
            tmp_path,
            channels=["watchTicker:BTC/BRL"],
            flush_interval=0.05,
            rotate_interval=0.2,
            on_status=status,
            clock_ns=lambda: now[0],
        )
        async with rec:
            await until(lambda: rec.stats.compacted == 1, "the day before compacted at start")
            assert len(_files(tmp_path, "2026-11-22")) == 10  # still open
            await move(moves // 2)
            now[0] = T0 + DAY + GRACE_NS  # the day is over, the grace too
            mover = asyncio.ensure_future(move(moves // 2))  # while it compacts
            await until(lambda: rec.stats.compacted == 2, "the day compacted once over")
            await mover
            await until(lambda: rec.stats.messages >= moves, "every move received")
        # started again after its stop: what the stop found, and its start compacts again
        write_tick_files(tmp_path, T0 - 2 * DAY, 10, 5, 12 * SECOND)
        async with rec:
            await until(lambda: rec.stats.compacted == 3, "a day left between two runs")
        return rec.stats

    stats = asyncio.run(main())
    assert len(_files(tmp_path, "2026-11-20")) == 1
    for date, rows in old.items():
        assert len(_files(tmp_path, date)) == 1, date
        start = T0 - DAY if date == "2026-11-21" else T0
        got = read_recording(tmp_path, start=start, end=start + DAY)
        assert content(got.to_dict("records")) == rows, date
    # today's rows: every message received, once (no drop, no double)
    live = read_recording(tmp_path, "watchticker", start=T0 + 2 * DAY)
    assert stats.dropped == 0 and len(live) == stats.messages
    assert not live.duplicated(["connection_id", "seq"]).any()
