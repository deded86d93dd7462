"""The recorder: WebSocket channels captured into a crash-safe, Hive-partitioned Parquet
dataset (``ROOT/channel=<name>/date=<YYYY-MM-DD>/part-*.parquet``) through a write-ahead log.

Pipeline: stream events -> rows in a bounded pending buffer (drops counted) -> appended to
an append-only segment in ``ROOT/_wal/`` and fsynced every ``flush_interval`` -> at each
rotation (time or size) the closed segment becomes Parquet files, each written to a hidden
temporary name and ``os.replace``d into place, then the segment is deleted. Segments left
by a crash are converted when the next writer opens the root, so a crash loses at most
the last flush interval and every ``.parquet`` on disk is always complete.

Data messages take a raw path (``add_raw``): only (received time, connection, seq, the
text as sent) is kept per message, a flush writes them as one Arrow batch record of the
segment, and the per-channel columns are extracted at conversion, in Arrow's C++ JSON
reader (with a per-row Python fallback), so the receiving loop does almost no work per
message.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import os
import re
import struct
import threading
import time
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit._events import OrderEvent, TickerEvent
from toolkit._wal import SUFFIX, Row, Segment, decode_payload, iter_payloads

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from toolkit._client import Client

__all__ = [
    "COLUMNS",
    "DEFAULT_CHANNELS",
    "SESSION_CHANNEL",
    "Recorder",
    "RecorderBusy",
    "RecorderStats",
    "RecordingWriter",
    "convert_segment",
    "partition_dir",
    "recording_schema",
    "recover",
    "row_from_event",
    "row_from_message",
    "rows_from_raw",
]

SESSION_CHANNEL = "_session"
WAL_DIR = "_wal"
LOCK_NAME = "LOCK"
DEFAULT_CHANNELS: tuple[str, ...] = (
    "watchOrders",
    "watchTicker:BTC/BRL",
    "watchTickers",
    "watchBalance",
)

#: column names of every Parquet file, in order. One schema for every channel (columns a
#: channel does not use stay null) so any reader can scan the whole dataset at once.
COLUMNS: tuple[str, ...] = (
    "received_at",
    "connection_id",
    "seq",
    "channel",
    "symbol",
    "order_id",
    "status",
    "updated_at",
    "bid",
    "ask",
    "last",
    "kind",
    "detail",
    "gap_start",
    "gap_end",
    "raw",
)

_NS_PER_DAY = 86_400 * 1_000_000_000
_ROW_GROUP = 65_536
_SAFE_PARTITION = re.compile(r"[^a-z0-9_\-]")


def recording_schema() -> pa.Schema:
    """The Arrow schema of every file of a recording."""
    import pyarrow as pa

    ts_ns = pa.timestamp("ns", tz="UTC")
    return pa.schema(
        [
            pa.field("received_at", ts_ns, nullable=False),
            pa.field("connection_id", pa.string()),
            pa.field("seq", pa.int64()),
            pa.field("channel", pa.string()),
            pa.field("symbol", pa.string()),
            pa.field("order_id", pa.string()),
            pa.field("status", pa.string()),
            pa.field("updated_at", pa.timestamp("ms", tz="UTC")),
            pa.field("bid", pa.float64()),
            pa.field("ask", pa.float64()),
            pa.field("last", pa.float64()),
            pa.field("kind", pa.string()),
            pa.field("detail", pa.string()),
            pa.field("gap_start", ts_ns),
            pa.field("gap_end", ts_ns),
            pa.field("raw", pa.string()),
        ]
    )


def partition_value(channel: str) -> str:
    """The directory-safe form of a channel name: a name sent by the server can never
    climb out of ``ROOT`` (``/``, ``..`` and the like are percent-encoded)."""
    name = channel.lower()
    if name == SESSION_CHANNEL:
        return name
    return _SAFE_PARTITION.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), name)


def partition_dir(root: str | os.PathLike[str], channel: str, date: str) -> Path:
    """``ROOT/channel=<name>/date=<YYYY-MM-DD>``."""
    return Path(root) / f"channel={partition_value(channel)}" / f"date={date}"


# ---------------------------------------------------------------------------- rows


def _ms(value: Any) -> int | None:
    """Unix milliseconds of a timestamp field (seconds are detected by magnitude)."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if number != number or abs(number) > 1e16:  # NaN or absurd: not a timestamp
        return None
    return int(number * 1000) if abs(number) < 1e11 else int(number)


def _num(value: Any) -> float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def row_from_message(
    raw: Mapping[str, Any],
    *,
    received_at_ns: int,
    connection_id: str,
    seq: int,
    raw_text: str | None = None,
) -> Row:
    """The row of one data message ``{"channel", "message"}`` with its extracted columns.

    Extraction never fails: a field of an unexpected type becomes null, and the whole
    message is always kept in ``raw`` (new fields of the service stay there).
    """
    channel = str(raw.get("channel", "")).lower()
    message = raw.get("message")
    text = raw_text if raw_text is not None else _dumps(raw)
    symbol = order_id = status = None
    updated = None
    bid = ask = last = None
    if isinstance(message, Mapping):
        if channel == "watchorders":
            symbol = _str(message.get("symbol"))
            order_id = _str(message.get("id"))
            status = _str(message.get("status"))
            updated = _ms(message.get("updatedAt"))
        elif channel == "watchticker":
            symbol = _str(message.get("symbol"))
            bid = _num(message.get("bid"))
            ask = _num(message.get("ask"))
            last = _num(message.get("last"))
            updated = _ms(message.get("timestamp"))
        elif channel == "watchtickers":
            tickers = message.get("tickers")
            if isinstance(tickers, list):
                stamps = [_ms(t.get("timestamp")) for t in tickers if isinstance(t, Mapping)]
                known = [s for s in stamps if s is not None]
                updated = max(known) if known else None
        elif channel == "watchbalance":
            updated = _ms(message.get("timestamp"))
    return Row(
        received_at_ns,
        connection_id,
        seq,
        channel,
        symbol,
        order_id,
        status,
        updated,
        bid,
        ask,
        last,
        None,
        None,
        None,
        None,
        text,
    )


