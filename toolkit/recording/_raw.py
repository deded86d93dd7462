"""The recorder's raw fast path: data messages kept as (time, connection, seq, text), framed
as Arrow batch records of a segment, and their columns extracted in Arrow's JSON reader.
"""

from __future__ import annotations

import contextlib
import functools
import os
import struct
import zlib
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.profile import DEFAULT_PROFILE, EACH, Payloads, ServiceProfile, keyed_container
from toolkit.recording._chunk import CHUNK_MARK, decode_chunk
from toolkit.recording._files import Parts, bucket_rows
from toolkit.recording._misses import Misses, count_text_misses
from toolkit.recording._rows import (
    NS_PER_DAY,
    SESSION_CHANNEL,
    UNPARSED_CHANNEL,
    RawItem,
    recording_schema,
    rows_from_raw,
)
from toolkit.recording._wal import PROFILE_MARK, Row, decode_payload, iter_payloads

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


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


def batch_record(batch: pa.RecordBatch) -> tuple[bytes, Any]:
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
    head, body = batch_record(batch)
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
        head = payload[: len(_BATCH_MARK)]
        if head == PROFILE_MARK:
            continue
        if head == CHUNK_MARK:
            batches.append(decode_chunk(payload))
        elif head == _BATCH_MARK:
            batches.extend(_decode_batches(payload))
        else:
            rows.append(decode_payload(payload))
    return rows, batches


class _Fallback(Exception):
    """The fast extraction cannot handle this batch: convert it row by row."""


_ORDER_FIELDS = (("id", "text"), ("symbol", "text"), ("status", "text"), ("updatedAt", "num"))


class _Plan:
    """What the fast extraction reads under one profile: the paths of every extracted
    field and the explicit JSON schema that reaches them (None when two paths conflict,
    e.g. one field read as text and as a number: such a profile converts row by row)."""

    __slots__ = ("p", "profile", "schema", "unit")

    def __init__(self, profile: ServiceProfile) -> None:
        self.profile = profile
        self.p = profile.payloads
        self.unit = profile.orders.timestamp_unit
        self.schema = _json_schema(self.p)


def _json_schema(p: Payloads) -> pa.Schema | None:
    import pyarrow as pa

    wanted = [
        *_ORDER_FIELDS,
        (p.ticker_symbol, "text"),
        (p.ticker_bid, "text"),
        (p.ticker_ask, "text"),
        (p.ticker_last, "text"),
        (p.ticker_time, "num"),
        (p.balance_time, "num"),
    ]
    tree: dict[str, Any] = {}

    def put(node: dict[str, Any], path: str, leaf: Any) -> bool:
        *parents, name = path.split(".")
        for step in parents:
            node = node.setdefault(step, {})
            if not isinstance(node, dict):
                return False
        if name in node and node[name] != leaf:
            return False
        node[name] = leaf
        return True

    if keyed_container(p.tickers_list) is not None or EACH in (p.ticker_symbol, p.ticker_time):
        return None  # pairs keyed by symbol: the Python path reads them
    for path, kind in wanted:
        if not path or not put(tree, path, kind):
            return None
    if p.tickers_list:
        ticker: dict[str, Any] = {}
        if not p.ticker_time or not put(ticker, p.ticker_time, "num"):
            return None
        if not put(tree, p.tickers_list, ("list", ticker)):
            return None

    def arrow(node: Any) -> Any:
        if node == "text":
            return pa.string()
        if node == "num":
            return pa.float64()
        if isinstance(node, tuple):
            return pa.list_(arrow(node[1]))
        return pa.struct([(name, arrow(child)) for name, child in node.items()])

    return pa.schema([("channel", pa.string()), ("message", arrow(tree))])


_plans: dict[int, _Plan] = {}


def _plan(profile: ServiceProfile) -> _Plan:
    found = _plans.get(id(profile))
    if found is None or found.profile is not profile:
        if len(_plans) > 16:
            _plans.clear()
        found = _plans[id(profile)] = _Plan(profile)
    return found


