"""Raw fetchOrder bodies -> typed pandas DataFrames (orders, trades, fees, evaluated_tickers,
fills) through pyarrow, and their Parquet / CSV exports: PRODUCT.md "Data model of the frames".

The bodies are parsed in one pass by ``pyarrow.json`` with an explicit schema for the known
fields (inference keeps the unknown ones), structs are flattened to dotted columns and the
lists are exploded with ``list_flatten`` / ``list_parent_indices``; no per-order Python runs
on the fast path. Input the fast path cannot take (a field whose JSON type changes between
orders, a pretty-printed or broken body) goes through a slower repair pass that coerces the
offending fields to strings, so one odd order never makes the whole load fail.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pj
import pyarrow.parquet as pq

from toolkit.frames._schema import (
    EVALUATED_TICKER,
    FILL_CONTEXT,
    FRAME_NAMES,
    ORDER,
    TRADE,
    Field,
    ListOf,
    Struct,
    columns_of_kind,
)

__all__ = ["OrderFrames", "RawOrder", "build_frames"]

RawOrder = bytes | bytearray | memoryview | str | Mapping[str, Any]

#: exact decimals: 20 integer and 18 fractional digits hold any price or quantity we know of;
#: a column that needs more is widened (see _exact_type), never rounded
EXACT_DECIMAL = pa.decimal128(38, 18)
TIMESTAMP = pa.timestamp("ms", tz="UTC")
# below this a Unix time is in seconds: 1e11 s is the year 5138, 1e11 ms is 1973
_SECONDS_BELOW = 100_000_000_000
# large blocks keep the parser's per-block overhead low; threads split the blocks
_BLOCK_SIZE = 4 << 20
_NUMBER_RE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_PARQUET_META_KEY = b"toolkit.frames"
_INT64 = (-(2**63), 2**63 - 1)

Path_ = tuple[str, ...]  # a field's place in the JSON; "[]" steps into list items


# --------------------------------------------------------------------------- schema


def _wire_type(spec: Field) -> pa.DataType:
    if isinstance(spec, Struct):
        return pa.struct([pa.field(name, _wire_type(sub)) for name, sub in spec.items()])
    if isinstance(spec, ListOf):
        return pa.list_(_wire_type(spec.item))
    return pa.int64() if spec == "ts" else pa.string()


#: what pyarrow.json is told about the known fields: decimals stay text until we cast them
WIRE_SCHEMA = pa.schema(
    [pa.field(name, _wire_type(spec)) for name, spec in ORDER.items()]  # type: ignore[arg-type]
)

_ORDER_DEC = columns_of_kind(ORDER, "dec")
_ORDER_TS = columns_of_kind(ORDER, "ts")
_TRADE_DEC = columns_of_kind(TRADE, "dec")
_TRADE_TS = columns_of_kind(TRADE, "ts")
_TICKER_DEC = columns_of_kind(EVALUATED_TICKER, "dec")
_TICKER_TS = columns_of_kind(EVALUATED_TICKER, "ts")


def _with_type(dtype: pa.DataType, path: Path_, new: pa.DataType) -> pa.DataType:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if head == "[]" and pa.types.is_list(dtype):
        return pa.list_(_with_type(dtype.value_type, rest, new))
    if pa.types.is_struct(dtype):
        return pa.struct(
            [
                pa.field(f.name, _with_type(f.type, rest, new)) if f.name == head else f
                for f in dtype
            ]
        )
    return dtype


def _schema_with(overrides: Mapping[Path_, pa.DataType]) -> pa.Schema:
    root = pa.struct(list(WIRE_SCHEMA))
    for path, new in overrides.items():
        root = _with_type(root, path, new)
    return pa.schema(list(root))


# --------------------------------------------------------------------------- input


def _json_default(value: Any) -> Any:
    # decimals travel as strings on the wire; keep every digit
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


_dumps = json.JSONEncoder(separators=(",", ":"), default=_json_default).encode


def _bodies(raw_orders: Sequence[RawOrder]) -> list[bytes]:
    if isinstance(raw_orders, str | bytes | bytearray | Mapping):
        raise TypeError("build_frames takes a sequence of orders, not a single order")
    out: list[bytes] = []
    append = out.append
    for i, item in enumerate(raw_orders):
        if isinstance(item, bytes):
            append(item)
        elif isinstance(item, str):
            append(item.encode())
        elif isinstance(item, bytearray | memoryview):
            append(bytes(item))
        elif isinstance(item, Mapping):
            append(_dumps(item).encode())
        else:
            raise TypeError(
                f"order #{i}: expected bytes, str or a mapping, got {type(item).__name__}"
            )
    return out


def _join(bodies: list[bytes]) -> bytes:
    data = b"\n".join(bodies)
    if data.count(b"\n") != len(bodies) - 1:
        # a raw newline can only be whitespace between tokens (JSON escapes it in strings),
        # so a pretty-printed body becomes one line by blanking them
        data = b"\n".join(
            b.replace(b"\r", b" ").replace(b"\n", b" ") if b"\n" in b else b for b in bodies
        )
    return data


def _read(data: bytes, schema: pa.Schema) -> pa.Table:
    return pj.read_json(
        pa.BufferReader(data),
        read_options=pj.ReadOptions(block_size=_BLOCK_SIZE, use_threads=True),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer"),
    )


class _RowCountMismatch(Exception):
    pass


def _parse(bodies: list[bytes]) -> pa.Table:
    if not bodies:
        return WIRE_SCHEMA.empty_table()
    try:
        table = _read(_join(bodies), WIRE_SCHEMA)
        if table.num_rows != len(bodies):
            raise _RowCountMismatch
        return table
    except (pa.ArrowInvalid, _RowCountMismatch):
        pass
    data, overrides = _repair(bodies)
    try:
        table = _read(data, _schema_with(overrides))
    except pa.ArrowInvalid as exc:
        raise ValueError(f"could not normalise the orders: {exc}") from exc
    if table.num_rows != len(bodies):  # pragma: no cover - _repair emits one line per body
        raise ValueError(f"expected {len(bodies)} orders, parsed {table.num_rows}")
    return table


# --------------------------------------------------------------------------- repair pass
# Only runs when pyarrow refused the input. It finds, per JSON path, the kinds of value the
# orders hold, and rewrites the paths pyarrow cannot type: unknown fields whose kind changes
# become strings, known text fields holding numbers/objects become their JSON text, known
# timestamps holding fractions become float64 (strings: text), and a known object or list
# holding something else is dropped to null with a warning.


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if _INT64[0] <= value <= _INT64[1] else "bigint"
    if isinstance(value, float | Decimal):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    return "array"


def _observe(value: Any, path: Path_, kinds: dict[Path_, set[str]]) -> None:
    kind = _kind(value)
    seen = kinds.get(path)
    if seen is None:
        kinds[path] = seen = set()
    seen.add(kind)
    if kind == "object":
        for key, sub in value.items():
            _observe(sub, (*path, key), kinds)
    elif kind == "array":
        for sub in value:
            _observe(sub, (*path, "[]"), kinds)


def _known_fields(spec: Field, path: Path_, out: dict[Path_, Field]) -> None:
    out[path] = spec
    if isinstance(spec, Struct):
        for name, sub in spec.items():
            _known_fields(sub, (*path, name), out)
    elif isinstance(spec, ListOf):
        _known_fields(spec.item, (*path, "[]"), out)


_KNOWN: dict[Path_, Field] = {}
for _name, _spec in ORDER.items():
    _known_fields(_spec, (_name,), _KNOWN)

_FAMILY = {"bool": "bool", "int": "number", "float": "number", "string": "string"}


def _plan(kinds: dict[Path_, set[str]]) -> tuple[dict[Path_, str], dict[Path_, pa.DataType]]:
    """Action per path ("text" or "null") and the wire type each repaired path gets."""
    actions: dict[Path_, str] = {}
    overrides: dict[Path_, pa.DataType] = {}
    for path in sorted(kinds, key=len):
        if any(path[:n] in actions for n in range(1, len(path))):
            continue  # an ancestor is already rewritten as a whole
        seen = kinds[path] - {"null"}
        spec = _KNOWN.get(path)
        if isinstance(spec, Struct | ListOf):
            expected = "object" if isinstance(spec, Struct) else "array"
            if seen - {expected}:
                actions[path] = "null"
        elif spec in ("str", "dec"):
            if seen - {"string"}:
                actions[path] = "text"
        elif spec == "ts":
            if seen - {"int", "float"}:
                actions[path] = "text"
                overrides[path] = pa.string()
            elif "float" in seen:
                overrides[path] = pa.float64()
        else:
            families = {_FAMILY.get(kind, kind) for kind in seen}
            if len(families) > 1 or "bigint" in families:
                actions[path] = "text"
    return actions, overrides


def _as_text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return str(value)  # the number exactly as written
    return json.dumps(value, separators=(",", ":"), default=float)


def _rewrite(value: Any, path: Path_, actions: dict[Path_, str], nulled: dict[Path_, int]) -> Any:
    action = actions.get(path)
    if action == "text":
        return _as_text(value)
    if action == "null":
        spec = _KNOWN[path]
        ok = dict if isinstance(spec, Struct) else list
        if value is not None and not isinstance(value, ok):
            nulled[path] = nulled.get(path, 0) + 1
            return None
    if isinstance(value, dict):
        return {k: _rewrite(v, (*path, k), actions, nulled) for k, v in value.items()}
    if isinstance(value, list):
        item_path = (*path, "[]")
        return [_rewrite(v, item_path, actions, nulled) for v in value]
    return value


def _repair(bodies: list[bytes]) -> tuple[bytes, dict[Path_, pa.DataType]]:
    docs: list[dict[str, Any]] = []
    for i, body in enumerate(bodies):
        try:
            doc = json.loads(body, parse_float=Decimal)
        except ValueError as exc:
            raise ValueError(f"order #{i} is not valid JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise ValueError(f"order #{i} is not a JSON object but {_kind(doc)}")
        docs.append(doc)
    kinds: dict[Path_, set[str]] = {}
    for doc in docs:
        for key, value in doc.items():
            _observe(value, (key,), kinds)
    actions, overrides = _plan(kinds)
    nulled: dict[Path_, int] = {}
    encode = json.JSONEncoder(separators=(",", ":"), default=float).encode
    lines = []
    for doc in docs:
        fixed = {k: _rewrite(v, (k,), actions, nulled) for k, v in doc.items()}
        lines.append(encode(fixed).encode())
    for path, count in nulled.items():
        warnings.warn(
            f"{count} order(s) had a non-{'object' if isinstance(_KNOWN[path], Struct) else 'list'}"
            f" value in {'.'.join(path)}; it was set to null",
            RuntimeWarning,
            stacklevel=4,
        )
    return b"\n".join(lines), overrides


# --------------------------------------------------------------------------- columns


def _flatten(table: pa.Table) -> pa.Table:
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def _exact_type(values: pa.ChunkedArray) -> pa.DataType | None:
    """The narrowest decimal type holding every value exactly (None: none does)."""
    whole = scale = 0
    for text in pc.unique(values).to_pylist():
        if text is None:
            continue
        try:
            _, digits, exponent = Decimal(text).normalize().as_tuple()
        except InvalidOperation:
            continue
        if not isinstance(exponent, int):
            continue
        scale = max(scale, -exponent)
        whole = max(whole, len(digits) + exponent)
    for precision in (38, 76):
        if whole + scale <= precision:
            wide_scale = max(scale, min(18, precision - whole))
            make = pa.decimal128 if precision == 38 else pa.decimal256
            return make(precision, wide_scale)
    return None


def _to_decimal(col: pa.ChunkedArray, exact: bool, name: str) -> pa.ChunkedArray:
    target = EXACT_DECIMAL if exact else pa.float64()
    if pa.types.is_null(col.type):
        return pa.chunked_array([pa.nulls(len(col), target)])
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = pc.cast(col, pa.string())
    with suppress(pa.ArrowInvalid):
        return pc.cast(col, target)
    # slow path: blanks and non-numbers become null, oversize exact values widen the type
    col = pc.utf8_trim_whitespace(col)
    numeric = pc.match_substring_regex(col, _NUMBER_RE)
    # "" is how the service says "no value"; only real garbage deserves a warning
    bad = pc.sum(pc.and_(pc.not_equal(col, ""), pc.invert(numeric))).as_py() or 0
    col = pc.if_else(numeric, col, pa.scalar(None, col.type))
    if bad:
        warnings.warn(
            f"{bad} value(s) of {name} are not numbers; they were set to null",
            RuntimeWarning,
            stacklevel=4,
        )
    if not exact:
        return pc.cast(col, target)
    with suppress(pa.ArrowInvalid):
        return pc.cast(col, target)
    wide = _exact_type(col)
    if wide is None:
        warnings.warn(f"{name} needs more than 76 digits; kept as text", RuntimeWarning, 4)
        return col
    return pc.cast(col, wide)


def _epoch_ms(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Numbers of one column -> int64 Unix milliseconds, seconds detected by magnitude."""
    biggest = pc.max(pc.abs(col)).as_py()
    if biggest is not None and biggest < _SECONDS_BELOW:
        col = pc.multiply(col, 1000)
    if pa.types.is_floating(col.type):
        col = pc.round(col)
    return pc.cast(col, pa.int64())