_CHANNEL_PREFIX = re.compile(r'\{\s*"channel"\s*:\s*"([^"\\]*)"')
#: channel of a data message whose text is not a JSON object (kept, never dropped)
UNPARSED_CHANNEL = "_unparsed"


def row_from_text(text: str, *, received_at_ns: int, connection_id: str, seq: int) -> Row:
    """The row of one data message as the server sent it; ``raw`` is ``text`` itself."""
    try:
        msg = json.loads(text)
    except ValueError:
        msg = None
    if not isinstance(msg, Mapping):
        sniffed = _CHANNEL_PREFIX.match(text)
        channel = sniffed.group(1).lower() if sniffed else UNPARSED_CHANNEL
        return Row(received_at_ns, connection_id, seq, channel, raw=text)
    return row_from_message(
        msg, received_at_ns=received_at_ns, connection_id=connection_id, seq=seq, raw_text=text
    )


RawItem = tuple[int, str, int, str]  # received_at_ns, connection_id, seq, text


def rows_from_raw(items: Iterable[RawItem]) -> list[Row]:
    """Rows of raw data messages (the per-row Python path of the conversion)."""
    return [
        row_from_text(text, received_at_ns=ns, connection_id=conn, seq=seq)
        for ns, conn, seq, text in items
    ]


# one encoder for every row: json.dumps with options builds a new one on each call;
# no circular check either, since a parsed JSON message cannot be circular
_encode_json = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, check_circular=False, default=str
).encode


def _dumps(raw: Any) -> str:
    return _encode_json(raw)


def _finite(value: float) -> float | None:
    return None if value != value else value  # NaN (an empty decimal) -> null


def session_row(
    kind: str,
    *,
    received_at_ns: int,
    connection_id: str = "",
    seq: int = 0,
    detail: str = "",
    gap_start_ns: int | None = None,
    gap_end_ns: int | None = None,
) -> Row:
    """A ``channel=_session`` row: connect, disconnect, subscription, gap or drop."""
    return Row(
        received_at_ns,
        connection_id,
        seq,
        SESSION_CHANNEL,
        kind=kind,
        detail=detail,
        gap_start_ns=gap_start_ns,
        gap_end_ns=gap_end_ns,
    )


def row_from_event(event: Any) -> Row:
    """The row of a stream event (``toolkit._events``): session events become session
    rows, every other event the row of its data message."""
    if event.channel == SESSION_CHANNEL:
        return session_row(
            str(event.kind),
            received_at_ns=event.received_at_ns,
            connection_id=event.connection_id,
            seq=event.seq,
            detail=str(getattr(event, "detail", "") or ""),
            gap_start_ns=getattr(event, "gap_start_ns", None),
            gap_end_ns=getattr(event, "gap_end_ns", None),
        )
    raw = event.raw
    if not isinstance(raw, Mapping):
        raw = {"channel": event.channel, "message": None}
    kind = type(event)
    # the hot path: take what the stream already converted instead of parsing again
    if kind is TickerEvent and event.channel == "watchticker":
        return Row(
            event.received_at_ns,
            event.connection_id,
            event.seq,
            "watchticker",
            event.symbol or None,
            None,
            None,
            _ms(event.timestamp) if event.timestamp else None,
            _finite(event.bid),
            _finite(event.ask),
            _finite(event.last),
            None,
            None,
            None,
            None,
            _encode_json(raw),
        )
    if kind is OrderEvent and event.channel == "watchorders":
        order = event.order
        return Row(
            event.received_at_ns,
            event.connection_id,
            event.seq,
            "watchorders",
            _str(order.get("symbol")),
            _str(order.get("id")),
            _str(order.get("status")),
            _ms(order.get("updatedAt")),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            _encode_json(raw),
        )
    return row_from_message(
        raw,
        received_at_ns=event.received_at_ns,
        connection_id=event.connection_id,
        seq=event.seq,
    )


# ------------------------------------------------------------------ Parquet output


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _date_of(ns: int, cache: dict[int, str]) -> str:
    day = ns // _NS_PER_DAY
    date = cache.get(day)
    if date is None:
        date = datetime.fromtimestamp(day * 86_400, UTC).strftime("%Y-%m-%d")
        cache[day] = date
    return date


