"""Append-only write-ahead segments for the recorder: length-prefixed, checksummed records
of recorded rows that stay readable after a crash (a torn last record is ignored).

Layout of a segment file: the 8-byte magic ``TKWAL01\\n`` followed by records, each
``<u32 payload length><u32 crc32 of payload><payload>``. A row's payload is a fixed struct
of numbers and string lengths followed by the UTF-8 strings (see :func:`encode_row`). The
first record names the profile the segment was recorded under (:func:`profile_record`),
so a crash's leftovers are converted under that profile, whichever the next run uses.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

MAGIC = b"TKWAL01\n"
SUFFIX = ".wal"

_HEADER = struct.Struct("<II")
# received_at_ns, seq, updated_at_ms, gap_start_ns, gap_end_ns, bid, ask, last, then the
# byte lengths of the 8 strings of ``_STRING_FIELDS``
_FIXED = struct.Struct("<qqqqqddd8I")
_NULL_INT = -(2**63)
_NULL_LEN = 0xFFFFFFFF
# a single record larger than this is corruption, not data: stop reading there
_MAX_RECORD = 256 * 1024 * 1024
_NAN = math.nan
#: the payload of the record naming a segment's profile starts with this (a row's first
#: field, its receive time, is never the lowest int64)
PROFILE_MARK = struct.pack("<q", -(2**63)) + b"TKPROF01"
_pack_fixed = _FIXED.pack
_pack_header = _HEADER.pack
_crc32 = zlib.crc32


class Row(NamedTuple):
    """One recorded row: a data message (``raw`` is its JSON text) or a session row
    (``channel == "_session"`` with ``kind``/``detail``/``gap_*``)."""

    received_at_ns: int
    connection_id: str
    seq: int
    channel: str
    symbol: str | None = None
    order_id: str | None = None
    status: str | None = None
    updated_at_ms: int | None = None
    bid: float | None = None
    ask: float | None = None
    last: float | None = None
    kind: str | None = None
    detail: str | None = None
    gap_start_ns: int | None = None
    gap_end_ns: int | None = None
    raw: str | None = None


def _int_or_null(value: int | None) -> int:
    return _NULL_INT if value is None else value


def _float_or_nan(value: float | None) -> float:
    return math.nan if value is None else value


def encode_row(row: Row) -> bytes:
    """The framed record (header + payload) of one row."""
    # the hot path of the recorder: unrolled, one join, no per-field Python loop
    (recv, conn, seq, channel, symbol, order_id, status, upd, bid, ask, last, kind, detail,
     gs, ge, raw) = row  # fmt: skip
    try:
        c = conn.encode()
        ch = channel.encode()
        sy = b"" if symbol is None else symbol.encode()
        oi = b"" if order_id is None else order_id.encode()
        st = b"" if status is None else status.encode()
        ki = b"" if kind is None else kind.encode()
        de = b"" if detail is None else detail.encode()
        rw = b"" if raw is None else raw.encode()
    except UnicodeEncodeError:
        return _encode_lossless(row)  # lone surrogates, e.g. from a "\ud800" escape
    payload = b"".join(
        (
            _pack_fixed(
                recv,
                seq,
                _NULL_INT if upd is None else upd,
                _NULL_INT if gs is None else gs,
                _NULL_INT if ge is None else ge,
                _NAN if bid is None else bid,
                _NAN if ask is None else ask,
                _NAN if last is None else last,
                len(c),
                len(ch),
                _NULL_LEN if symbol is None else len(sy),
                _NULL_LEN if order_id is None else len(oi),
                _NULL_LEN if status is None else len(st),
                _NULL_LEN if kind is None else len(ki),
                _NULL_LEN if detail is None else len(de),
                _NULL_LEN if raw is None else len(rw),
            ),
            c,
            ch,
            sy,
            oi,
            st,
            ki,
            de,
            rw,
        )
    )
    return _pack_header(len(payload), _crc32(payload)) + payload


def _encode_lossless(row: Row) -> bytes:
    strings = (
        row.connection_id,
        row.channel,
        row.symbol,
        row.order_id,
        row.status,
        row.kind,
        row.detail,
        row.raw,
    )
    encoded = [None if s is None else s.encode("utf-8", "surrogatepass") for s in strings]
    payload = _FIXED.pack(
        row.received_at_ns,
        row.seq,
        _int_or_null(row.updated_at_ms),
        _int_or_null(row.gap_start_ns),
        _int_or_null(row.gap_end_ns),
        _float_or_nan(row.bid),
        _float_or_nan(row.ask),
        _float_or_nan(row.last),
        *[_NULL_LEN if b is None else len(b) for b in encoded],
    ) + b"".join([b for b in encoded if b])
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def profile_record(metadata: Mapping[bytes, bytes]) -> bytes:
    """The framed record that names a segment's profile: ``metadata`` as the recording's
    files carry it (``toolkit.recording._rows.profile_metadata``)."""
    table = {k.decode(): v.decode() for k, v in metadata.items()}
    payload = PROFILE_MARK + json.dumps(table, sort_keys=True).encode()
    return _pack_header(len(payload), _crc32(payload)) + payload


def is_profile_record(payload: bytes | memoryview) -> bool:
    return bytes(payload[: len(PROFILE_MARK)]) == PROFILE_MARK


def decode_profile_record(payload: bytes | memoryview) -> dict[bytes, bytes]:
    """The profile metadata of a profile record's payload; ValueError when malformed."""
    try:
        table = json.loads(bytes(payload[len(PROFILE_MARK) :]))
    except ValueError as exc:
        raise ValueError("malformed profile record") from exc
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in table.items()
    ):
        raise ValueError("malformed profile record")
    return {k.encode(): v.encode() for k, v in table.items()}


