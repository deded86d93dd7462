"""Aggregates and breakdowns: the weighted main metrics overall and per group, the summary,
per-venue, per-rule and contingency tables, and the breakdown by every dimension."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    import pyarrow as pa

from toolkit.report._columns import NONE_LABEL, WEIGHTS, _conform, _text, empty
from toolkit.report._fills import MakerSums, maker_by_order, maker_share, maker_sums

AGG_COLUMNS: dict[str, str] = {
    "orders": "int64",
    "executed": "int64",
    "notional": "float64",
    "quote_slippage_bp": "float64",
    "best_quote_slippage_bp": "float64",
    "routing_gap_bp": "float64",
    "total_cost_bp": "float64",
    "best_venue_hit_rate": "float64",
    "arrival_slippage_bp": "float64",
    "fee_total_bp": "float64",
    "fill_rate": "float64",
    "median_tte_s": "float64",
}


def aggregate(po: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """The main metrics per group of ``by`` (all orders when empty), weighted per ``WEIGHTS``."""
    keys = list(by) or ["_all"]
    cols = {k: "str" for k in keys} | AGG_COLUMNS
    if po.empty:
        return empty(cols if by else AGG_COLUMNS)
    # only the columns the aggregates read: po has a hundred
    needed = {*keys, *WEIGHTS, *WEIGHTS.values(), "notional", "tte_s", "executed"}
    needed -= {"_all", "_one"}
    work = po[[c for c in po.columns if c in needed]]
    if not by:
        work = work.assign(_all=np.zeros(len(work), dtype="int8"))
    g = work.groupby(keys, sort=True, dropna=False)
    size = g.size()
    # each sum grouped by the groups' numbers, one column at a time: never a frame of
    # every order's weighted products (the same sums, in the same row order)
    codes = g.ngroup().to_numpy()

    def total(values: pd.Series | np.ndarray, how: str = "sum") -> pd.Series:
        grouped = pd.Series(values, index=work.index).groupby(codes, sort=True)
        got = grouped.median() if how == "median" else grouped.sum(min_count=1)
        return got.set_axis(size.index)

    sums: dict[str, pd.Series] = {"orders": size}
    executed = pd.Series(work["executed"].astype("int64"), index=work.index)
    sums["executed"] = executed.groupby(codes, sort=True).sum().set_axis(size.index)
    sums["notional"] = total(work["notional"])
    one = pd.Series(1.0, index=work.index)
    for metric, weight in WEIGHTS.items():
        w = one if weight == "_one" else work[weight]
        ok = work[metric].notna() & (w > 0)
        name = "best_venue_hit_rate" if metric == "best_venue_hit" else metric
        sums[name] = total((work[metric] * w).where(ok)) / total(w.where(ok))
    sums["median_tte_s"] = total(work["tte_s"], "median")
    out = pd.DataFrame(sums).reset_index()
    if not by:
        out = out.drop(columns="_all")
    return _conform(out, cols if by else AGG_COLUMNS)


SUMMARY_COLUMNS = {
    "metric": "str",
    "value": "float64",
    "unit": "str",
    "orders": "int64",
    "market": "float64",
    "market_orders": "int64",
    "limit": "float64",
    "limit_orders": "int64",
}


def _currency_unit(po: pd.DataFrame) -> str:
    found = sorted({c for c in po["currency"].dropna().astype(str).unique() if c})
    return found[0] if len(found) == 1 else "quote currency"


def _summary_rows(
    po: pd.DataFrame, makers: MakerSums, order_type: str | None = None
) -> list[tuple[str, float, int]]:
    a = aggregate(po)
    row = a.iloc[0] if len(a) else pd.Series(dtype="float64")
    # the executed orders as a mask: never a copy of every column of them
    executed = po["executed"].to_numpy(dtype=bool)
    tte = po["tte_s"][executed].dropna()
    maker = maker_share(None, po, makers, order_type=order_type)
    maker_all = maker[maker["venue"] == "(all)"]

    def n(col: str) -> int:
        return int((po[col].notna().to_numpy() & executed).sum())

    def get(name: str) -> float:
        return float(row[name]) if name in row.index else np.nan

    return [
        ("orders", float(len(po)), len(po)),
        ("executed orders", float(executed.sum()), int(executed.sum())),
        ("executed notional", get("notional") if executed.any() else np.nan, int(executed.sum())),
        ("routing gap", get("routing_gap_bp"), n("routing_gap_bp")),
        ("quote slippage", get("quote_slippage_bp"), n("quote_slippage_bp")),
        (
            "slippage vs best clean quote",
            get("best_quote_slippage_bp"),
            n("best_quote_slippage_bp"),
        ),
        ("total cost", get("total_cost_bp"), n("total_cost_bp")),
        ("best-venue hit rate", get("best_venue_hit_rate"), n("best_venue_hit")),
        ("arrival slippage", get("arrival_slippage_bp"), n("arrival_slippage_bp")),
        ("fees (venue + operational)", get("fee_total_bp"), n("fee_total_bp")),
        ("fill rate", get("fill_rate"), int(po["fill_rate"].notna().sum())),
        ("median time to execution", get("median_tte_s"), int(tte.size)),
        ("p90 time to execution", float(tte.quantile(0.9)) if tte.size else np.nan, int(tte.size)),
        (
            "maker share (trades)",
            float(maker_all["maker_share"].iloc[0]) if len(maker_all) else np.nan,
            int(maker_all["trades"].iloc[0]) if len(maker_all) else 0,
        ),
    ]


SUMMARY_UNITS = {
    "orders": "count",
    "executed orders": "count",
    "best-venue hit rate": "share",
    "fill rate": "share",
    "maker share (trades)": "share",
    "median time to execution": "s",
    "p90 time to execution": "s",
}


def summary(
    po: pd.DataFrame,
    trades: pd.DataFrame | None,
    by_order: pd.DataFrame | MakerSums | None = None,
) -> pd.DataFrame:
    """Headline numbers: metric, value, unit, orders (how many orders the value rests on),
    for every order and apart for market and limit orders (``by_order``: as for
    :func:`~toolkit.report._fills.maker_share`)."""
    if po.empty:
        return empty(SUMMARY_COLUMNS)
    if not isinstance(by_order, MakerSums):
        # the makers' sums per type and venue of their order, once for every row
        by_order = maker_sums(maker_by_order(trades) if by_order is None else by_order, po)
    # the columns the summary reads: each order type's part copies these, not all hundred
    used = {"type", "currency", "executed", "notional", "tte_s"}
    used |= {*WEIGHTS, *WEIGHTS.values(), "fill_rate"}
    po = po[[c for c in po.columns if c in used]]
    rows = _summary_rows(po, by_order)
    out = pd.DataFrame(rows, columns=["metric", "value", "orders"])
    units = {"executed notional": _currency_unit(po)}
    out["unit"] = out["metric"].map(lambda m: units.get(m, SUMMARY_UNITS.get(m, "bp")))
    for t in ("market", "limit"):
        part = po[po["type"] == t]
        if part.empty:
            out[t], out[f"{t}_orders"] = np.nan, 0
            continue
        sub = _summary_rows(part, by_order, t)
        out[t] = [v for _, v, _ in sub]
        out[f"{t}_orders"] = [k for _, _, k in sub]
    return _conform(out, SUMMARY_COLUMNS)


def _shares(po: pd.DataFrame, key: str) -> pd.DataFrame:
    ex = po[po["executed"]]
    g = ex.groupby(key, sort=True)
    out = pd.DataFrame({"orders": g.size(), "notional": g["notional"].sum(min_count=1)})
    out["order_share"] = out["orders"] / out["orders"].sum()
    out["notional_share"] = out["notional"] / out["notional"].sum()
    return out.reset_index()


def venues(
    po: pd.DataFrame,
    trades: pd.DataFrame | None,
    by_order: pd.DataFrame | MakerSums | None = None,
) -> pd.DataFrame:
    """Per venue: order and notional shares, best-venue hit rate, quote slippage, maker share."""
    cols = {
        "venue": "str",
        "orders": "int64",
        "order_share": "float64",
        "notional": "float64",
        "notional_share": "float64",
        "best_venue_hit_rate": "float64",
        "quote_slippage_bp": "float64",
        "maker_share": "float64",
    }
    if not po["executed"].any():
        return empty(cols)
    out = _shares(po, "venue")
    agg = aggregate(po[po["executed"]], ["venue"]).set_index("venue")
    out["best_venue_hit_rate"] = out["venue"].map(agg["best_venue_hit_rate"]).astype("float64")
    out["quote_slippage_bp"] = out["venue"].map(agg["quote_slippage_bp"]).astype("float64")
    maker = maker_share(trades, po, by_order).set_index("venue")
    out["maker_share"] = out["venue"].map(maker["maker_share"]).astype("float64")
    return _conform(out, cols)


def rules(po: pd.DataFrame) -> pd.DataFrame:
    """Per routing rule: order and notional shares of the executed orders."""
    cols = {
        "rule": "str",
        "orders": "int64",
        "order_share": "float64",
        "notional": "float64",
        "notional_share": "float64",
    }
    if not po["executed"].any():
        return empty(cols)
    return _conform(_shares(po, "rule"), cols)


def contingencies(et: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per venue contingency rate of its quotes, and the count of each reason."""
    cols = {"exchange": "str", "quotes": "int64", "contingencies": "int64", "rate": "float64"}
    rcols = {"exchange": "str", "reason": "str", "quotes": "int64", "share_of_venue": "float64"}
    if et is None or len(et) == 0:
        return empty(cols), empty(rcols)
    venue = _text(et, "exchange", NONE_LABEL).replace("", NONE_LABEL)
    q = pd.DataFrame({"exchange": venue, "reason": _text(et, "reason")})
    q["has"] = (q["reason"] != "").astype("int64")
    g = q.groupby("exchange", sort=True)
    per = pd.DataFrame({"quotes": g.size(), "contingencies": g["has"].sum()})
    per["rate"] = per["contingencies"] / per["quotes"]
    counted = q[q["reason"] != ""].groupby(["exchange", "reason"], sort=True).size()
    r = counted.rename("quotes").reset_index()
    r["share_of_venue"] = r["quotes"] / r["exchange"].map(per["quotes"]).astype("float64")
    return _conform(per.reset_index(), cols), _conform(r, rcols)