def _table(rows: Sequence[Row], schema: pa.Schema) -> pa.Table:
    import pyarrow as pa

    # zip(*rows) transposes at C speed; pa.array converts each column in C
    columns = list(zip(*rows, strict=True))
    arrays = [pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def _write_file(
    parts: Sequence[Sequence[Row] | pa.Table],
    tmp: Path,
    final: Path,
    schema: pa.Schema,
    compression: str,
) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        with pq.ParquetWriter(tmp, schema, compression=compression) as writer:
            for part in parts:
                if isinstance(part, pa.Table):
                    writer.write_table(part, row_group_size=_ROW_GROUP)
                    continue
                for i in range(0, len(part), _ROW_GROUP):
                    writer.write_table(_table(part[i : i + _ROW_GROUP], schema))
        _fsync_path(tmp)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_path(final.parent)
    return final


Buckets = dict[tuple[str, int], list[Row]]


def bucket_rows(rows: Iterable[Row], buckets: Buckets | None = None) -> Buckets:
    """Rows grouped by (channel, UTC day): one Parquet file each."""
    out: Buckets = {} if buckets is None else buckets
    for row in rows:
        key = (row[3], row[0] // _NS_PER_DAY)
        bucket = out.get(key)
        if bucket is None:
            out[key] = bucket = []
        bucket.append(row)
    return out


def write_buckets(
    root: str | os.PathLike[str], buckets: Buckets, name: str, *, compression: str = "zstd"
) -> list[Path]:
    """Write each bucket as ``part-<name>.parquet`` in its (channel, date) partition, each
    complete before it appears (temporary name + ``os.replace``). Same name, same files:
    converting a segment twice (after a crash mid-way) overwrites rather than duplicates.
    No per-row Python runs here, so a worker thread doing it does not starve the loop."""
    return write_parts(
        root, {key: [rows] for key, rows in buckets.items()}, name, compression=compression
    )


Parts = dict[tuple[str, int], list["Sequence[Row] | pa.Table"]]


def write_parts(
    root: str | os.PathLike[str], parts: Parts, name: str, *, compression: str = "zstd"
) -> list[Path]:
    """``write_buckets`` for rows and Arrow tables mixed: one file per (channel, day)."""
    schema = recording_schema()
    dates: dict[int, str] = {}
    files = []
    for (channel, day), bucket in parts.items():
        directory = partition_dir(root, channel, _date_of(day * _NS_PER_DAY, dates))
        files.append(
            _write_file(
                bucket,
                directory / f".part-{name}.parquet.tmp",
                directory / f"part-{name}.parquet",
                schema,
                compression,
            )
        )
    return files


# ------------------------------------------------------- raw batches (the fast path)

#: a segment record holding a batch of raw data messages starts with this; a row record
#: starts with its received time, which is never the null int64
_BATCH_MARK = struct.pack("<q", -(2**63)) + b"TKRAWB01"
_frame_header = struct.Struct("<II").pack


def raw_batch_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("received_at", pa.int64()),
            pa.field("connection_id", pa.string()),
            pa.field("seq", pa.int64()),
            pa.field("raw", pa.large_string()),
        ]
    )


class RawBuffer:
    """Data messages of the raw path, kept column by column as they come: appending costs
    a few C calls per message, and a flush turns them into an Arrow batch without a
    per-message Python loop (times and seqs are machine integers already, connection ids
    are runs)."""

    __slots__ = ("conn", "conns", "seqs", "stamps", "texts")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.stamps = array("q")
        self.seqs = array("q")
        #: (index of the first message, connection id) of each run of one connection
        self.conns: list[tuple[int, str]] = []
        #: the connection of the last run (None before the first message)
        self.conn: str | None = None

    def __len__(self) -> int:
        return len(self.texts)

    def append(self, text: str, received_at_ns: int, connection_id: str, seq: int) -> None:
        if connection_id is not self.conn:
            self.conns.append((len(self.texts), connection_id))
            self.conn = connection_id
        self.texts.append(text)
        self.stamps.append(received_at_ns)
        self.seqs.append(seq)

    def _runs(self) -> list[tuple[str, int]]:
        """(connection id, message count) of each run."""
        conns = self.conns
        ends = [start for start, _ in conns[1:]] + [len(self.texts)]
        return [(conn, end - start) for (start, conn), end in zip(conns, ends, strict=False)]

    def connection_ids(self) -> list[str]:
        out: list[str] = []
        for conn, count in self._runs():
            out.extend([conn] * count)
        return out

    def __iter__(self) -> Iterator[RawItem]:
        return zip(self.stamps, self.connection_ids(), self.seqs, self.texts, strict=True)

    def batch(self) -> pa.RecordBatch:
        import numpy as np
        import pyarrow as pa

        n = len(self.texts)
        try:
            runs = [(conn.encode(), count) for conn, count in self._runs()]
        except UnicodeEncodeError:  # not valid text: let Arrow say so as it always did
            runs = []
            conn_ids = pa.array(self.connection_ids(), pa.string())
        # the connection ids as a string array built from its buffers (a run is one id)
        lengths = np.repeat(
            np.array([len(c) for c, _ in runs], dtype=np.int32),
            np.array([k for _, k in runs], dtype=np.int64),
        )
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        data = b"".join([c * k for c, k in runs])
        if runs or not n:
            conn_ids = pa.Array.from_buffers(
                pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
            )
        return pa.RecordBatch.from_arrays(
            [
                pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.stamps)]),
                conn_ids,
                pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.seqs)]),
                pa.array(self.texts, pa.large_string()),
            ],
            schema=raw_batch_schema(),
        )


def raw_batch(items: Sequence[RawItem] | RawBuffer) -> pa.RecordBatch:
    """One Arrow batch of raw data messages (column-wise conversion in C)."""
    if isinstance(items, RawBuffer):
        return items.batch()
    buffer = RawBuffer()
    for ns, conn, seq, text in items:
        buffer.append(text, ns, conn, seq)
    return buffer.batch()