def decode_payload(payload: bytes | memoryview) -> Row:
    """The row of one record's payload (raises ``ValueError`` on a malformed payload)."""
    try:
        fixed = _FIXED.unpack_from(payload, 0)
    except struct.error as exc:
        raise ValueError("truncated row payload") from exc
    recv, seq, upd, gs, ge, bid, ask, last = fixed[:8]
    offset = _FIXED.size
    strings: list[str | None] = []
    for n in fixed[8:]:
        if n == _NULL_LEN:
            strings.append(None)
            continue
        end = offset + n
        if end > len(payload):
            raise ValueError("truncated row payload")
        strings.append(bytes(payload[offset:end]).decode("utf-8", "surrogatepass"))
        offset = end
    conn, channel, symbol, order_id, status, kind, detail, raw = strings
    return Row(
        received_at_ns=recv,
        connection_id=conn or "",
        seq=seq,
        channel=channel or "",
        symbol=symbol,
        order_id=order_id,
        status=status,
        updated_at_ms=None if upd == _NULL_INT else upd,
        bid=None if math.isnan(bid) else bid,
        ask=None if math.isnan(ask) else ask,
        last=None if math.isnan(last) else last,
        kind=kind,
        detail=detail,
        gap_start_ns=None if gs == _NULL_INT else gs,
        gap_end_ns=None if ge == _NULL_INT else ge,
        raw=raw,
    )


@dataclass(frozen=True, slots=True)
class SegmentScan:
    """What reading a segment found: the rows and how many trailing bytes were ignored
    (a record torn by a crash, or garbage after it)."""

    rows: list[Row]
    ignored_bytes: int


def iter_payloads(data: bytes) -> Iterator[tuple[int, memoryview]]:
    """(end offset, payload) of every intact record of a segment's bytes, in order; stops
    silently at the first torn or corrupt record, since everything after it is suspect."""
    if not data.startswith(MAGIC):
        return
    view = memoryview(data)
    offset = len(MAGIC)
    total = len(data)
    header = _HEADER
    while offset + header.size <= total:
        length, crc = header.unpack_from(data, offset)
        start = offset + header.size
        end = start + length
        if length > _MAX_RECORD or end > total:
            return
        payload = view[start:end]
        if zlib.crc32(payload) != crc:
            return
        yield end, payload
        offset = end


