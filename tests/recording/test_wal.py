"""Tests of the write-ahead segments: row codec round trips, torn and corrupt tails are
ignored without losing the intact records before them."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from toolkit.recording._wal import MAGIC, Row, Segment, decode_payload, encode_row, read_segment


def _rows(n: int) -> list[Row]:
    return [
        Row(
            received_at_ns=1_795_000_000_000_000_000 + i,
            connection_id=f"c{i % 3}",
            seq=i,
            channel="watchticker",
            symbol="BTC/BRL",
            bid=100.0 + i,
            ask=101.5,
            last=None,
            updated_at_ms=1_795_000_000_000 + i,
            raw=f'{{"channel":"watchticker","message":{{"symbol":"BTC/BRL","i":{i}}}}}',
        )
        for i in range(n)
    ]


def test_row_round_trip_keeps_every_field_and_null() -> None:
    row = Row(
        received_at_ns=-5,
        connection_id="conn-é",
        seq=2**40,
        channel="_session",
        kind="gap",
        detail="reconnected ✓ after 3 tries",
        gap_start_ns=10,
        gap_end_ns=20,
        bid=0.0,
        raw=None,
    )
    framed = encode_row(row)
    length, _crc = struct.unpack_from("<II", framed)
    assert length == len(framed) - 8
    assert decode_payload(framed[8:]) == row


def test_empty_strings_are_not_nulls() -> None:
    row = Row(1, "", 0, "watchorders", symbol="", order_id=None, raw="")
    assert decode_payload(encode_row(row)[8:]) == row


def test_segment_written_and_read_back(tmp_path: Path) -> None:
    seg = Segment(tmp_path / "a.wal")
    rows = _rows(50)
    seg.write_rows(rows[:20])
    seg.sync()
    seg.write_rows(rows[20:])
    seg.close()
    scan = read_segment(seg.path)
    assert scan.rows == rows
    assert scan.ignored_bytes == 0
    assert seg.size == seg.path.stat().st_size


def test_segment_refuses_to_reuse_a_name(tmp_path: Path) -> None:
    Segment(tmp_path / "a.wal").close()
    with pytest.raises(FileExistsError):
        Segment(tmp_path / "a.wal")


def test_every_truncation_of_the_last_record_is_ignored(tmp_path: Path) -> None:
    rows = _rows(4)
    path = tmp_path / "torn.wal"
    seg = Segment(path)
    seg.write_rows(rows)
    seg.close()
    data = path.read_bytes()
    last_len = len(encode_row(rows[-1]))
    intact = len(data) - last_len
    # a crash can stop the write of the last record after any byte
    for cut in range(intact, len(data)):
        path.write_bytes(data[:cut])
        scan = read_segment(path)
        assert scan.rows == rows[:-1], cut
        assert scan.ignored_bytes == cut - intact


def test_corrupt_record_ends_the_scan(tmp_path: Path) -> None:
    rows = _rows(5)
    path = tmp_path / "bad.wal"
    seg = Segment(path)
    seg.write_rows(rows)
    seg.close()
    data = bytearray(path.read_bytes())
    offset = len(MAGIC) + sum(len(encode_row(r)) for r in rows[:2])
    data[offset + 20] ^= 0xFF  # a flipped bit inside the third record's payload
    path.write_bytes(bytes(data))
    scan = read_segment(path)
    assert scan.rows == rows[:2]
    assert scan.ignored_bytes == len(data) - offset


def test_absurd_length_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "len.wal"
    path.write_bytes(MAGIC + struct.pack("<II", 0xFFFFFFF0, 0) + b"x" * 10)
    assert read_segment(path).rows == []


def test_file_without_magic_yields_nothing(tmp_path: Path) -> None:
    path = tmp_path / "other.wal"
    path.write_bytes(b"not a segment at all" + encode_row(_rows(1)[0]))
    scan = read_segment(path)
    assert scan.rows == []
    assert scan.ignored_bytes == os.path.getsize(path)


def test_lone_surrogates_survive_the_round_trip() -> None:
    # json.loads("\"\\ud800\"") gives a lone surrogate that strict UTF-8 cannot encode
    row = Row(1, "c", 1, "watchorders", order_id="\ud800x", raw='{"id":"\ud800x"}')
    assert decode_payload(encode_row(row)[8:]) == row