def _batch_record(batch: pa.RecordBatch) -> tuple[bytes, Any]:
    """(header + mark, IPC body) of the framed segment record of a raw batch: written as
    two pieces, the body never copied into a Python bytes object."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as w:
        w.write_batch(batch)
    body = sink.getvalue()
    crc = zlib.crc32(body, zlib.crc32(_BATCH_MARK))  # releases the GIL on large buffers
    return _frame_header(len(_BATCH_MARK) + body.size, crc) + _BATCH_MARK, body


def encode_batch(batch: pa.RecordBatch) -> bytes:
    """The framed segment record of a raw batch (same framing as a row record)."""
    head, body = _batch_record(batch)
    return head + body.to_pybytes()


def _decode_batches(payload: memoryview) -> list[pa.RecordBatch]:
    import pyarrow as pa

    data = pa.py_buffer(payload[len(_BATCH_MARK) :])
    return list(pa.ipc.open_stream(data))


def read_segment_items(path: str | os.PathLike[str]) -> tuple[list[Row], list[pa.RecordBatch]]:
    """The intact rows and raw batches of a segment file (a torn last record is ignored)."""
    data = Path(path).read_bytes()
    rows: list[Row] = []
    batches: list[pa.RecordBatch] = []
    for _end, payload in iter_payloads(data):
        if payload[: len(_BATCH_MARK)] == _BATCH_MARK:
            batches.extend(_decode_batches(payload))
        else:
            rows.append(decode_payload(payload))
    return rows, batches


class _Fallback(Exception):
    """The fast extraction cannot handle this batch: convert it row by row."""


def _json_schema() -> pa.Schema:
    import pyarrow as pa

    text, num = pa.string(), pa.float64()
    message = pa.struct(
        [
            ("id", text),
            ("symbol", text),
            ("status", text),
            ("updatedAt", num),
            ("timestamp", num),
            ("bid", text),
            ("ask", text),
            ("last", text),
            ("tickers", pa.list_(pa.struct([("timestamp", num)]))),
        ]
    )
    return pa.schema([("channel", text), ("message", message)])


def _ms_array(values: Any) -> Any:
    """``_ms`` over a float64 array: seconds detected by magnitude, absurd values null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mag = pc.abs(values)
    scaled = pc.if_else(pc.less(mag, 1e11), pc.multiply(values, 1000.0), values)
    as_int = pc.cast(pc.if_else(pc.less_equal(mag, 1e16), scaled, None), pa.int64(), safe=False)
    return as_int


def _extract(raw: pa.Table) -> pa.Table:
    """The recording-schema table of a table of raw data messages, every column extracted
    in Arrow (C++); raises _Fallback for what only the Python path handles exactly."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    n = raw.num_rows
    texts = raw.column("raw").combine_chunks()
    # one message per line: a text with a line break of its own would shift the lines
    # (a scan of the bytes: a substring kernel costs several times more)
    text_offsets = np.frombuffer(texts.buffers()[1], dtype=np.int64)[texts.offset :]
    data = texts.buffers()[2]
    if data is not None and n:
        chars = np.frombuffer(data, dtype=np.uint8)[int(text_offsets[0]) : int(text_offsets[n])]
        if chars.size and (chars == 10).any():
            raise _Fallback
    lines = pc.binary_join_element_wise(
        texts, pa.scalar("", texts.type), pa.scalar("\n", texts.type)
    )
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset :]
    start, end = int(offsets[0]), int(offsets[n])
    body = lines.buffers()[2].slice(start, end - start)
    try:
        # one thread: the same work as several, without taking cores from the receiving
        # loop in bursts
        parsed = pj.read_json(
            pa.BufferReader(body),
            read_options=pj.ReadOptions(use_threads=False, block_size=1 << 20),
            parse_options=pj.ParseOptions(
                explicit_schema=_json_schema(), unexpected_field_behavior="ignore"
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise _Fallback from exc
    if parsed.num_rows != n:
        raise _Fallback
    channel = pc.utf8_lower(parsed.column("channel").combine_chunks())
    if channel.null_count:
        raise _Fallback  # not an object with a text channel
    message = parsed.column("message").combine_chunks()

    def field_(name: str) -> Any:
        return pc.struct_field(message, name)

    is_o = pc.equal(channel, "watchorders")
    is_t = pc.equal(channel, "watchticker")
    is_ts = pc.equal(channel, "watchtickers")
    is_b = pc.equal(channel, "watchbalance")
    text_null = pa.scalar(None, pa.string())
    int_null = pa.scalar(None, pa.int64())
    symbol = pc.if_else(pc.or_(is_o, is_t), field_("symbol"), text_null)
    order_id = pc.if_else(is_o, field_("id"), text_null)
    status = pc.if_else(is_o, field_("status"), text_null)

    def number(name: str) -> Any:
        value = field_(name)
        value = pc.if_else(pc.equal(value, ""), text_null, value)  # "" is null, as _num
        try:
            out = pc.cast(value, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise _Fallback from exc
        return pc.if_else(is_t, out, pa.scalar(None, pa.float64()))

    updated = pc.if_else(
        is_o,
        _ms_array(field_("updatedAt")),
        pc.if_else(pc.or_(is_t, is_b), _ms_array(field_("timestamp")), int_null),
    )
    if pc.any(is_ts).as_py():
        tickers = pc.if_else(is_ts, field_("tickers"), pa.scalar(None, field_("tickers").type))
        flat = _ms_array(pc.struct_field(pc.list_flatten(tickers), "timestamp"))
        if len(flat):
            agg = (
                pa.table({"p": pc.list_parent_indices(tickers), "v": flat})
                .group_by("p")
                .aggregate([("v", "max")])
                .sort_by("p")
            )
            mask = np.zeros(n, dtype=bool)
            mask[agg.column("p").to_numpy()] = True
            latest = pc.replace_with_mask(
                pa.nulls(n, pa.int64()), pa.array(mask), agg.column("v_max").combine_chunks()
            )
            updated = pc.if_else(is_ts, latest, updated)
    schema = recording_schema()
    nulls = {name: pa.nulls(n, schema.field(name).type) for name in ("kind", "detail")}
    ts_null = pa.nulls(n, schema.field("gap_start").type)
    columns = [
        pc.cast(raw.column("received_at"), schema.field("received_at").type),
        raw.column("connection_id"),
        raw.column("seq"),
        channel,
        symbol,
        order_id,
        status,
        pc.cast(updated, schema.field("updated_at").type),
        number("bid"),
        number("ask"),
        number("last"),
        nulls["kind"],
        nulls["detail"],
        ts_null,
        ts_null,
        pc.cast(texts, pa.string()),
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def tables_from_raw(batches: Sequence[pa.RecordBatch]) -> Parts:
    """Raw batches as recording-schema tables grouped by (channel, UTC day)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: Parts = {}
    if not batches or not sum(b.num_rows for b in batches):
        return out
    raw = pa.Table.from_batches(batches)
    try:
        table = _extract(raw)
    except _Fallback:
        columns = [raw.column(i).to_pylist() for i in range(4)]
        rows = rows_from_raw(zip(*columns, strict=True))
        for key, bucket in bucket_rows(rows).items():
            out.setdefault(key, []).append(bucket)
        return out
    channels = table.column("channel")
    span = pc.min_max(raw.column("received_at"))
    first, last = span["min"].as_py() // _NS_PER_DAY, span["max"].as_py() // _NS_PER_DAY
    if first == last:  # the usual case: one day, no group-by
        names = pc.unique(channels).to_pylist()
        if len(names) == 1:
            out[(names[0], first)] = [table]
            return out
        for channel in names:
            out[(channel, first)] = [table.filter(pc.equal(channels, channel))]
        return out
    day = pc.divide(raw.column("received_at"), _NS_PER_DAY)
    keys = pa.table({"c": table.column("channel"), "d": day}).group_by(["c", "d"]).aggregate([])
    for channel, d in zip(keys.column("c").to_pylist(), keys.column("d").to_pylist(), strict=True):
        mask = pc.and_(pc.equal(table.column("channel"), channel), pc.equal(day, d))
        out.setdefault((channel, d), []).append(table.filter(mask))
    return out


