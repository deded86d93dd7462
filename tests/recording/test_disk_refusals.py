"""A recording on a disk that refuses (full, file too large, read-only): the error names
the file meant (the segment, the Parquet part, never a temporary name) and what to do,
and is still the ``OSError`` the recorder keeps and ends its run with."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from toolkit.errors import WriteError
from toolkit.recording._conversion import convert_segment
from toolkit.recording._rows import row_from_message
from toolkit.recording._wal import MAGIC, Row, encode_row
from toolkit.recording._writer import RecordingWriter

T0 = 1_795_305_600 * 10**9
TEXT = (
    '{"channel":"watchticker","message":{"symbol":"BTC/BRL","bid":"1","ask":"2","last":"1",'
    '"timestamp":1,"seq":%d}}'
)


def _rows(n: int) -> list[Row]:
    return [
        row_from_message(
            {"channel": "watchorders", "message": {"id": f"o{i}", "status": "OPEN"}},
            received_at_ns=T0 + i,
            connection_id="c1",
            seq=i,
        )
        for i in range(n)
    ]


def test_a_segment_too_large_for_the_filesystem_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = RecordingWriter(tmp_path, max_pending_rows=4)
    writer.open()
    real = os.write
    wal = (tmp_path / "_wal").resolve()

    def write(fd: int, data: Any) -> int:
        if Path(os.readlink(f"/proc/self/fd/{fd}")).parent == wal:
            raise OSError(errno.EFBIG, "File too large")
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)
    for seq in range(1, 11):
        writer.add_raw(TEXT % seq, T0 + seq, "c1", seq)
    monkeypatch.setattr(os, "write", real)
    error = writer.error
    assert isinstance(error, WriteError) and error.errno == errno.EFBIG
    assert str(error).startswith(f"cannot write {error.filename}: the file is too large")
    assert Path(str(error.filename)).parent == wal and str(error.filename).endswith(".wal")
    with pytest.raises(OSError) as caught:
        writer.close()
    assert caught.value is error


def test_a_parquet_part_the_disk_refuses_names_the_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "_wal" / "0001-1-000000.wal"
    path.parent.mkdir()
    path.write_bytes(MAGIC + b"".join(encode_row(r) for r in _rows(3)))
    real = pq.ParquetWriter

    class Full(real):  # type: ignore[misc,valid-type]
        def write_table(self, *args: Any, **kwargs: Any) -> None:
            # pyarrow's own words: the errno only in the text
            raise OSError("Error writing bytes to file. Detail: [errno 28] No space left")

    monkeypatch.setattr(pq, "ParquetWriter", Full)
    with pytest.raises(WriteError) as caught:
        convert_segment(tmp_path, path)
    final = Path(str(caught.value.filename))
    assert final.name == "part-0001-1-000000.parquet" and final.parent.name.startswith("date=")
    assert str(caught.value).startswith(f"cannot write {final}: the disk is full")
    assert list(tmp_path.rglob("*.tmp")) == [] and path.exists()  # kept for the next try
