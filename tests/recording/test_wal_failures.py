"""Fault tests of the write-ahead log on a disk that fails: a failed append is cut back off
the segment (whole record or none), its messages are dropped, counted and named, every
acknowledged row reaches Parquet, and a segment with bad bytes is kept, never deleted."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from toolkit.recording._conversion import convert_segment
from toolkit.recording._read import read_recording
from toolkit.recording._rows import SESSION_CHANNEL, row_from_message
from toolkit.recording._wal import MAGIC, Row, Segment, encode_row, read_segment
from toolkit.recording._writer import RecordingWriter

T0 = 1_795_305_600 * 10**9
TEXT = (
    '{"channel":"watchticker","message":{"symbol":"BTC/BRL","bid":"1","ask":"2","last":"1",'
    '"timestamp":1,"seq":%d}}'
)


def _rows(n: int, start: int = 0) -> list[Row]:
    return [
        row_from_message(
            {"channel": "watchorders", "message": {"id": f"o{i}", "status": "OPEN"}},
            received_at_ns=T0 + i,
            connection_id="c1",
            seq=i,
        )
        for i in range(start, start + n)
    ]


class FailingDisk:
    """``os.write`` that, while ``failing`` is set, writes only ``keep`` bytes of a write
    to the watched descriptors (a short write), and fails the next one with ENOSPC: a disk
    that fills up mid-record. ``truncates`` records every ``os.ftruncate``, which fails
    when ``truncate_fails``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, watch: Callable[[int], bool]) -> None:
        self.watch = watch
        self.failing = False
        self.keep = 11
        self.failures = 0
        self.truncate_fails = False
        self.truncates: list[tuple[int, int]] = []
        self._short = False
        self._write = os.write
        self._ftruncate = os.ftruncate
        monkeypatch.setattr(os, "write", self.write)
        monkeypatch.setattr(os, "ftruncate", self.ftruncate)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.failing and self.watch(fd):
            if not self._short:
                self._short = True
                return self._write(fd, bytes(data[: self.keep]))  # the last bytes that fit
            self._short = False
            self.failures += 1
            raise OSError(errno.ENOSPC, "No space left on device")
        return self._write(fd, data)

    def ftruncate(self, fd: int, length: int) -> None:
        self.truncates.append((fd, length))
        if self.truncate_fails:
            raise OSError(errno.EIO, "Input/output error")
        self._ftruncate(fd, length)


def _in(folder: Path) -> Callable[[int], bool]:
    def watch(fd: int) -> bool:
        try:
            return Path(os.readlink(f"/proc/self/fd/{fd}")).parent == folder.resolve()
        except OSError:
            return False

    return watch


def test_a_failed_append_is_truncated_back_to_where_it_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seg = Segment(tmp_path / "a.wal")
    disk = FailingDisk(monkeypatch, lambda fd: fd == seg.fileno())
    rows = _rows(6)
    seg.write_rows(rows[:3])
    before = seg.size
    disk.failing = True
    with pytest.raises(OSError) as caught:
        seg.write_rows(rows[3:])
    assert caught.value.errno == errno.ENOSPC
    # the torn bytes are cut off before the error is raised: the record is absent
    assert disk.truncates == [(seg.fileno(), before)]
    assert seg.size == before == seg.path.stat().st_size
    assert not seg.broken
    disk.failing = False
    seg.write_rows(rows[3:])  # the disk has room again: appended whole, after intact ones
    seg.close()
    scan = read_segment(seg.path)
    assert scan.rows == rows and scan.ignored_bytes == 0


def test_a_failed_append_that_cannot_be_undone_breaks_the_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seg = Segment(tmp_path / "a.wal")
    disk = FailingDisk(monkeypatch, lambda fd: fd == seg.fileno())
    rows = _rows(4)
    seg.write_rows(rows[:2])
    disk.failing = disk.truncate_fails = True
    with pytest.raises(OSError):
        seg.write_rows(rows[2:])
    assert seg.broken and "broken" in repr(seg)
    disk.failing = disk.truncate_fails = False
    with pytest.raises(OSError, match="could not be undone"):
        seg.write_rows(rows[2:])  # never a record after the torn bytes
    seg.close()
    scan = read_segment(seg.path)
    assert scan.rows == rows[:2] and scan.ignored_bytes == disk.keep


@pytest.mark.parametrize("truncate_fails", [False, True], ids=["truncated", "broken"])
def test_enospc_mid_chunk_loses_no_acknowledged_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, truncate_fails: bool
) -> None:
    root = tmp_path / "rec"
    writer = RecordingWriter(root, max_pending_rows=16)
    writer.open()
    disk = FailingDisk(monkeypatch, _in(root / "_wal"))
    disk.truncate_fails = truncate_fails
    offered = 0
    lost_at: list[int] = []
    for seq in range(1, 401):
        # the disk is full for a while: appends of chunks fail part way through
        disk.failing = 100 <= seq < 150
        failures = disk.failures
        # the receiving path never raises: the stream would only log it
        # a microsecond apart: the unit of the recorded times
        assert writer.add_raw(TEXT % seq, T0 + seq * 1000, "c1", seq)
        offered += 1
        if disk.failures > failures:
            lost_at.append(seq)
        if seq % 50 == 0 and not disk.failing:
            writer.flush()
    writer.flush()
    acknowledged = writer.stats.flushed_rows
    stats = writer.stats
    assert lost_at and disk.truncates
    assert stats.dropped > 0 and stats.messages + stats.dropped == offered
    assert writer.error is not None and writer.error.errno == errno.ENOSPC
    assert str(root / "_wal") in str(writer.error.filename)
    # close writes everything, then says the recording is not whole
    with pytest.raises(OSError) as caught:
        writer.close()
    assert caught.value is writer.error
    data = read_recording(root, "watchticker")
    session = read_recording(root, SESSION_CHANNEL)
    # every acknowledged row is in Parquet, each once; only the counted drops are missing
    assert acknowledged == stats.messages + len(session)
    assert len(data) == stats.messages and data["seq"].is_unique
    assert list((root / "_wal").glob("*.wal")) == []
    assert list(root.rglob("*.corrupt")) == []
    # the loss is recorded as one span naming the error, with the exact count
    assert session["kind"].tolist() == ["dropped"]
    detail = session["detail"].iloc[0]
    assert detail.startswith(f"{stats.dropped} messages dropped") and "No space left" in detail
    missing = sorted(set(range(1, offered + 1)) - set(data["seq"]))
    assert len(missing) == stats.dropped
    assert session["gap_start"].iloc[0].value == T0 + missing[0] * 1000
    assert session["gap_end"].iloc[0].value == T0 + missing[-1] * 1000