def write_rows(
    root: str | os.PathLike[str], rows: Iterable[Row], name: str, *, compression: str = "zstd"
) -> list[Path]:
    """Write rows as ``part-<name>.parquet`` files, one per (channel, date)."""
    return write_buckets(root, bucket_rows(rows), name, compression=compression)


def _merge(rows: Buckets, batches: Sequence[pa.RecordBatch]) -> Parts:
    parts: Parts = {key: [bucket] for key, bucket in rows.items()}
    for key, tables in tables_from_raw(batches).items():
        parts.setdefault(key, []).extend(tables)
    return parts


def convert_segment(
    root: str | os.PathLike[str], segment: str | os.PathLike[str], *, compression: str = "zstd"
) -> list[Path]:
    """Turn a closed (or crash-torn) WAL segment into Parquet files, then delete it."""
    path = Path(segment)
    rows, batches = read_segment_items(path)
    files = write_parts(
        root, _merge(bucket_rows(rows), batches), path.stem, compression=compression
    )
    path.unlink()
    return files


def _wal_dir(root: str | os.PathLike[str]) -> Path:
    return Path(root) / WAL_DIR


def recover(root: str | os.PathLike[str], *, compression: str = "zstd") -> list[Path]:
    """Convert the segments a crashed recorder left in ``ROOT/_wal/`` and delete the
    temporary files of conversions it did not finish. Call it only while holding the
    root's lock (``RecordingWriter.open`` does)."""
    root_path = Path(root)
    for tmp in root_path.glob("channel=*/date=*/.part-*.parquet.tmp"):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    files: list[Path] = []
    for segment in sorted(_wal_dir(root).glob(f"*{SUFFIX}")):
        files.extend(convert_segment(root, segment, compression=compression))
    return files


# --------------------------------------------------------------------- the writer


class RecorderBusy(RuntimeError):
    """Another recorder holds the lock of this root."""


@dataclass(slots=True)
class RecorderStats:
    """Live counts of a recorder: data ``messages`` and their ``bytes`` (raw JSON text),
    Parquet ``files`` written, ``gaps`` seen, messages ``dropped`` (by the writer's bounded
    buffer), ``recovered`` files from an earlier crash, ``flushed_rows`` durable in the
    write-ahead log (data and session rows: what a crash can no longer lose)."""

    messages: int = 0
    bytes: int = 0
    files: int = 0
    gaps: int = 0
    dropped: int = 0
    recovered: int = 0
    session_rows: int = 0
    flushed_rows: int = 0
    started_at: float = field(default_factory=time.monotonic)

    def line(self) -> str:
        """A one-line status for a terminal or a notebook."""
        elapsed = max(time.monotonic() - self.started_at, 1e-9)
        return (
            f"messages {self.messages:,} ({self.messages / elapsed:,.0f}/s)  "
            f"saved {self.flushed_rows:,}  bytes {_human(self.bytes)}  files {self.files}  "
            f"gaps {self.gaps}  dropped {self.dropped}"
        )


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GB"  # pragma: no cover


_counter = itertools.count()