def _to_timestamp(col: pa.ChunkedArray, name: str) -> pa.ChunkedArray:
    if pa.types.is_null(col.type):
        return pa.chunked_array([pa.nulls(len(col), TIMESTAMP)])
    if pa.types.is_timestamp(col.type):
        return pc.cast(col, TIMESTAMP)
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        return pc.cast(_epoch_ms(col), TIMESTAMP)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = pc.cast(col, pa.string())
    # text: numbers in a string (the magnitude rule applies to them alone), else ISO 8601
    numeric = pc.fill_null(pc.match_substring_regex(col, _NUMBER_RE), False)
    numbers = pc.cast(pc.if_else(numeric, col, pa.scalar(None, col.type)), pa.float64())
    epoch = _epoch_ms(numbers)
    others = pc.and_(pc.is_valid(col), pc.invert(numeric))
    if not pc.any(others).as_py():
        return pc.cast(epoch, TIMESTAMP)
    texts = pc.if_else(others, col, pa.scalar(None, col.type)).to_pylist()
    parsed = pd.to_datetime(
        pd.Series(texts, dtype=object), utc=True, errors="coerce", format="ISO8601"
    )
    lost = int(parsed.isna().sum()) - (len(texts) - int(pc.sum(others).as_py() or 0))
    if lost:
        warnings.warn(
            f"{lost} value(s) of {name} are not timestamps; they were set to null",
            RuntimeWarning,
            stacklevel=4,
        )
    from_text = pa.array(parsed.dt.as_unit("ms"), type=TIMESTAMP)
    return pc.if_else(numeric, pc.cast(epoch, TIMESTAMP), from_text)


