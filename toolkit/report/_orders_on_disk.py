"""A report whose per-order table stays on disk (``OrderParts``): its tables as a mapping
that reads ``per_order`` whole only when asked for it, the few figures about the whole
set the page shows (orders, executed, the period, whether a market recording was used,
the order types), and ``per_order.parquet`` written by streaming the parts."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from toolkit.report._columnar import read_columns
from toolkit.report._columns import PER_ORDER_COLUMNS, empty
from toolkit.report._parts import OrderParts
from toolkit.report._shown import shown
from toolkit.report._stored_checks import DataChecks
from toolkit.report._tables import MAX_HTML_ROWS

#: the per-order columns the page reads besides the figures: the coverage rule of each
#: metric and chart, the headline sentence, the page's currency
PAGE_COLUMNS = (
    "executed",
    "type",
    "currency",
    "decomposed",
    "quote_slippage_bp",
    "tte_s",
    "fee_rate",
    "tier_rate",
)

#: what the scope line and the coverage notes read of every order
_STATS_COLUMNS = ("executed", "createdAt", "arrival_mid", "type")


@dataclass(frozen=True)
class OrderStats:
    """What the report's scope line and coverage notes say about the whole set."""

    orders: int
    executed: int
    first: pd.Timestamp | None  # earliest createdAt (None: no order has one)
    last: pd.Timestamp | None
    market: bool  # some order has an arrival mid: a market recording was used
    types: frozenset[str]


def _stats(po: pd.DataFrame) -> OrderStats:
    created = po["createdAt"].dropna()
    return OrderStats(
        orders=len(po),
        executed=int(po["executed"].sum()) if len(po) else 0,
        first=created.min() if len(created) else None,
        last=created.max() if len(created) else None,
        market=bool(po["arrival_mid"].notna().any()) if len(po) else False,
        types=frozenset(po["type"].astype(str)),
    )


def stats_of_frame(po: pd.DataFrame) -> OrderStats:
    """The set's figures from a per-order table in memory."""
    return _stats(po)


def stats_of_parts(paths: Sequence[Path]) -> OrderStats:
    """The set's figures from per-order parts, one part in memory at a time."""
    each = [_stats(read_columns([p], _STATS_COLUMNS)) for p in paths]
    firsts = [s.first for s in each if s.first is not None]
    lasts = [s.last for s in each if s.last is not None]
    return OrderStats(
        orders=sum(s.orders for s in each),
        executed=sum(s.executed for s in each),
        first=min(firsts) if firsts else None,
        last=max(lasts) if lasts else None,
        market=any(s.market for s in each),
        types=frozenset().union(*(s.types for s in each)),
    )


def worst_rows(parts: OrderParts, ids: Sequence[str]) -> pd.DataFrame:
    """The per-order rows of ``ids`` (every column), read from the parts by a filter."""
    if not ids:
        return empty(PER_ORDER_COLUMNS)
    return read_columns(parts.per_order, None, ids=ids)


def write_per_order(parts: OrderParts, path: Path) -> None:
    """``per_order`` as one Parquet file at ``path``, streamed from the parts a row group
    at a time (the same file ``DataFrame.to_parquet`` would hold for the concatenation)."""
    if not parts.per_order:
        empty(PER_ORDER_COLUMNS).to_parquet(path, index=False)
        return
    schema = pq.read_schema(parts.per_order[0])
    with pq.ParquetWriter(path, schema) as writer:
        for p in parts.per_order:
            f = pq.ParquetFile(p)
            for i in range(f.num_row_groups):
                table = f.read_row_group(i)
                writer.write_table(table.cast(schema) if table.schema != schema else table)


class PartsTables(MutableMapping[str, pd.DataFrame]):
    """A report's tables with ``per_order`` on disk: ``tables["per_order"]`` reads every
    order of the parts (all columns) each time it is asked for, the other tables are in
    memory. Setting ``per_order`` keeps that frame instead. ``per_order`` is listed
    before ``after`` (the tables a report adds to those of ``all_tables``)."""

    def __init__(
        self,
        tables: Mapping[str, pd.DataFrame | DataChecks],
        parts: OrderParts,
        after: Sequence[str] = (),
    ):
        first = [n for n in tables if n not in after]
        self._tables: dict[str, pd.DataFrame | DataChecks] = {
            n: tables[n] for n in [*first, *(n for n in after if n in tables)]
        }
        self._at = len(first)  # where per_order is listed
        self._parts: OrderParts | None = parts

    @property
    def parts(self) -> OrderParts | None:
        """The parts ``per_order`` is read from (None once a frame replaced it)."""
        return self._parts

    def others(self) -> dict[str, pd.DataFrame]:
        """Every table but ``per_order``, without reading it; ``data_checks`` kept on disk
        as its first :data:`MAX_HTML_ROWS` rows of each check (all the page shows), with
        ``data_check_counts`` (``check``, ``rows``: every row counted)."""
        out: dict[str, pd.DataFrame] = {}
        for n, df in self._tables.items():
            if isinstance(df, DataChecks):
                out[n] = shown(df.heads(MAX_HTML_ROWS), n)
                out["data_check_counts"] = df.counts()
            elif n != "per_order":
                out[n] = df
        return out

    def checks_on_disk(self) -> DataChecks | None:
        """``data_checks`` unread (None: a frame in memory)."""
        got = self._tables.get("data_checks")
        return got if isinstance(got, DataChecks) else None

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name == "per_order" and self._parts is not None:
            return shown(read_columns(self._parts.per_order), "per_order")
        got = self._tables[name]
        return shown(got.frame(), name) if isinstance(got, DataChecks) else got

    def __setitem__(self, name: str, df: pd.DataFrame) -> None:
        if name == "per_order":
            self._parts = None
        self._tables[name] = df

    def __delitem__(self, name: str) -> None:
        if name == "per_order" and self._parts is not None:
            self._parts = None
            return
        if list(self._tables).index(name) < self._at:
            self._at -= 1
        del self._tables[name]

    def __iter__(self) -> Iterator[str]:
        names = list(self._tables)
        yield from names[: self._at]
        if self._parts is not None:
            yield "per_order"
        yield from names[self._at :]

    def __len__(self) -> int:
        return len(self._tables) + (self._parts is not None)

    def __contains__(self, name: object) -> bool:
        return (name == "per_order" and self._parts is not None) or name in self._tables


__all__ = [
    "PAGE_COLUMNS",
    "OrderStats",
    "PartsTables",
    "stats_of_frame",
    "stats_of_parts",
    "worst_rows",
    "write_per_order",
]