def _ms_array(values: Any, unit: str = "auto") -> Any:
    """``_ms`` over a float64 array: seconds detected by magnitude (``unit`` "auto") or as
    the profile says, absurd values and zero null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mag = pc.abs(values)
    if unit == "s":
        scaled = pc.multiply(values, 1000.0)
    elif unit == "ms":
        scaled = values
    else:
        scaled = pc.if_else(pc.less(mag, 1e11), pc.multiply(values, 1000.0), values)
    sane = pc.and_(pc.less_equal(mag, 1e16), pc.greater(mag, 0.0))
    as_int = pc.cast(pc.if_else(sane, scaled, None), pa.int64(), safe=False)
    return as_int


def _extract(
    raw: pa.Table, profile: ServiceProfile = DEFAULT_PROFILE, misses: Misses | None = None
) -> pa.Table:
    """The recording-schema table of a table of raw data messages, every column extracted
    in Arrow (C++) where ``profile`` says; raises _Fallback for what only the Python path
    handles exactly. ``misses``: count there the ``payloads.*`` settings whose field a
    message lacks (only the messages with a null mapped field are read in Python)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    plan = _plan(profile)
    if plan.schema is None:
        raise _Fallback
    p, unit = plan.p, plan.unit
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
                explicit_schema=plan.schema, unexpected_field_behavior="ignore"
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise _Fallback from exc
    if parsed.num_rows != n:
        raise _Fallback
    channel = pc.utf8_lower(parsed.column("channel").combine_chunks())
    if channel.null_count:
        raise _Fallback  # not an object with a text channel
    # the session channel's name is the recorder's own: a data message never files there
    claims_session = pc.equal(channel, SESSION_CHANNEL)
    if pc.any(claims_session).as_py():
        channel = pc.if_else(claims_session, UNPARSED_CHANNEL, channel)
    message = parsed.column("message").combine_chunks()

    def field_(path: str) -> Any:
        value = message
        for step in path.split("."):
            value = pc.struct_field(value, step)
        return value

    is_o = pc.equal(channel, "watchorders")
    is_t = pc.equal(channel, "watchticker")
    is_ts = pc.equal(channel, "watchtickers")
    is_b = pc.equal(channel, "watchbalance")
    text_null = pa.scalar(None, pa.string())
    int_null = pa.scalar(None, pa.int64())
    order_id = pc.if_else(is_o, field_("id"), text_null)
    if pc.any(pc.and_(is_o, pc.is_null(order_id))).as_py():
        raise _Fallback  # an id under another usual name: the Python path finds it
    symbol = pc.if_else(
        is_o, field_("symbol"), pc.if_else(is_t, field_(p.ticker_symbol), text_null)
    )
    status = pc.if_else(is_o, field_("status"), text_null)

    def number(path: str) -> Any:
        value = field_(path)
        value = pc.if_else(pc.equal(value, ""), text_null, value)  # "" is null, as _num
        try:
            out = pc.cast(value, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise _Fallback from exc
        return pc.if_else(is_t, out, pa.scalar(None, pa.float64()))

    updated = pc.if_else(
        is_o,
        _ms_array(field_("updatedAt"), unit),
        pc.if_else(
            is_t,
            _ms_array(field_(p.ticker_time), unit),
            pc.if_else(is_b, _ms_array(field_(p.balance_time), unit), int_null),
        ),
    )
    if pc.any(is_ts).as_py():
        if not p.tickers_list:
            raise _Fallback  # the payload is the list itself: not an object to read here
        tickers = pc.if_else(
            is_ts, field_(p.tickers_list), pa.scalar(None, field_(p.tickers_list).type)
        )
        flat = pc.list_flatten(tickers)
        for step in p.ticker_time.split("."):
            flat = pc.struct_field(flat, step)
        flat = _ms_array(flat, unit)
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
        number(p.ticker_bid),
        number(p.ticker_ask),
        number(p.ticker_last),
        nulls["kind"],
        nulls["detail"],
        ts_null,
        ts_null,
        pc.cast(texts, pa.string()),
    ]
    if misses is not None:
        # absent and null look alike here: the few rows with a null are told apart in Python
        empty = [pc.fill_null(pc.equal(symbol, ""), True)]
        empty += [pc.is_null(field_(path)) for path in (p.ticker_bid, p.ticker_ask)]
        empty += [pc.is_null(field_(path)) for path in (p.ticker_last, p.ticker_time)]
        maybe = pc.or_(
            pc.and_(is_t, functools.reduce(pc.or_, empty)),
            pc.or_(
                pc.and_(is_b, pc.is_null(field_(p.balance_time))),
                pc.and_(is_ts, pc.is_null(updated)),
            ),
        )
        if pc.any(maybe).as_py():
            found = texts.filter(maybe).to_pylist()
            count_text_misses(channel.filter(maybe).to_pylist(), found, profile, misses)
    return pa.Table.from_arrays(columns, schema=schema)


