"""The wire table -> the five frame tables (orders, trades, fees, evaluated_tickers, fills):
decimal and timestamp columns, the status case, the trades/evaluatedTickers explode, fills."""

from __future__ import annotations

import warnings
from contextlib import suppress
from decimal import Decimal, InvalidOperation

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.frames._schema import (
    FILL_CONTEXT,
    ORDER,
    TRADE,
    QuoteFields,
    columns_of_kind,
    quote_struct,
)

#: exact decimals: 20 integer and 18 fractional digits hold any price or quantity we know of;
#: a column that needs more is widened (see _exact_type), never rounded
EXACT_DECIMAL = pa.decimal128(38, 18)
TIMESTAMP = pa.timestamp("ms", tz="UTC")
# below this a Unix time is in seconds: 1e11 s is the year 5138, 1e11 ms is 1973
_SECONDS_BELOW = 100_000_000_000
_NUMBER_RE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"

_ORDER_DEC = columns_of_kind(ORDER, "dec")
_ORDER_TS = columns_of_kind(ORDER, "ts")
_TRADE_DEC = columns_of_kind(TRADE, "dec")
_TRADE_TS = columns_of_kind(TRADE, "ts")


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
    """Numbers of one column -> int64 Unix milliseconds, seconds detected by magnitude per
    value (below 1e11 is seconds: no real moment is ambiguous, so a column mixing the two
    units still comes out right)."""
    if pa.types.is_integer(col.type):
        col = pc.cast(col, pa.int64())
    seconds = pc.less(pc.abs(col), _SECONDS_BELOW)
    if pc.any(seconds).as_py():
        col = pc.if_else(seconds, pc.multiply(col, 1000), col)
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


def _build_tables(
    table: pa.Table, exact: bool, fields: QuoteFields | None = None
) -> dict[str, pa.Table]:
    element = quote_struct(fields or QuoteFields())
    ids = table.column("id")
    fee_present = pc.is_valid(table.column("fee"))
    orders = _flatten(table.drop_columns(["trades", "evaluatedTickers"]))
    orders = _canonical_status(_convert(orders, _ORDER_DEC, _ORDER_TS, exact))

    items, trade_rows = _explode(table.column("trades"))
    trades = _convert(_flatten(items), _TRADE_DEC, _TRADE_TS, exact)
    trades = trades.add_column(0, "orderId", _take(ids, trade_rows))

    items, quote_rows = _explode(table.column("evaluatedTickers"))
    quotes = _convert(
        _flatten(items),
        columns_of_kind(element, "dec"),
        columns_of_kind(element, "ts"),
        exact,
    )
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