def test_the_first_failure_and_the_recovery_are_logged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    writer = RecordingWriter(tmp_path, max_pending_rows=4)
    writer.open()
    disk = FailingDisk(monkeypatch, _in(tmp_path / "_wal"))
    disk.failing = True
    with caplog.at_level(logging.WARNING, "toolkit.recording"):
        for seq in range(1, 21):
            writer.add_raw(TEXT % seq, T0 + seq, "c1", seq)
        disk.failing = False
        for seq in range(21, 31):
            writer.add_raw(TEXT % seq, T0 + seq, "c1", seq)
    texts = [r.getMessage() for r in caplog.records]
    assert len(texts) == 2, texts
    assert "failed (No space left on device)" in texts[0]
    assert f"works again; {writer.stats.dropped} messages were dropped" in texts[1]
    with pytest.raises(OSError):
        writer.close()


def _segment_with(tmp_path: Path, *parts: bytes) -> Path:
    path = tmp_path / "_wal" / "0001-1-000000.wal"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(MAGIC + b"".join(parts))
    return path


def test_a_segment_with_bad_bytes_before_its_end_is_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, after = _rows(3), _rows(3, start=3)
    torn = encode_row(_rows(1, start=9)[0])[:13]  # what a failed append used to leave
    good = b"".join(encode_row(r) for r in first)
    path = _segment_with(tmp_path, good, torn, *(encode_row(r) for r in after))
    size = path.stat().st_size
    with caplog.at_level(logging.WARNING, "toolkit.recording"):
        files = convert_segment(tmp_path, path)
    assert sum(pq.read_table(f).num_rows for f in files) == 3  # the rows before it
    assert not path.exists()
    kept = path.with_name(path.name + ".corrupt")
    assert kept.read_bytes()[:8] == MAGIC and kept.stat().st_size == size
    bad = size - len(MAGIC) - len(good)
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert f"has {bad} bytes that are not intact records" in caplog.records[0].getMessage()
    # a recovery does not take it for a segment to convert again
    RecordingWriter(tmp_path).open()
    assert kept.exists()


def test_an_intact_record_that_does_not_decode_keeps_the_segment(tmp_path: Path) -> None:
    import struct
    import zlib

    payload = b"\x01" * 5  # a checksum that matches a payload no row decodes from
    bogus = struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
    path = _segment_with(tmp_path, encode_row(_rows(1)[0]), bogus)
    files = convert_segment(tmp_path, path)
    assert sum(pq.read_table(f).num_rows for f in files) == 1
    assert path.with_name(path.name + ".corrupt").exists()


def test_a_last_record_cut_short_by_a_crash_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rows = _rows(3)
    path = _segment_with(tmp_path, *(encode_row(r) for r in rows), encode_row(rows[0])[:20])
    with caplog.at_level(logging.WARNING, "toolkit.recording"):
        files = convert_segment(tmp_path, path)
    assert sum(pq.read_table(f).num_rows for f in files) == 3
    assert not path.exists() and list(tmp_path.rglob("*.corrupt")) == []
    assert "ends with 20 bytes of a record cut short" in caplog.records[0].getMessage()


def test_a_parquet_writer_failing_as_it_starts_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _segment_with(tmp_path, *(encode_row(r) for r in _rows(3)))

    def full_disk(where: Path, *args: object, **kwargs: object) -> None:
        Path(where).touch()  # the file is made, then writing its header fails
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "ParquetWriter", full_disk)
    with pytest.raises(OSError):
        convert_segment(tmp_path, path)
    assert list(tmp_path.rglob("*.tmp")) == []
    assert path.exists()  # not converted: kept for the next try


def test_the_converter_process_passes_its_warnings_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio

    from toolkit.recording._convert import ConverterProcess
    from toolkit.recording._writer import ClosedSegment

    writer = RecordingWriter(tmp_path)
    writer.open(warm=False)
    torn = encode_row(_rows(1, start=9)[0])[:13]
    path = _segment_with(tmp_path, encode_row(_rows(1)[0]), torn, encode_row(_rows(1)[0]))

    async def main() -> None:
        process = ConverterProcess(writer)
        await process.start()
        assert process.submit(ClosedSegment(path, path.stat().st_size))
        await process.finish()

    with caplog.at_level(logging.WARNING, "toolkit.recording"):
        asyncio.run(main())
    writer.close()
    assert path.with_name(path.name + ".corrupt").exists()
    assert any("not intact records" in r.getMessage() for r in caplog.records)