BREAKDOWN_DIMENSIONS: tuple[str, ...] = (
    "symbol",
    "side",
    "venue",
    "rule",
    "type",
    "month",
    "hour",
    "size_bucket",
)


def _breakdown_sql(source: str) -> str:
    """The breakdown's query over ``source`` (a relation with ``k0``.. the dimensions'
    labels, ``executed`` and the numbers, a missing number null)."""
    # the weighted mean of each metric over the orders with a value and a positive weight
    means = ", ".join(
        f"fsum({m} * {w}) FILTER (WHERE {m} IS NOT NULL AND {w} > 0) / "
        f"fsum({w}) FILTER (WHERE {m} IS NOT NULL AND {w} > 0) AS "
        + ("best_venue_hit_rate" if m == "best_venue_hit" else m)
        for m, w in WEIGHTS.items()
    )
    per_dimension = " UNION ALL ".join(
        f"SELECT {i} AS d, '{dim}' AS dimension, k{i} AS \"group\", count(*) AS orders, "
        f"sum(executed) AS executed, fsum(notional) AS notional, {means}, "
        f"median(tte_s) AS median_tte_s FROM {source} GROUP BY k{i}"
        for i, dim in enumerate(BREAKDOWN_DIMENSIONS)
    )
    return f'SELECT * EXCLUDE (d) FROM ({per_dimension}) ORDER BY d, "group"'