def _convert(
    table: pa.Table, decimals: frozenset[str], timestamps: frozenset[str], exact: bool
) -> pa.Table:
    for i, name in enumerate(table.column_names):
        if name in decimals:
            table = table.set_column(i, name, _to_decimal(table.column(i), exact, name))
        elif name in timestamps:
            table = table.set_column(i, name, _to_timestamp(table.column(i), name))
    return table


def _explode(lists: pa.ChunkedArray) -> tuple[pa.Table, np.ndarray]:
    """The items of a list<struct> column as a flat table, and each item's row number."""
    parts: list[pa.Table] = []
    parents: list[np.ndarray] = []
    offset = 0
    for chunk in lists.chunks:
        parts.append(pa.Table.from_struct_array(pc.list_flatten(chunk)))
        parents.append(pc.list_parent_indices(chunk).to_numpy().astype(np.int64) + offset)
        offset += len(chunk)
    if not parts:
        empty = pa.array([], lists.type.value_type)
        return pa.Table.from_struct_array(empty), np.zeros(0, np.int64)
    return pa.concat_tables(parts), np.concatenate(parents)


def _take(col: pa.ChunkedArray, rows: np.ndarray) -> pa.ChunkedArray:
    return col.take(pa.array(rows, pa.int64()))


def _canonical_status(table: pa.Table) -> pa.Table:
    i = table.column_names.index("status")
    raw = table.column(i)
    if not (pa.types.is_string(raw.type) or pa.types.is_large_string(raw.type)):
        raw = pc.cast(raw, pa.string())
    canonical = pc.utf8_upper(raw)
    return table.set_column(i, "status", canonical).add_column(i + 1, "statusRaw", raw)


