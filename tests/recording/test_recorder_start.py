"""The recorder's start (issue #25): it receives from the moment it connects, the converter
process starting beside it; what arrives before the converter is ready waits on disk and is
converted later, nothing lost; ``run(duration=)`` counts from the subscription. The
converter is made slow with a gate on ``ConverterProcess.start`` (the simulator on loopback
is real)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolkit.recording._convert import ConverterProcess
from toolkit.recording._read import read_recording
from toolkit.recording._recorder import Recorder
from toolkit.recording._writer import RecordingWriter
from toolkit.sim import Simulator
from toolkit.stream._session import StreamSession

#: generous: these hold with both cores taken by other work
WAIT = 60.0


async def _until(cond: Callable[[], bool], what: str) -> None:
    """Wait for a condition of the recorder (its counters have no event of their own)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"not within {WAIT} s: {what}")
        await asyncio.sleep(0.02)


class Gate:
    """Holds ``ConverterProcess.start`` until ``open``; ``entered`` once it was called."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        real = ConverterProcess.start

        async def start(process: ConverterProcess, *args: Any, **kwargs: Any) -> None:
            self.entered.set()
            await self.gate.wait()
            await real(process, *args, **kwargs)

        monkeypatch.setattr(ConverterProcess, "start", start)

    def open(self) -> None:
        self.gate.set()


async def _order(sim: Simulator) -> str:
    order = await asyncio.to_thread(
        sim.control.market_order, symbol="BTC/BRL", side="buy", amount="0.001"
    )
    return str(order["id"])


def _check_everything_written(root: Path, messages: int) -> None:
    assert list((root / "_wal").glob("*.wal")) == []
    df = read_recording(root)
    assert (df["channel"] != "_session").sum() == messages


def test_subscribed_and_recording_while_the_converter_is_still_starting(
    fresh_sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main(client: object) -> tuple[str, Any]:
        gate = Gate(monkeypatch)
        # segments roll every 0.1 s: some close while the converter is not there yet
        rec = Recorder(
            client, tmp_path, channels=["watchOrders"], flush_interval=0.05, rotate_interval=0.1
        )
        rec.start()
        await rec.wait_subscribed(timeout=WAIT)
        oid = await _order(fresh_sim)
        # its three notifications (pending, executed, closed), in a closed segment
        await _until(lambda: rec.stats.messages >= 3, "3 notifications received")
        await _until(lambda: len(rec._waiting) >= 1, "a segment waits for the converter")
        assert not gate.gate.is_set() and gate.entered.is_set() and rec._process is None
        gate.open()  # the converter gets ready, and converts what waited
        await _until(lambda: rec._process is not None, "the converter is ready")
        await _until(lambda: not rec._waiting, "the waiting segments are handed over")
        stats = await rec.stop()
        return oid, stats

    with fresh_sim.client() as client:
        oid, stats = client._run(main(client))
    assert stats.dropped == 0 and stats.messages >= 3
    assert oid in set(read_recording(tmp_path, "watchorders")["order_id"])
    _check_everything_written(tmp_path, stats.messages)


def test_stopped_before_the_converter_is_ready_converts_in_process(
    fresh_sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main(client: object) -> tuple[str, Any]:
        gate = Gate(monkeypatch)  # never opened: the converter never gets ready
        rec = Recorder(
            client, tmp_path, channels=["watchOrders"], flush_interval=0.05, rotate_interval=0.1
        )
        rec.start()
        await rec.wait_subscribed(timeout=WAIT)
        oid = await _order(fresh_sim)
        await _until(lambda: rec.stats.messages >= 3, "3 notifications received")
        await gate.entered.wait()
        stats = await rec.stop()
        assert rec._process is None
        return oid, stats

    with fresh_sim.client() as client:
        oid, stats = client._run(main(client))
    assert stats.dropped == 0
    assert oid in set(read_recording(tmp_path, "watchorders")["order_id"])
    _check_everything_written(tmp_path, stats.messages)


def test_a_crash_s_leftovers_wait_for_the_converter_not_the_subscription(
    fresh_sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashed = RecordingWriter(tmp_path)
    crashed.open()
    crashed.add_raw('{"channel":"watchorders","message":{"id":"left-1"}}', 1, "c0", 1)
    crashed.flush()
    leftover = sorted((tmp_path / "_wal").glob("*.wal"))[0]
    crashed._unlock()  # the dead process's lock goes with it

    async def main(client: object) -> Any:
        gate = Gate(monkeypatch)
        rec = Recorder(client, tmp_path, channels=["watchOrders"])
        rec.start()
        await rec.wait_subscribed(timeout=WAIT)
        assert leftover.exists()  # not converted before subscribing
        gate.open()
        await _until(lambda: not leftover.exists(), "the leftover is converted")
        return await rec.stop()

    with fresh_sim.client() as client:
        stats = client._run(main(client))
    assert stats.recovered >= 1
    assert "left-1" in set(read_recording(tmp_path, "watchorders")["order_id"])


def test_run_for_a_duration_counts_from_the_subscription(
    fresh_sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subscription held back well past the duration: the run still records for the
    whole duration once subscribed."""
    held = asyncio.Event()
    real = StreamSession.subscribe

    async def subscribe(session: StreamSession, channel: str, **data: Any) -> str:
        await held.wait()
        return await real(session, channel, **data)

    monkeypatch.setattr(StreamSession, "subscribe", subscribe)

    async def main(client: object) -> Any:
        rec = Recorder(client, tmp_path, channels=["watchOrders"], converter="thread")
        task = asyncio.ensure_future(rec.run(duration=0.5))
        done, _ = await asyncio.wait({task}, timeout=2.0)  # 4 durations, unsubscribed
        assert not done, "the duration ran out before the subscription"
        held.set()
        await rec.wait_subscribed(timeout=WAIT)
        await _order(fresh_sim)
        return await asyncio.wait_for(task, WAIT)

    with fresh_sim.client() as client:
        stats = client._run(main(client))
    assert "subscribed" in read_recording(tmp_path, "_session")["kind"].tolist()
    _check_everything_written(tmp_path, stats.messages)


def test_async_with_enters_subscribed_and_stop_after_records_meanwhile(
    fresh_sim: Simulator, tmp_path: Path
) -> None:
    async def main(client: object) -> tuple[str, Any]:
        async with Recorder(client, tmp_path, channels=["watchOrders"]) as rec:
            assert rec._subscribed.is_set() and rec.running
            oid = await _order(fresh_sim)
            await _until(lambda: rec.stats.messages >= 3, "3 notifications received")
        assert not rec.running
        # stop(after=): it records until then, by itself
        again = Recorder(client, tmp_path / "again", channels=["watchOrders"])
        again.start()
        await again.wait_subscribed(timeout=WAIT)
        stopping = again.stop(after=0.3)
        stats = await asyncio.wait_for(stopping, WAIT)
        assert not again.running
        return oid, stats

    with fresh_sim.client() as client:
        oid, stats = client._run(main(client))
    assert oid in set(read_recording(tmp_path, "watchorders")["order_id"])
    _check_everything_written(tmp_path / "again", stats.messages)
    assert "subscribed" in read_recording(tmp_path / "again", "_session")["kind"].tolist()
