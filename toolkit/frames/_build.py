"""The wire table -> the five frame tables (orders, trades, fees, evaluated_tickers, fills):
decimal and timestamp columns, the status case, the trades/evaluatedTickers explode, fills,
and unique column names (a wire field named like a derived column is renamed)."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.frames._columns import (
    REQUIRED_TIMES,
    TIMESTAMP,
    Where,
    to_decimal,
    to_timestamp,
)
from toolkit.frames._schema import (
    FILL_CONTEXT,
    ORDER,
    TRADE,
    QuoteFields,
    columns_of_kind,
    quote_struct,
)

# TIMESTAMP: the exports' time type, imported from here by _frames
__all__ = ["TIMESTAMP", "_build_tables"]

_ORDER_DEC = columns_of_kind(ORDER, "dec")
_ORDER_TS = columns_of_kind(ORDER, "ts")
_TRADE_DEC = columns_of_kind(TRADE, "dec")
_TRADE_TS = columns_of_kind(TRADE, "ts")

#: the columns the frames derive, per frame: a wire field of that name is renamed
#: ``<prefix>.<name>`` (``trade.symbol``) so the derived column keeps its meaning; a trade's
#: are the fills' too, so trades and fills name a trade field alike
_ORDER_DERIVED = frozenset({"statusRaw"})
_TRADE_DERIVED = frozenset({"orderId", "venue", *(target for _, target in FILL_CONTEXT)})
_QUOTE_DERIVED = frozenset({"orderId", "rank"})
_FEE_DERIVED = frozenset({"orderId", "symbol", "operationalFees"})


# --------------------------------------------------------------------------- columns


def _flatten(table: pa.Table) -> pa.Table:
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def _convert(
    table: pa.Table,
    decimals: frozenset[str],
    timestamps: frozenset[str],
    exact: bool,
    ids: pa.ChunkedArray,
    unit: str = "auto",
    path: str = "",
    required: frozenset[str] = frozenset(),
) -> pa.Table:
    """The decimal and time columns of ``table`` typed; ``ids`` (the order of each row) and
    ``path`` (``trades[].``) name the values the messages quote."""
    for i, name in enumerate(table.column_names):
        if name in decimals:
            where = Where(path + name, ids, unit)
            table = table.set_column(i, name, to_decimal(table.column(i), exact, where))
        elif name in timestamps:
            where = Where(path + name, ids, unit)
            col = to_timestamp(table.column(i), where, name in required)
            table = table.set_column(i, name, col)
    return table


def _free(name: str, used: set[str]) -> str:
    if name not in used:
        return name
    n = 2
    while f"{name}#{n}" in used:
        n += 1
    return f"{name}#{n}"


def _unique(
    table: pa.Table, derived: frozenset[str], prefix: str, frame: str, renamed: list[str]
) -> pa.Table:
    """``table`` with every name once: a wire field named like a column the frames derive
    becomes ``<prefix>.<name>``; a name flattened twice (a key ``"a.b"`` next to an object
    ``a`` with ``b``) gets ``#2`` on its second column. Each rename is added to ``renamed``."""
    names = table.column_names
    used = set(names) | set(derived)
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        new = name
        if name in derived:
            new = _free(f"{prefix}.{name}" if prefix else name, used)
        elif name in seen:
            new = _free(name, used)
        if new != name:
            used.add(new)
            renamed.append(f"{frame} {name!r} -> {new!r}")
        seen.add(new)
        out.append(new)
    return table if out == names else table.rename_columns(out)


def _check_unique(tables: dict[str, pa.Table]) -> None:
    for frame, table in tables.items():
        names = table.column_names
        if len(set(names)) != len(names):  # pragma: no cover - _unique makes them so
            twice = sorted({n for n in names if names.count(n) > 1})
            raise RuntimeError(f"bug: the {frame} frame names columns twice: {twice}")


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
    table: pa.Table, exact: bool, fields: QuoteFields | None = None, *, unit: str = "auto"
) -> dict[str, pa.Table]:
    """The five frame tables of the wire ``table``; ``unit`` is the profile's
    ``orders.timestamp_unit`` ("auto": seconds or milliseconds by magnitude, per value)."""
    element = quote_struct(fields or QuoteFields())
    ids = table.column("id")
    if not (pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type)):
        ids = pc.cast(ids, pa.string())
    fee_present = pc.is_valid(table.column("fee"))
    renamed: list[str] = []
    orders = _flatten(table.drop_columns(["trades", "evaluatedTickers"]))
    orders = _unique(orders, _ORDER_DERIVED, "order", "orders", renamed)
    orders = _convert(orders, _ORDER_DEC, _ORDER_TS, exact, ids, unit, "", REQUIRED_TIMES)
    orders = _canonical_status(orders)

    items, trade_rows = _explode(table.column("trades"))
    trade_ids = _take(ids, trade_rows)
    trades = _unique(_flatten(items), _TRADE_DERIVED, "trade", "trades", renamed)
    trades = _convert(trades, _TRADE_DEC, _TRADE_TS, exact, trade_ids, unit, "trades[].")
    trades = trades.add_column(0, "orderId", trade_ids)

    items, quote_rows = _explode(table.column("evaluatedTickers"))
    quote_ids = _take(ids, quote_rows)
    quotes = _unique(_flatten(items), _QUOTE_DERIVED, "quote", "evaluated_tickers", renamed)
    quotes = _convert(
        quotes,
        columns_of_kind(element, "dec"),
        columns_of_kind(element, "ts"),
        exact,
        quote_ids,
        unit,
        "evaluatedTickers[].",
    )
    # quote_rows is sorted, so an item's rank is its distance from its order's first item
    rank = np.arange(len(quote_rows), dtype=np.int64) - np.searchsorted(
        quote_rows, quote_rows, side="left"
    )
    quotes = quotes.add_column(0, "rank", pa.array(rank, pa.int64()))
    quotes = quotes.add_column(0, "orderId", quote_ids)

    with_fee = orders.filter(fee_present)
    fee_columns = [n for n in with_fee.column_names if n.startswith("fee.")]
    fees = pa.Table.from_arrays(
        [
            with_fee.column("id"),
            with_fee.column("symbol"),
            *(with_fee.column(n) for n in fee_columns),
            with_fee.column("operationalFees"),
        ],
        names=[
            "orderId",
            "symbol",
            # a fee field named like a derived column keeps its order column's name
            *(n if n[4:] in _FEE_DERIVED else n[4:] for n in fee_columns),
            "operationalFees",
        ],
    )
    fees = _unique(fees, frozenset(), "", "fees", renamed)

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
    tables = {
        "orders": orders,
        "trades": trades,
        "fees": fees,
        "evaluated_tickers": quotes,
        "fills": fills,
    }
    if renamed:
        warnings.warn(
            "the service sent fields named like columns the frames derive (or like one "
            f"another); they were renamed: {', '.join(renamed)}",
            RuntimeWarning,
            stacklevel=3,
        )
    _check_unique(tables)
    return tables