def _build_tables(table: pa.Table, exact: bool) -> dict[str, pa.Table]:
    ids = table.column("id")
    fee_present = pc.is_valid(table.column("fee"))
    orders = _flatten(table.drop_columns(["trades", "evaluatedTickers"]))
    orders = _canonical_status(_convert(orders, _ORDER_DEC, _ORDER_TS, exact))

    items, trade_rows = _explode(table.column("trades"))
    trades = _convert(_flatten(items), _TRADE_DEC, _TRADE_TS, exact)
    trades = trades.add_column(0, "orderId", _take(ids, trade_rows))

    items, quote_rows = _explode(table.column("evaluatedTickers"))
    quotes = _convert(_flatten(items), _TICKER_DEC, _TICKER_TS, exact)
    # quote_rows is sorted, so an item's rank is its distance from its order's first item
    rank = np.arange(len(quote_rows), dtype=np.int64) - np.searchsorted(
        quote_rows, quote_rows, side="left"
    )
    quotes = quotes.add_column(0, "rank", pa.array(rank, pa.int64()))
    quotes = quotes.add_column(0, "orderId", _take(ids, quote_rows))

    with_fee = orders.filter(fee_present)
    fee_columns = [n for n in with_fee.column_names if n.startswith("fee.")]
    fees = pa.table(
        {
            "orderId": with_fee.column("id"),
            "symbol": with_fee.column("symbol"),
            **{n.removeprefix("fee."): with_fee.column(n) for n in fee_columns},
            "operationalFees": with_fee.column("operationalFees"),
        }
    )

    fills = trades
    for source, target in FILL_CONTEXT:
        fills = fills.append_column(target, _take(orders.column(source), trade_rows))
        if source == "executedExchange":
            executed = fills.column(target)
            usable = pc.and_(pc.is_valid(executed), pc.not_equal(executed, ""))
            venue = pc.if_else(
                pc.fill_null(usable, False), executed, _take(orders.column("exchange"), trade_rows)
            )
            fills = fills.append_column("venue", venue)
    return {
        "orders": orders,
        "trades": trades,
        "fees": fees,
        "evaluated_tickers": quotes,
        "fills": fills,
    }