class RecordingWriter:
    """The sans-network half of the recorder: rows in, durable segments and Parquet out.

    ``add``/``add_event`` are cheap and never block (a full pending buffer drops the row and
    counts it; a ``dropped`` session row records the span once there is room again).
    ``flush`` appends the pending rows to the current segment and fsyncs it; ``rotate``
    closes the segment and converts it to Parquet. All blocking methods are meant for a
    worker thread; ``add`` must be called from one thread only.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        rotate_interval: float = 60.0,
        rotate_bytes: int = 16 * 1024 * 1024,
        rotate_rows: int = 100_000,
        max_pending_rows: int = 200_000,
        max_pending_bytes: int = 64 * 1024 * 1024,
        compression: str = "zstd",
        clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.root = Path(root)
        self.rotate_interval = rotate_interval
        self.rotate_bytes = rotate_bytes
        self.rotate_rows = rotate_rows
        self.max_pending_rows = max_pending_rows
        self.max_pending_bytes = max_pending_bytes
        self.compression = compression
        self.stats = RecorderStats()
        self._clock_ns = clock_ns
        self._pending: list[Row] = []
        #: data messages of the raw path, kept as they came until a flush
        self._raw = RawBuffer()
        self._pending_bytes = 0
        self._drop_count = 0
        self._drop_first_ns: int | None = None
        self._drop_last_ns: int | None = None
        self._last_conn = ""
        self._segment: Segment | None = None
        # the rows already in the open segment, grouped by file: converting from memory
        # spares decoding the segment
        self._segment_rows: Buckets = {}
        self._segment_batches: list[pa.RecordBatch] = []
        self._segment_count = 0
        self._unsynced = 0
        self._segment_opened = 0.0
        self._lock_fd: int | None = None

    # -- life

    def open(self) -> list[Path]:
        """Take the root's lock, recover what a crash left, start a segment. Returns the
        recovered files."""
        # import what conversions need now: an import in the middle of recording holds
        # the GIL for a good part of a second, time the receiving loop then loses
        import pyarrow.compute
        import pyarrow.ipc
        import pyarrow.json
        import pyarrow.parquet  # noqa: F401

        wal = _wal_dir(self.root)
        wal.mkdir(parents=True, exist_ok=True)
        self._lock_fd = _lock(wal / LOCK_NAME)
        try:
            recovered = recover(self.root, compression=self.compression)
        except BaseException:
            self._unlock()
            raise
        self.stats.recovered += len(recovered)
        self.stats.files += len(recovered)
        self._new_segment()
        return recovered

    def close(self) -> list[Path]:
        """Flush, convert the last segment, release the lock."""
        try:
            self.flush()
            return self.rotate(reopen=False)
        finally:
            self._unlock()

    def __enter__(self) -> RecordingWriter:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing releases the flock
            self._lock_fd = None

    def _new_segment(self) -> None:
        name = f"{self._clock_ns():020d}-{os.getpid()}-{next(_counter):06d}"
        self._segment = Segment(_wal_dir(self.root) / f"{name}{SUFFIX}")
        self._segment_rows = {}
        self._segment_batches = []
        self._segment_count = 0
        self._segment_opened = time.monotonic()

    # -- input (event-loop thread)

    @property
    def pending(self) -> int:
        return len(self._pending) + len(self._raw)

    def add(self, row: Row) -> bool:
        """Queue a row for the next flush; False when the buffer is full (row dropped)."""
        size = len(row.raw) if row.raw else 64
        if (
            len(self._pending) + len(self._raw) >= self.max_pending_rows
            or self._pending_bytes + size > self.max_pending_bytes
        ):
            self._drop_count += 1
            self.stats.dropped += 1
            if self._drop_first_ns is None:
                self._drop_first_ns = row.received_at_ns
            self._drop_last_ns = row.received_at_ns
            return False
        if self._drop_count:
            self._note_drops()
        self._pending.append(row)
        self._pending_bytes += size
        if row.channel == SESSION_CHANNEL:
            self.stats.session_rows += 1
            if row.kind == "gap":
                self.stats.gaps += 1
        else:
            self.stats.messages += 1
            self.stats.bytes += size
            self._last_conn = row.connection_id
        return True

    def add_event(self, event: Any) -> bool:
        return self.add(row_from_event(event))

    def add_raw(self, text: str, received_at_ns: int, connection_id: str, seq: int) -> bool:
        """Queue a data message as the server sent it (the stream's raw callback; its
        columns are extracted at conversion); False when the buffer is full (dropped)."""
        # the hot path: called for every message on the receiving loop, so as few
        # attribute loads as possible; drops and runs of a new connection go the slow way
        size = len(text)
        pending_bytes = self._pending_bytes + size
        raw = self._raw
        texts = raw.texts
        if (
            connection_id is not raw.conn
            or self._drop_count
            or len(texts) + len(self._pending) >= self.max_pending_rows
            or pending_bytes > self.max_pending_bytes
        ):
            return self._add_raw_slow(text, received_at_ns, connection_id, seq)
        texts.append(text)
        raw.stamps.append(received_at_ns)
        raw.seqs.append(seq)
        self._pending_bytes = pending_bytes
        stats = self.stats
        stats.messages += 1
        stats.bytes += size
        return True

    def _add_raw_slow(self, text: str, received_at_ns: int, connection_id: str, seq: int) -> bool:
        size = len(text)
        raw = self._raw
        if (
            len(raw) + len(self._pending) >= self.max_pending_rows
            or self._pending_bytes + size > self.max_pending_bytes
        ):
            self._drop_count += 1
            self.stats.dropped += 1
            if self._drop_first_ns is None:
                self._drop_first_ns = received_at_ns
            self._drop_last_ns = received_at_ns
            self._last_conn = connection_id
            return False
        if self._drop_count:
            self._note_drops()
        raw.append(text, received_at_ns, connection_id, seq)
        self._pending_bytes += size
        stats = self.stats
        stats.messages += 1
        stats.bytes += size
        return True

    def _note_drops(self) -> None:
        count, first, last = self._drop_count, self._drop_first_ns, self._drop_last_ns
        self._drop_count = 0
        self._drop_first_ns = self._drop_last_ns = None
        # bypasses the bound on purpose: the record of a loss must not itself be lost
        self._pending.append(
            session_row(
                "dropped",
                received_at_ns=last if last is not None else self._clock_ns(),
                connection_id=self._last_conn,
                seq=-1,
                detail=f"{count} messages dropped: the writer fell behind",
                gap_start_ns=first,
                gap_end_ns=last,
            )
        )
        self.stats.session_rows += 1

    def take(self) -> list[Row]:
        """Hand the pending rows over, raw data messages converted to rows (slow: the
        recorder uses ``take_pending``)."""
        rows, raw = self.take_pending()
        return rows + rows_from_raw(raw)

    def take_pending(self) -> tuple[list[Row], RawBuffer]:
        """Hand the pending rows and raw messages over (to a flush on another thread)."""
        if self._drop_count:
            self._note_drops()
        rows, self._pending = self._pending, []
        raw, self._raw = self._raw, RawBuffer()
        if raw.conns:
            self._last_conn = raw.conns[-1][1]
        self._pending_bytes = 0
        return rows, raw

    def append_pending(self, pending: tuple[Sequence[Row], RawBuffer | Sequence[RawItem]]) -> None:
        """Append what ``take_pending`` handed over to the current segment: the rows one
        record each, the raw messages as one Arrow batch record (no per-row Python)."""
        rows, raw = pending
        self.append(rows)
        if raw:
            if self._segment is None:
                raise RuntimeError("writer is not open")
            batch = raw_batch(raw)
            head, body = _batch_record(batch)
            self._segment.write(head)
            self._segment.write(memoryview(body))
            self._segment_batches.append(batch)
            self._segment_count += len(raw)
            self._unsynced += len(raw)

    # -- output (worker thread)

    def append(self, rows: Sequence[Row]) -> None:
        """Encode rows into the current segment's buffer (not yet durable: ``sync``).

        Meant for the event-loop thread: this is per-row Python work, and running it on a
        worker thread would make the receiving loop wait for the GIL after every read."""
        if self._segment is None:
            raise RuntimeError("writer is not open")
        if rows:
            self._segment.write_rows(rows)
            bucket_rows(rows, self._segment_rows)
            self._segment_count += len(rows)
            self._unsynced += len(rows)

    def sync(self) -> None:
        """Make every appended row durable (flush + fsync; releases the GIL)."""
        if self._segment is None:
            raise RuntimeError("writer is not open")
        count, self._unsynced = self._unsynced, 0
        self._segment.sync()
        self.stats.flushed_rows += count

    def write(self, rows: Sequence[Row]) -> None:
        """Append rows and make them durable."""
        self.append(rows)
        self.sync()

    def flush(self) -> None:
        self.append_pending(self.take_pending())
        self.sync()

    def rotation_due(self) -> bool:
        seg = self._segment
        if seg is None:
            return False
        return (
            seg.size >= self.rotate_bytes
            or self._segment_count >= self.rotate_rows
            or time.monotonic() - self._segment_opened >= self.rotate_interval
        )

    def rotation_overdue(self) -> bool:
        """The segment reached 4x a rotation limit: rotate even if that means waiting."""
        seg = self._segment
        if seg is None:
            return False
        return seg.size >= 4 * self.rotate_bytes or self._segment_count >= 4 * self.rotate_rows

    def roll(self) -> ClosedSegment | None:
        """Close the current segment (fsync) and start a new one; returns the closed
        segment with its rows (to be converted)."""
        old, rows, batches = self._segment, self._segment_rows, self._segment_batches
        self._unsynced = 0  # closing syncs them
        self._new_segment()
        return self._close_segment(old, rows, batches)

    def _close_segment(
        self, seg: Segment | None, rows: Buckets, batches: list[pa.RecordBatch]
    ) -> ClosedSegment | None:
        if seg is None:
            return None
        seg.close()
        return ClosedSegment(seg.path, rows, batches)

    def convert(self, closed: ClosedSegment | None) -> list[Path]:
        """Write a closed segment's rows as Parquet, then delete the segment."""
        if closed is None:
            return []
        files = write_parts(
            self.root,
            _merge(closed.rows, closed.batches),
            closed.path.stem,
            compression=self.compression,
        )
        closed.path.unlink()
        self.stats.files += len(files)
        _release_memory()
        return files

    def rotate(self, *, reopen: bool = True) -> list[Path]:
        """Close the current segment, convert it to Parquet, start a new one (or not)."""
        if reopen:
            return self.convert(self.roll())
        old, rows, batches = self._segment, self._segment_rows, self._segment_batches
        self._segment, self._segment_rows, self._segment_batches = None, {}, []
        self._unsynced = 0
        return self.convert(self._close_segment(old, rows, batches))


