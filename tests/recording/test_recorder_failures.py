"""Fault tests of the Recorder: a disk that fills up while it records live from the simulator
ends the run with the error (never a clean success) after every acknowledged row reached
Parquet; bad settings are refused before anything is written."""

from __future__ import annotations

import asyncio
import errno
import logging
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolkit.errors import InvalidRequest
from toolkit.recording._read import read_recording
from toolkit.recording._recorder import Recorder
from toolkit.sim import Simulator


@pytest.fixture(scope="module")
def busy_sim() -> Iterator[Simulator]:
    with Simulator(seed=3, engine=True, tick_interval_s=0.01, order_interval_s=0.2) as s:
        yield s


async def _until(cond: Callable[[], bool], timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


class FullWal:
    """``os.write`` that fails with ENOSPC after a short write, for files in ``folder``,
    while ``full`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
        self.folder = folder.resolve()
        self.full = False
        self.failures = 0
        self._short = False
        self._write = os.write
        monkeypatch.setattr(os, "write", self.write)

    def _watched(self, fd: int) -> bool:
        try:
            return Path(os.readlink(f"/proc/self/fd/{fd}")).parent == self.folder
        except OSError:
            return False

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.full and self._watched(fd):
            if not self._short:
                self._short = True
                return self._write(fd, bytes(data[:5]))
            self._short = False
            self.failures += 1
            raise OSError(errno.ENOSPC, "No space left on device")
        return self._write(fd, data)


def test_a_full_disk_ends_the_run_with_the_error_and_keeps_every_saved_row(
    busy_sim: Simulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = busy_sim.client()
    disk = FullWal(monkeypatch, tmp_path / "_wal")
    rec = Recorder(
        client,
        tmp_path,
        channels=["watchTicker:BTC/BRL", "watchTickers"],
        flush_interval=0.05,
        max_pending_rows=4,
        converter="thread",
    )

    async def main() -> None:
        task = rec.start()
        await _until(lambda: rec.stats.flushed_rows >= 20)
        disk.full = True
        await _until(lambda: disk.failures >= 1)  # a chunk failed on the receiving path
        disk.full = False  # the disk has room again a moment later
        with pytest.raises(OSError) as caught:
            await task
        assert caught.value.errno == errno.ENOSPC
        assert str(tmp_path / "_wal") in str(caught.value.filename)

    with caplog.at_level(logging.WARNING):
        asyncio.run(main())
    client.close()
    stats = rec.stats
    assert stats.dropped > 0
    # the stream never saw the error as a failing callback of its own
    assert not [r for r in caplog.records if "callback failed" in r.getMessage()]
    df = read_recording(tmp_path)
    data = df[df["channel"] != "_session"]
    # every acknowledged row is in Parquet; only the counted drops are missing
    assert len(df) == stats.flushed_rows
    assert len(data) == stats.messages
    assert not data.duplicated(["connection_id", "seq"]).any()
    dropped = df[df["kind"] == "dropped"]
    assert len(dropped) == 1 and "No space left on device" in dropped["detail"].iloc[0]
    assert dropped["detail"].iloc[0].startswith(f"{stats.dropped} messages dropped")
    assert list((tmp_path / "_wal").glob("*.wal")) == []


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("flush_interval", 0),
        ("flush_interval", -1.0),
        ("flush_interval", math.nan),
        ("flush_interval", math.inf),
        ("rotate_interval", math.nan),
        ("rotate_interval", 0.0),
        ("rotate_bytes", 0),
        ("max_pending_rows", 0),
        ("converter", "fork"),
    ],
)
def test_bad_settings_are_refused_by_name(tmp_path: Path, setting: str, value: object) -> None:
    with pytest.raises(InvalidRequest, match=setting):
        Recorder(object(), tmp_path, channels=["watchOrders"], **{setting: value})  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("duration", [0, -1.0, math.nan, math.inf])
def test_a_bad_duration_is_refused_before_anything_is_written(
    tmp_path: Path, duration: float
) -> None:
    rec = Recorder(object(), tmp_path, channels=["watchOrders"])
    with pytest.raises(InvalidRequest, match="duration"):
        asyncio.run(rec.run(duration=duration))
    assert list(tmp_path.iterdir()) == []