def _types_mapper(dtype: pa.DataType) -> pd.api.extensions.ExtensionDtype | None:
    # exact decimals stay Arrow-backed; numpy has no decimal dtype and object would copy
    if pa.types.is_decimal(dtype):
        return pd.ArrowDtype(dtype)
    return None


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas(types_mapper=_types_mapper)


def build_frames(raw_orders: Sequence[RawOrder], *, exact: bool = False) -> OrderFrames:
    """Normalise fetchOrder bodies into :class:`OrderFrames`.

    ``raw_orders`` holds one order per item: the raw response body (bytes or str) or an
    already-parsed mapping. Decimal strings become float64, or exact ``decimal128(38, 18)``
    (wider when a value needs it) with ``exact=True``; timestamps become
    ``datetime64[ms, UTC]`` whether sent in seconds or milliseconds (decided per column:
    values below 1e11 are seconds). Unknown fields are kept as columns with their JSON types;
    a field whose type changes between orders becomes text. Raises ``ValueError`` for a body
    that is not a JSON object and ``TypeError`` for an item of another type.
    """
    return _from_tables(_build_tables(_parse(_bodies(raw_orders)), exact))


def _from_tables(tables: Mapping[str, pa.Table], missing: list[str] | None = None) -> OrderFrames:
    return OrderFrames(
        orders=_to_pandas(tables["orders"]),
        trades=_to_pandas(tables["trades"]),
        fees=_to_pandas(tables["fees"]),
        evaluated_tickers=_to_pandas(tables["evaluated_tickers"]),
        fills=_to_pandas(tables["fills"]),
        missing=list(missing or []),
    )


# --------------------------------------------------------------------------- export