#: the numbers the breakdown reads of every order
_NUMBERS = sorted({"notional", "tte_s", *WEIGHTS, *WEIGHTS.values()} - {"_one"})
BREAKDOWN_COLUMNS = {"dimension": "str", "group": "str"} | AGG_COLUMNS


def breakdown(po: pd.DataFrame) -> pd.DataFrame:
    """The main metrics by each of symbol, side, venue, rule, order type, month, hour of
    the day (UTC) and size bucket: :func:`aggregate` per dimension, computed in one query
    on the report's engine (DuckDB), groups sorted within each dimension."""
    if po.empty:
        return empty(BREAKDOWN_COLUMNS)
    import pyarrow as pa

    from toolkit.report._engine import arrow_text, connection

    def num(name: str) -> pa.Array:
        return pa.array(po[name].to_numpy(dtype="float64"), from_pandas=True)

    data: dict[str, pa.Array] = {
        # a missing label is the text "nan", as the pandas aggregate's group became
        f"k{i}": arrow_text(po[dim]).fill_null("nan")
        for i, dim in enumerate(BREAKDOWN_DIMENSIONS)
    }
    data["executed"] = pa.array(po["executed"].to_numpy(dtype="int64"))
    data["_one"] = pa.array(np.ones(len(po)))
    for name in _NUMBERS:
        data[name] = num(name)
    with connection() as con:
        con.register("po", pa.table(data))
        got: pa.Table = con.sql(_breakdown_sql("po")).to_arrow_table()
    return _conform(got.to_pandas(), BREAKDOWN_COLUMNS)


def breakdown_of_parts(paths: Sequence[Path]) -> pd.DataFrame:
    """:func:`breakdown` of the per-order parts ``paths``, read where they lie by the
    engine (the same query; no order's row comes into memory)."""
    import pyarrow.parquet as pq

    from toolkit.report._engine import connection

    paths = [p for p in paths if pq.ParquetFile(p).metadata.num_rows]
    if not paths:
        return empty(BREAKDOWN_COLUMNS)
    listed = ", ".join("'" + os.fspath(p).replace("'", "''") + "'" for p in paths)

    def label(i: int, dim: str) -> str:
        return f"coalesce(CAST(\"{dim}\" AS VARCHAR), 'nan') AS k{i}"

    def number(name: str) -> str:
        x = f'CAST("{name}" AS DOUBLE)'
        # NaN is a missing number, as pandas reads it
        return f"CASE WHEN isnan({x}) THEN NULL ELSE {x} END AS {name}"

    columns = [label(i, d) for i, d in enumerate(BREAKDOWN_DIMENSIONS)]
    columns += ["CAST(executed AS BIGINT) AS executed", "1.0::DOUBLE AS _one"]
    columns += [number(n) for n in _NUMBERS]
    source = f"(SELECT {', '.join(columns)} FROM read_parquet([{listed}], union_by_name = true))"
    with connection() as con:
        got: pa.Table = con.sql(_breakdown_sql(source)).to_arrow_table()
    return _conform(got.to_pandas(), BREAKDOWN_COLUMNS)
