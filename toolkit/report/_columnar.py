"""Every table of the report from the per-order metrics, whether they are one DataFrame
in memory (:func:`tables_from_frame`) or Parquet parts on disk (:func:`tables_from_parts`,
an :class:`~toolkit.report._parts.OrderParts`): each table reads only the per-order
columns :data:`TABLE_COLUMNS` declares for it, so the report never holds every column of
every order at once. The same table functions run on both, so the numbers are the same."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from toolkit.report._breakdowns import breakdown, breakdown_of_parts, rules, summary, venues
from toolkit.report._checks import (
    CHECK_COLUMNS,
    OUTLIER_COLUMNS,
    conform_checks,
    slippage_outliers,
)
from toolkit.report._columns import PER_ORDER_COLUMNS, _conform, empty
from toolkit.report._daily import daily_cost
from toolkit.report._decomposition import contingency_costs, cost_decomposition, venue_mismatch
from toolkit.report._drilldown import QUOTE_COLUMNS, quotes_of
from toolkit.report._fees import fees
from toolkit.report._fills import (
    MakerSums,
    fill_rate,
    funnel,
    maker_share,
    maker_sums,
    maker_sums_of_parts,
    outcomes,
    rejections,
)
from toolkit.report._latency import time_to_execution
from toolkit.report._limits import fill_probability, limit_summary
from toolkit.report._market import markouts
from toolkit.report._memory import release_memory
from toolkit.report._parts import OrderParts
from toolkit.report._robust import WORST_N, Period, comparison, headline, robust, worst_orders
from toolkit.report._routing import quote_age
from toolkit.report._slippage import routing, slippage
from toolkit.report._stored_checks import CheckedTables, DataChecks

_WEIGHTED = (
    "notional",
    "requested_notional",
    "quote_slippage_bp",
    "best_quote_slippage_bp",
    "best_venue_hit",
    "routing_gap_bp",
    "total_cost_bp",
    "arrival_slippage_bp",
    "fee_total_bp",
    "fill_rate",
)
_HEADLINE = (
    "type",
    "notional",
    "requested_notional",
    "best_venue_hit",
    "routing_gap_bp",
    "execution_bp",
    "total_cost_bp",
    "arrival_slippage_bp",
    "fee_total_bp",
    "fill_rate",
)

#: table -> the per-order columns it reads (a test runs each table on exactly these)
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "headline": _HEADLINE,
    "cost_decomposition": (
        "currency",
        "type",
        "notional",
        "decomposed",
        "routing_gap_amount",
        "execution_amount",
        "fee_amount",
    ),
    "summary": ("currency", "type", "executed", "tte_s", *_WEIGHTED),
    "slippage": (
        "type",
        "notional",
        "quote_slippage_bp",
        "best_quote_slippage_bp",
        "routing_gap_bp",
        "arrival_slippage_bp",
        "arrival_slippage_half_spreads",
    ),
    "routing": ("notional", "routing_outcome"),
    "worst_orders": (
        "orderId",
        "symbol",
        "currency",
        "type",
        "venue",
        "createdAt",
        "notional",
        "decomposed",
        "routing_gap_bp",
        "execution_bp",
        "fees_bp",
        "total_cost_bp",
        "total_cost_amount",
    ),
    "venues": ("venue", "executed", "tte_s", *_WEIGHTED),
    "rules": ("rule", "executed", "notional"),
    "contingency_costs": (
        "currency",
        "sign",
        "executed",
        "notional",
        "best_quote",
        "overall_best_quote",
        "overall_best_venue",
        "overall_best_reason",
    ),
    "venue_mismatch": ("exchange", "venue", "best_venue", "executed", "notional"),
    "quote_age": ("type", "executed", "notional", "quote_slippage_bp", "quote_age_s"),
    "markouts": (
        "executed",
        "notional",
        "markout_anchor",
        *(c for c in PER_ORDER_COLUMNS if c.startswith("markout_") and c.endswith("s_bp")),
    ),
    "limit_summary": (
        "type",
        "notional",
        "trigger_delay_s",
        "trigger_slippage_bp",
        "limit_respected",
        "unfilled_notional",
        "opportunity_cost_bp",
        "opportunity_cost_amount",
        "cancel_latency_s",
    ),
    "fill_probability": ("type", "outcome", "limit_distance_bp", "time_to_expiry_s"),
    "fees": (
        "symbol",
        "currency",
        "executed",
        "notional",
        "fee_cost",
        "fee_cripto",
        "fee_cripto_fiat",
        "venue_fee",
        "operational_fees",
        "fee_total_bp",
        "fee_rate",
        "tier_rate",
        "fee_rate_vs_tier_bp",
    ),
    "fill_rate": ("type", "requested_notional", "fill_rate", "fully_filled"),
    "outcomes": ("type", "outcome"),
    "funnel": ("type", "outcome", "triggeredAt"),
    "rejections": ("type", "status", "reject_reason"),
    "time_to_execution": ("type", "tte_s", "tte_basis"),
    # the makers' sums per type and venue (_Given.makers) are all it reads
    "maker_share": (),
    "robust": (
        "type",
        "notional",
        "routing_gap_bp",
        "execution_bp",
        "total_cost_bp",
        "arrival_slippage_bp",
    ),
    "comparison": ("createdAt", *_HEADLINE),
    "breakdown": (
        "symbol",
        "side",
        "type",
        "venue",
        "rule",
        "month",
        "hour",
        "size_bucket",
        "executed",
        "tte_s",
        *_WEIGHTED,
    ),
    "daily_cost": (
        "currency",
        "createdAt",
        "executed",
        "notional",
        "decomposed",
        "total_cost_amount",
    ),
    # the slippage outliers of data_checks (their orderId read for the outliers alone)
    "data_checks": OUTLIER_COLUMNS,
}

#: the tables in the order all_tables lists them (daily_cost: the report's, drawn here too)
TABLE_ORDER = (
    "headline",
    "cost_decomposition",
    "summary",
    "slippage",
    "routing",
    "worst_orders",
    "venues",
    "rules",
    "contingencies",
    "contingency_reasons",
    "contingency_costs",
    "venue_mismatch",
    "quote_age",
    "markouts",
    "limit_summary",
    "fill_probability",
    "fees",
    "fill_rate",
    "outcomes",
    "funnel",
    "rejections",
    "time_to_execution",
    "latency_buckets",
    "maker_share",
    "robust",
    "comparison",
    "breakdown",
    "data_checks",
    "daily_cost",
)


@dataclass(frozen=True)
class _Given:
    """What the tables read beside the per-order columns."""

    makers: MakerSums  # per type and venue of the makers' orders
    checks: pd.DataFrame
    compare: Sequence[Period] | None
    ids: Callable[[pd.Index], pd.Series] | None = None


def _data_checks(po: pd.DataFrame, g: _Given) -> pd.DataFrame:
    # the rows before the outliers, then the outliers: data_checks' order; the rows
    # before are conformed already (they may be most orders: copied once, not twice)
    found = slippage_outliers(po, g.ids)
    outliers = _conform(pd.concat(found, ignore_index=True), CHECK_COLUMNS) if found else None
    if outliers is None:
        return _conform(g.checks, CHECK_COLUMNS) if len(g.checks) else empty(CHECK_COLUMNS)
    if not len(g.checks):
        return outliers
    return pd.concat([_conform(g.checks, CHECK_COLUMNS), outliers], ignore_index=True)


_Compute = Callable[[pd.DataFrame, _Given], pd.DataFrame]

#: table -> how it is computed from the per-order columns it declares
_TABLES: dict[str, _Compute] = {
    "headline": lambda po, g: headline(po),
    "cost_decomposition": lambda po, g: cost_decomposition(po),
    "summary": lambda po, g: summary(po, None, g.makers),
    "slippage": lambda po, g: slippage(po),
    "routing": lambda po, g: routing(po),
    "worst_orders": lambda po, g: worst_orders(po),
    "venues": lambda po, g: venues(po, None, g.makers),
    "rules": lambda po, g: rules(po),
    "contingency_costs": lambda po, g: contingency_costs(po),
    "venue_mismatch": lambda po, g: venue_mismatch(po),
    "quote_age": lambda po, g: quote_age(po),
    "markouts": lambda po, g: markouts(po),
    "limit_summary": lambda po, g: limit_summary(po),
    "fill_probability": lambda po, g: fill_probability(po),
    "fees": lambda po, g: fees(po),
    "fill_rate": lambda po, g: fill_rate(po),
    "outcomes": lambda po, g: outcomes(po),
    "funnel": lambda po, g: funnel(po),
    "rejections": lambda po, g: rejections(po),
    "maker_share": lambda po, g: maker_share(None, po, g.makers),
    "robust": lambda po, g: robust(po),
    "comparison": lambda po, g: comparison(po, g.compare),
    "breakdown": lambda po, g: breakdown(po),
    "daily_cost": lambda po, g: daily_cost(po),
    "data_checks": _data_checks,
}


def compute_table(name: str, po: pd.DataFrame, given: _Given) -> dict[str, pd.DataFrame]:
    """Table ``name`` (two for ``time_to_execution``: it and ``latency_buckets``)."""
    if name == "time_to_execution":
        tte, buckets = time_to_execution(po)
        return {"time_to_execution": tte, "latency_buckets": buckets}
    return {name: _TABLES[name](po, given)}


def _ordered(out: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return {n: out[n] for n in TABLE_ORDER if n in out}


def tables_from_frame(
    po: pd.DataFrame,
    *,
    makers: pd.DataFrame,
    checks: pd.DataFrame,
    contingencies: pd.DataFrame,
    contingency_reasons: pd.DataFrame,
    compare: Sequence[Period] | None = None,
) -> dict[str, pd.DataFrame]:
    """Every table of the report from the per-order table ``po`` in memory (the tables of
    :func:`tables_from_parts`, without writing anything to disk).

    Parameters
    ----------
    po : DataFrame
        The per-order metrics (``per_order``).
    makers : DataFrame
        ``maker_by_order(trades)`` of the same orders (indexed by orderId).
    checks : DataFrame
        Every ``data_checks`` row but the slippage outliers (drawn here from ``po``).
    contingencies, contingency_reasons : DataFrame
        ``contingencies(canonical_quotes(frames))``.
    compare : pair of periods, optional
        As ``execution_report``'s.

    Returns
    -------
    dict of str to DataFrame
        The tables of ``all_tables`` but ``per_order``, and ``daily_cost``.
    """
    given = _Given(maker_sums(makers, po), checks, compare)
    out = {"contingencies": contingencies, "contingency_reasons": contingency_reasons}
    for name in TABLE_COLUMNS:
        out.update(compute_table(name, po, given))
    return _ordered(out)


# ---------------------------------------------------------------- reading the parts


def _schema_names(path: Path) -> list[str]:
    return list(pq.read_schema(path).names)


def read_columns(
    paths: Sequence[Path], columns: Iterable[str] | None = None, *, ids: Sequence[str] = ()
) -> pd.DataFrame:
    """The per-order parts ``paths`` concatenated in order, only ``columns`` of them (None:
    every column), with the per-order dtypes; ``ids``: only the rows of these orderIds."""
    names = list(PER_ORDER_COLUMNS) if columns is None else list(dict.fromkeys(columns))
    want = {n: PER_ORDER_COLUMNS.get(n, "float64") for n in names}
    tables = []
    for p in paths:
        have = set(_schema_names(p))
        present = [n for n in names if n in have]
        filters = [("orderId", "in", list(ids))] if ids else None
        tables.append(pq.read_table(p, columns=present, filters=filters))
    if not tables:
        return empty(want)
    table = pa.concat_tables(tables, promote_options="permissive")
    del tables
    df = table.to_pandas(self_destruct=True)
    return _conform(df, want)


def _row_ids(paths: Sequence[Path]) -> Callable[[pd.Index], pd.Series]:
    """orderId of rows by position in the concatenated parts, reading the ids of only the
    parts holding them."""
    sizes = [pq.ParquetFile(p).metadata.num_rows for p in paths]

    def ids(rows: pd.Index) -> pd.Series:
        at = pd.Series(rows, index=rows)
        out = pd.Series("", index=rows, dtype="str")
        start = 0
        for p, n in zip(paths, sizes, strict=True):
            mine = at[(at >= start) & (at < start + n)]
            if len(mine):
                col = pq.read_table(p, columns=["orderId"]).column("orderId")
                got = col.take(pa.array(mine.to_numpy() - start)).to_pylist()
                out[mine.index] = pd.Series(got, index=mine.index, dtype="str")
            start += n
        return out

    return ids


def read_rows(
    paths: Sequence[Path], rows: Sequence[int] | np.ndarray, columns: Iterable[str]
) -> pd.DataFrame:
    """The per-order rows at positions ``rows`` (ascending) of the concatenated parts,
    only ``columns``, indexed by those positions; only the parts holding them are read."""
    names = list(dict.fromkeys(columns))
    want = {n: PER_ORDER_COLUMNS.get(n, "float64") for n in names}
    at = np.asarray(rows, dtype="int64")
    tables, start = [], 0
    for p in paths:
        n = pq.ParquetFile(p).metadata.num_rows
        mine = at[(at >= start) & (at < start + n)]
        if len(mine):
            have = set(_schema_names(p))
            present = [c for c in names if c in have]
            tables.append(pq.read_table(p, columns=present).take(pa.array(mine - start)))
        start += n
    if not tables:
        return empty(want)
    df = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    return _conform(df, want).set_axis(pd.Index(at), axis=0)


#: what the worst orders are chosen by, read of every order (then their rows alone)
WORST_KEY = ("decomposed", "total_cost_amount")


def worst_of_parts(paths: Sequence[Path]) -> pd.DataFrame:
    """:func:`worst_orders` of the per-order parts: chosen on :data:`WORST_KEY`, then
    only their rows read (the same orders in the same order: the choice is theirs)."""
    key = read_columns(paths, WORST_KEY)
    chosen = key[key["decomposed"].astype(bool)].dropna(subset=["total_cost_amount"])
    top = np.sort(chosen.nlargest(WORST_N, "total_cost_amount").index.to_numpy())
    del key, chosen
    return worst_orders(read_rows(paths, top, TABLE_COLUMNS["worst_orders"]))


#: the memory the tables step may hold in per-order columns at once: while two of the
#: widest tables' columns fit in it, two tables are computed side by side (threads: the
#: Parquet reads, the engine and most numeric work release the GIL), else one at a time
TABLES_BUDGET = 1 << 30
#: the tables that take longest (1M orders: 0.7 to 1.3 s each), started first
SLOW_TABLES = ("breakdown", "robust", "summary", "daily_cost", "slippage")
#: bytes one per-order value takes in memory, at most (a text: offsets and a few chars)
_VALUE_BYTES = 16


def table_threads(orders: int) -> int:
    """The threads computing the tables of ``orders`` orders: 2 on a machine of several
    cores while two of the widest tables' columns fit in :data:`TABLES_BUDGET`, else 1."""
    widest = max(len(columns) for columns in TABLE_COLUMNS.values())
    if (os.cpu_count() or 1) < 2 or 2 * widest * orders * _VALUE_BYTES >= TABLES_BUDGET:
        return 1
    return 2