def tables_from_raw(
    batches: Sequence[pa.RecordBatch],
    profile: ServiceProfile = DEFAULT_PROFILE,
    misses: Misses | None = None,
) -> Parts:
    """Raw batches as recording-schema tables grouped by (channel, UTC day), their columns
    extracted where ``profile`` says; ``misses``: count there the ``payloads.*`` settings
    whose field a message lacks."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: Parts = {}
    if not batches or not sum(b.num_rows for b in batches):
        return out
    raw = pa.Table.from_batches(batches)
    try:
        table = _extract(raw, profile, misses)
    except _Fallback:
        columns = [raw.column(i).to_pylist() for i in range(4)]
        rows = rows_from_raw(zip(*columns, strict=True), profile, misses)
        for key, bucket in bucket_rows(rows).items():
            out.setdefault(key, []).append(bucket)
        return out
    channels = table.column("channel")
    span = pc.min_max(raw.column("received_at"))
    first, last = span["min"].as_py() // NS_PER_DAY, span["max"].as_py() // NS_PER_DAY
    if first == last:  # the usual case: one day, no group-by
        names = pc.unique(channels).to_pylist()
        if len(names) == 1:
            out[(names[0], first)] = [table]
            return out
        for channel in names:
            out[(channel, first)] = [table.filter(pc.equal(channels, channel))]
        return out
    day = pc.divide(raw.column("received_at"), NS_PER_DAY)
    keys = pa.table({"c": table.column("channel"), "d": day}).group_by(["c", "d"]).aggregate([])
    for channel, d in zip(keys.column("c").to_pylist(), keys.column("d").to_pylist(), strict=True):
        mask = pc.and_(pc.equal(table.column("channel"), channel), pc.equal(day, d))
        out.setdefault((channel, d), []).append(table.filter(mask))
    return out


def warm_up(profile: ServiceProfile = DEFAULT_PROFILE) -> None:
    """Run the extraction once on a few tiny messages. Its first run imports what Arrow
    loads lazily (pandas among it, through pyarrow's pandas shim): an import holds the GIL
    for up to a second, which the receiving loop must not lose in the middle of a
    recording."""
    import pyarrow as pa
    import pyarrow.ipc
    import pyarrow.parquet

    texts = [
        '{"channel":"watchorders","message":{"id":"o","status":"OPEN","updatedAt":1}}',
        '{"channel":"watchticker","message":{"symbol":"A/B","bid":"1","timestamp":1}}',
        '{"channel":"watchtickers","message":{"tickers":[{"timestamp":1}]}}',
    ]
    buffer = RawBuffer()
    for seq, text in enumerate(texts, 1):
        buffer.append(text, seq, "warm-up", seq)
    _extract(pa.Table.from_batches([buffer.batch()]))
    if profile is not DEFAULT_PROFILE:
        with contextlib.suppress(_Fallback):  # its plan built now, not mid-recording
            _extract(pa.Table.from_batches([buffer.batch()]), profile)