@dataclass(frozen=True, slots=True)
class ClosedSegment:
    """A segment that is complete on disk, with its rows still in memory."""

    path: Path
    rows: Buckets
    batches: list[pa.RecordBatch] = field(default_factory=list)


def _release_memory() -> None:
    """Hand the memory of a finished conversion back to the system: Arrow's allocator
    keeps freed pages for reuse otherwise, and the resident size stays at its peak."""
    import pyarrow as pa

    with contextlib.suppress(Exception):
        pa.default_memory_pool().release_unused()


def _background() -> None:
    """Initializer of the converter thread: a lower CPU priority for this thread only
    (Linux), so that on a busy machine conversions take the idle time and the receiving
    loop and the flushes (durability) keep theirs. Converting is never urgent: the rows are
    durable in the write-ahead segment already."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


def _lock(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # pragma: no cover - no flock on this platform: single writer trusted
        return fd
    except OSError as exc:
        os.close(fd)
        raise RecorderBusy(f"another recorder is writing to {path.parent.parent}") from exc
    return fd


# -------------------------------------------------------------------- the recorder


class Recorder:
    """Record WebSocket channels of ``client`` into a Parquet dataset at ``root``.

    ``await rec.run(duration=None)`` records until cancelled (or for ``duration``
    seconds); in a notebook, ``rec.start()`` runs it as a task on the running loop and
    ``await rec.stop()`` ends it once the last rows are written. ``rec.stats`` holds live
    counts. ``channels`` use the compact form ``"watchTicker:BTC/BRL"``.

    Every ``flush_interval`` seconds the pending rows reach the write-ahead segment and are
    fsynced (the most a crash can lose); every ``rotate_interval`` seconds or
    ``rotate_bytes`` of segment or ``rotate_rows`` rows, the rows become Parquet files. At most
    ``max_pending_rows`` / ``max_pending_bytes`` wait between flushes; beyond, messages are
    dropped, counted in ``stats.dropped`` and recorded as a ``dropped`` session row.
    ``stream_options`` go to ``client.stream()`` (e.g. ``ping_interval``, ``ws_url``).
    """

    def __init__(
        self,
        client: Client | Any,
        root: str | os.PathLike[str],
        channels: Sequence[str] = DEFAULT_CHANNELS,
        *,
        flush_interval: float = 1.0,
        rotate_interval: float = 60.0,
        rotate_bytes: int = 16 * 1024 * 1024,
        rotate_rows: int = 100_000,
        max_pending_rows: int = 200_000,
        max_pending_bytes: int = 64 * 1024 * 1024,
        compression: str = "zstd",
        reconnect: bool = True,
        on_status: Callable[[RecorderStats], None] | None = None,
        stream_options: Mapping[str, Any] | None = None,
    ) -> None:
        from toolkit._channels import parse_channel_spec

        if flush_interval <= 0:
            raise ValueError("flush_interval must be > 0")
        # validate every spec now, before anything connects
        self.subscriptions = [parse_channel_spec(spec) for spec in channels]
        self.channels = tuple(channels)
        self.client = client
        self.root = Path(root)
        self.flush_interval = flush_interval
        self.reconnect = reconnect
        self.on_status = on_status
        self.stream_options = dict(stream_options or {})
        self.writer = RecordingWriter(
            root,
            rotate_interval=rotate_interval,
            rotate_bytes=rotate_bytes,
            rotate_rows=rotate_rows,
            max_pending_rows=max_pending_rows,
            max_pending_bytes=max_pending_bytes,
            compression=compression,
        )
        self._task: asyncio.Task[RecorderStats] | None = None
        self._session: Any = None
        self._inflight: asyncio.Future[Any] | None = None
        self._converting: asyncio.Future[list[Path]] | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    @property
    def stats(self) -> RecorderStats:
        return self.writer.stats

    def __repr__(self) -> str:
        state = "running" if self.running else "idle"
        return f"Recorder(root={str(self.root)!r}, channels={list(self.channels)!r}, {state})"

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> asyncio.Task[RecorderStats]:
        """Run the recorder as a background task on the running loop (notebooks)."""
        if self.running:
            raise RuntimeError("recorder already running")
        self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task

    def stop(self) -> asyncio.Task[RecorderStats]:
        """Ask a ``start``ed recorder to finish; await the returned task to wait until the
        last rows are in Parquet."""
        if self._task is None:
            raise RuntimeError("recorder was not started")
        self._task.cancel()
        return asyncio.ensure_future(self._wait_stopped(self._task))

    @staticmethod
    async def _wait_stopped(task: asyncio.Task[RecorderStats]) -> RecorderStats:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
        # the run finished cleanly underneath a cancel: its result is the final stats
        if task.cancelled():
            raise asyncio.CancelledError
        return task.result()

    async def run(self, duration: float | None = None) -> RecorderStats:
        """Record until cancelled, or for ``duration`` seconds; always ends with every
        received row in Parquet. Returns the final stats."""
        writer = self.writer
        await asyncio.to_thread(writer.open)
        receiver = asyncio.ensure_future(self._receive())
        flusher = asyncio.ensure_future(self._flush_loop())
        try:
            done, _ = await asyncio.wait(
                {receiver, flusher},
                timeout=duration,
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in done:
                task.result()  # surface a failure of either
        except asyncio.CancelledError:
            pass  # a stop: fall through to the final flush and return normally
        finally:
            for task in (receiver, flusher):
                task.cancel()
            results = await asyncio.gather(receiver, flusher, return_exceptions=True)
            # a thread cannot be cancelled: wait for the write or conversion in flight
            # before the final flush touches the same files
            for op in (self._inflight, self._converting):
                if op is not None:
                    await asyncio.wait({op})
            if self._executor is not None:
                self._executor.shutdown(wait=False)
                self._executor = None
            await asyncio.to_thread(writer.close)
            self._report()
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                raise result
        return self.stats

    async def _receive(self) -> None:
        # Callbacks see every message synchronously, in order, without the hop through a
        # queue; the writer's bounded buffer is the queue that counts drops, so the session
        # has no main queue. Data messages take the raw path (their text as sent, no typed
        # event); session events still come typed, as rows of their own.
        writer = self.writer
        options = {"reconnect": self.reconnect, **self.stream_options, "queue_size": 0}
        session = self.client.stream(**options)
        add_raw = getattr(session, "add_raw_callback", None)
        if add_raw is not None:
            removers = [
                add_raw(writer.add_raw),
                session.add_callback(writer.add_event, channels=[SESSION_CHANNEL]),
            ]
        else:  # a stream without the raw path: typed events, re-encoded
            removers = [session.add_callback(writer.add_event)]

        def remove() -> None:
            for fn in removers:
                fn()

        try:
            async with session:
                self._session = session
                for channel, data in self.subscriptions:
                    await session.subscribe(channel, **data)
                await session.wait_closed()
                if session.error is not None:
                    raise session.error
        finally:
            remove()

    def _write_pending(self, pending: tuple[list[Row], list[RawItem]]) -> None:
        # in a worker thread: Arrow builds the batch column-wise in C, and the rows are
        # only the rare session rows
        self.writer.append_pending(pending)
        self.writer.sync()

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        op = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        self._inflight = op
        return await asyncio.shield(op)

    async def _flush_loop(self) -> None:
        writer = self.writer
        loop = asyncio.get_running_loop()
        next_at = loop.time() + self.flush_interval
        while True:
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            next_at = loop.time() + self.flush_interval
            await self._in_thread(self._write_pending, writer.take_pending())
            if writer.rotation_due():
                converting = self._converting
                # while the converter is busy the segment keeps growing (flushes, hence
                # durability, go on) up to a hard cap; one conversion at a time bounds memory
                busy = converting is not None and not converting.done()
                if busy and not writer.rotation_overdue():
                    self._report()
                    continue
                if converting is not None:
                    await asyncio.shield(converting)
                segment = await self._in_thread(writer.roll)
                self._converting = asyncio.ensure_future(
                    loop.run_in_executor(self._converter(), writer.convert, segment)
                )
            self._report()

    def _converter(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="recorder-convert", initializer=_background
            )
        return self._executor

    def _report(self) -> None:
        if self.on_status is not None:
            self.on_status(self.stats)