def _atomic_write(path: Path, write: Callable[[str], None]) -> None:
    """Write through a temporary file in the same directory, then rename over ``path``, so
    a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _to_arrow(df: pd.DataFrame) -> pa.Table:
    table = pa.Table.from_pandas(df, preserve_index=False)
    for i, f in enumerate(table.schema):
        if pa.types.is_null(f.type):
            # an all-null column of unknown type: text is what every reader accepts
            table = table.set_column(i, f.name, pa.nulls(table.num_rows, pa.string()))
        elif pa.types.is_timestamp(f.type) and f.type.tz is None:
            table = table.set_column(
                i, f.name, pc.assume_timezone(table.column(i), timezone="UTC").cast(TIMESTAMP)
            )
    return table


def _csv_column(col: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    dtype = col.type
    if pa.types.is_timestamp(dtype):
        # ISO 8601 in UTC; %S carries the milliseconds of a ms column
        return pc.strftime(pc.cast(col, TIMESTAMP), format="%Y-%m-%dT%H:%M:%SZ")
    if pa.types.is_nested(dtype) or pa.types.is_null(dtype):
        return pa.array(
            [None if v is None else json.dumps(v, default=str) for v in col.to_pylist()],
            pa.string(),
        )
    return col


@dataclass(eq=False, repr=False)
class OrderFrames:
    """The orders of an account as five DataFrames (docs/contracts.md "Frames").

    ``missing`` lists the ids the loader could not fetch; ``attrs`` is free metadata (the
    loader records how and when the frames were loaded).
    """

    orders: pd.DataFrame
    trades: pd.DataFrame
    fees: pd.DataFrame
    evaluated_tickers: pd.DataFrame
    fills: pd.DataFrame
    missing: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def empty(cls, *, exact: bool = False) -> OrderFrames:
        """Frames with no rows and the full typed schema of every known column."""
        return build_frames([], exact=exact)

    def frames(self) -> dict[str, pd.DataFrame]:
        """Name -> DataFrame, in the order of the contract."""
        return {name: getattr(self, name) for name in FRAME_NAMES}

    def __iter__(self) -> Iterator[tuple[str, pd.DataFrame]]:
        return iter(self.frames().items())

    def __len__(self) -> int:
        return len(self.orders)

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}={len(df)}" for name, df in self.frames().items())
        return f"OrderFrames({counts}, missing={len(self.missing)})"

    # ------------------------------------------------------------------ exports

    def to_parquet(self, directory: str | os.PathLike[str]) -> dict[str, Path]:
        """Write ``<name>.parquet`` per frame (zstd) into ``directory``; returns the paths.

        Timestamps are ``timestamp[ms, tz=UTC]`` and exact decimals ``decimal128``, so
        DuckDB, Polars and Spark read the files as they are."""
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        paths: dict[str, Path] = {}
        for name, df in self.frames().items():
            table = _to_arrow(df)
            if name == "orders":
                meta = dict(table.schema.metadata or {})
                meta[_PARQUET_META_KEY] = json.dumps({"missing": list(self.missing)}).encode()
                table = table.replace_schema_metadata(meta)
            path = root / f"{name}.parquet"
            _atomic_write(path, partial(pq.write_table, table, compression="zstd"))
            paths[name] = path
        return paths

    def to_csv(self, directory: str | os.PathLike[str]) -> dict[str, Path]:
        """Write ``<name>.csv`` per frame into ``directory``; returns the paths.

        UTF-8, a header row, ``,`` separators, ``.`` decimal points, ISO 8601 UTC timestamps
        (``2026-11-01T12:00:00.123Z``), empty cells for nulls, nested values as JSON text."""
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        paths: dict[str, Path] = {}
        for name, df in self.frames().items():
            table = _to_arrow(df)
            table = pa.table(
                {n: _csv_column(table.column(n)) for n in table.column_names}
                if table.num_columns
                else {}
            )
            path = root / f"{name}.csv"
            _atomic_write(path, partial(pcsv.write_csv, table))
            paths[name] = path
        return paths

    @classmethod
    def read_parquet(cls, directory: str | os.PathLike[str]) -> OrderFrames:
        """Read back what :meth:`to_parquet` wrote, with the same dtypes."""
        root = Path(directory)
        tables = {name: pq.read_table(root / f"{name}.parquet") for name in FRAME_NAMES}
        meta = (tables["orders"].schema.metadata or {}).get(_PARQUET_META_KEY)
        missing = list(json.loads(meta)["missing"]) if meta else []
        return _from_tables(tables, missing)

    # ------------------------------------------------------------------ notebook

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = "".join(
            f"<tr><td>{esc(name)}</td><td>{len(df):,}</td><td>{df.shape[1]}</td></tr>"
            for name, df in self.frames().items()
        )
        parts = [
            "<div class='toolkit-order-frames'><strong>OrderFrames</strong>",
            "<table><thead><tr><th>frame</th><th>rows</th><th>columns</th></tr></thead>",
            f"<tbody>{rows}</tbody></table>",
        ]
        if "status" in self.orders and len(self.orders):
            counts = self.orders["status"].value_counts(dropna=False).head(20)
            cells = "".join(
                f"<tr><td>{esc(str(status))}</td><td>{int(n):,}</td></tr>"
                for status, n in counts.items()
            )
            parts.append(
                "<table><thead><tr><th>status</th><th>orders</th></tr></thead>"
                f"<tbody>{cells}</tbody></table>"
            )
        if "createdAt" in self.orders and self.orders["createdAt"].notna().any():
            first, last = self.orders["createdAt"].min(), self.orders["createdAt"].max()
            parts.append(f"<p>createdAt from {esc(str(first))} to {esc(str(last))}</p>")
        if self.missing:
            parts.append(f"<p>{len(self.missing):,} order(s) could not be loaded</p>")
        parts.append("</div>")
        return "".join(parts)