def read_segment(path: str | os.PathLike[str]) -> SegmentScan:
    """Every intact row of a segment file; a torn last record is ignored, not an error."""
    data = Path(path).read_bytes()
    rows: list[Row] = []
    good_end = len(MAGIC) if data.startswith(MAGIC) else 0
    for end, payload in iter_payloads(data):
        if not is_profile_record(payload):
            rows.append(decode_payload(payload))
        good_end = end
    return SegmentScan(rows=rows, ignored_bytes=len(data) - good_end)


def iter_segment_rows(path: str | os.PathLike[str]) -> Iterator[Row]:
    """The intact rows of a segment file, one at a time."""
    data = Path(path).read_bytes()
    for _end, payload in iter_payloads(data):
        if not is_profile_record(payload):
            yield decode_payload(payload)


class Segment:
    """One append-only segment file being written. ``append``/``write`` hand the bytes to
    the OS at once (no buffer of ours: a chunk record is written without another copy);
    ``sync`` makes everything written so far durable (fsync).

    An append is whole or absent: when a write fails part way (a full disk), the file is
    truncated back to where the append began before the error is raised, so no torn
    record is ever followed by others. When even that truncation fails, the segment is
    ``broken``: it refuses further appends, and its writer starts another one.
    """

    def __init__(self, path: str | os.PathLike[str], header: bytes = b"") -> None:
        """``header``: framed records written with the magic, as one unit (the segment's
        :func:`profile_record`)."""
        self.path = Path(path)
        # O_APPEND + exclusive create: a segment is only ever written by the one
        # recorder that named it
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        #: bytes of whole records (and the magic) in the file
        self.size = 0
        self.closed = False
        #: a failed append could not be undone: bytes of a torn record end the file
        self.broken = False
        try:
            self.write(MAGIC + header)
        except BaseException:
            os.close(self._fd)
            with contextlib.suppress(OSError):
                self.path.unlink()
            raise

    def append(self, pieces: Iterable[bytes | memoryview]) -> int:
        """Append ``pieces`` (framed records, or pieces of them) as one unit: all of them,
        or none when a write fails (the file is truncated back, then the error raised).
        Returns the number of bytes appended."""
        if self.broken:
            raise OSError(errno.EIO, "an earlier failed write could not be undone", str(self.path))
        start = self.size
        written = 0
        try:
            for piece in pieces:
                view = memoryview(piece)
                while view:
                    n = os.write(self._fd, view)
                    view = view[n:]
                    written += n
        except BaseException:
            if written:
                self._undo(start)
            raise
        self.size = start + written
        return written

    def _undo(self, start: int) -> None:
        """Cut a partly written append off the end of the file."""
        try:
            os.ftruncate(self._fd, start)
        except OSError:
            self.broken = True

    def write(self, framed: bytes | memoryview) -> None:
        """Append already framed records (one or many concatenated), whole or not at all."""
        self.append((framed,))

    def write_rows(self, rows: Iterable[Row]) -> int:
        """Encode and append rows; returns the number of bytes appended."""
        data = b"".join([encode_row(r) for r in rows])
        self.write(data)
        return len(data)

    def flush(self) -> None:
        """Nothing to do: every write reached the OS already (kept for callers that
        flush before an fsync on another thread)."""

    def fileno(self) -> int:
        return self._fd

    def sync(self) -> None:
        """Make everything written so far durable (fsync)."""
        os.fsync(self._fd)

    def close(self) -> None:
        """fsync and close (the descriptor is closed even when the fsync fails)."""
        if self.closed:
            return
        try:
            self.sync()
        finally:
            os.close(self._fd)
            self.closed = True

    def __repr__(self) -> str:
        broken = ", broken" if self.broken else ""
        return f"Segment({self.path.name!r}, size={self.size}{broken})"