def tables_from_parts(
    parts: OrderParts, *, compare: Sequence[Period] | None = None
) -> CheckedTables:
    """Every table of the report (but ``per_order``) from the orders' parts on disk.

    Each table reads only the per-order columns :data:`TABLE_COLUMNS` declares for it,
    one table at a time (two side by side, in threads, while their columns fit in
    :data:`TABLES_BUDGET`: :func:`table_threads`), so memory holds a few columns of every
    order, never all of them; the maker shares read ``parts.makers`` for their table
    only; the data checks stay on disk (``parts.checks``), followed by the slippage
    outliers (whose orderIds alone are read): ``data_checks`` is read whole only when
    asked for. The warnings of the build (``parts.warnings``) are issued again, as
    ``all_tables`` issues them.

    Parameters
    ----------
    parts : OrderParts
        The orders and their per-order metrics on disk.
    compare : pair of periods, optional
        As ``execution_report``'s.

    Returns
    -------
    CheckedTables
        The tables ``all_tables`` returns but ``per_order``, in its order, and
        ``daily_cost``; each equal to what ``all_tables`` gives for the same orders
        (``data_checks`` read from disk each time it is asked for).
    """
    for message in parts.warnings:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    ids = _row_ids(parts.per_order)
    # the makers summed per type and venue of their order by the engine: a few rows
    given = _Given(maker_sums_of_parts(parts.makers, parts.per_order), _NO_CHECKS, compare, ids)
    out: dict[str, pd.DataFrame | DataChecks] = {
        "contingencies": parts.contingencies,
        "contingency_reasons": parts.contingency_reasons,
    }

    def one(name: str, columns: tuple[str, ...]) -> dict[str, pd.DataFrame | DataChecks]:
        if name == "breakdown":
            # the engine reads the parts where they lie: no column of every order here
            return {name: breakdown_of_parts(parts.per_order)}
        if name == "worst_orders":
            return {name: worst_of_parts(parts.per_order)}
        if name == "comparison" and not compare:
            columns = ()  # no periods: an empty table, nothing of the orders read
        po = read_columns(parts.per_order, columns)
        if name == "data_checks":
            found = slippage_outliers(po, ids)
            outliers = conform_checks(found) if found else empty(CHECK_COLUMNS)
            return {name: DataChecks(parts.checks, outliers)}
        return dict(compute_table(name, po, given))

    threads = table_threads(parts.orders)
    if threads < 2:
        for name, columns in TABLE_COLUMNS.items():
            out.update(one(name, columns))
            release_memory()  # each table's columns given back before the next is read
    else:
        # the slowest first, so that no long table is left alone at the end
        order = sorted(TABLE_COLUMNS.items(), key=lambda item: item[0] not in SLOW_TABLES)
        with ThreadPoolExecutor(threads, thread_name_prefix="report-table") as pool:
            for got in pool.map(lambda item: one(*item), order):
                out.update(got)
        release_memory()
    return CheckedTables({n: out[n] for n in TABLE_ORDER if n in out})


_NO_CHECKS = empty(CHECK_COLUMNS)


def quotes_from_parts(parts: OrderParts, worst: pd.DataFrame) -> pd.DataFrame:
    """``worst_order_quotes`` from the parts' canonical quotes: only the rows of the
    worst orders' ids are read (a filter of the Parquet reader)."""
    if worst.empty or not parts.quotes:
        return empty(QUOTE_COLUMNS)
    ids = sorted(set(worst["orderId"].astype(str)))
    tables = [pq.read_table(p, filters=[("orderId", "in", ids)]) for p in parts.quotes]
    quotes = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    return quotes_of(quotes, worst)
