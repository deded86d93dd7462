"""Aggregates and breakdowns: the weighted main metrics overall and per group, the summary,
per-venue, per-rule and contingency tables, and the breakdown by every dimension."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from toolkit.report._columns import NONE_LABEL, WEIGHTS, _conform, _text, empty
from toolkit.report._fills import maker_share

AGG_COLUMNS: dict[str, str] = {
    "orders": "int64",
    "executed": "int64",
    "notional": "float64",
    "quote_slippage_bp": "float64",
    "best_quote_slippage_bp": "float64",
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
    work = po.assign(_all="all", _one=1.0, _exec=po["executed"].astype("int64"))
    sums: dict[str, pd.Series] = {}
    for metric, weight in WEIGHTS.items():
        w = work[weight]
        ok = work[metric].notna() & (w > 0)
        work[f"_wx_{metric}"] = (work[metric] * w).where(ok)
        work[f"_w_{metric}"] = w.where(ok)
    g = work.groupby(keys, sort=True, dropna=False)
    sums["orders"] = g.size()
    sums["executed"] = g["_exec"].sum()
    sums["notional"] = g["notional"].sum(min_count=1)
    for metric in WEIGHTS:
        wx = g[f"_wx_{metric}"].sum(min_count=1)
        w = g[f"_w_{metric}"].sum(min_count=1)
        name = "best_venue_hit_rate" if metric == "best_venue_hit" else metric
        sums[name] = wx / w
    sums["median_tte_s"] = g["tte_s"].median()
    out = pd.DataFrame(sums).reset_index()
    if not by:
        out = out.drop(columns="_all")
    return _conform(out, cols if by else AGG_COLUMNS)


def summary(po: pd.DataFrame, trades: pd.DataFrame | None) -> pd.DataFrame:
    """Headline numbers: metric, value, unit, orders (how many orders the value rests on)."""
    cols = {"metric": "str", "value": "float64", "unit": "str", "orders": "int64"}
    a = aggregate(po)
    if a.empty:
        return empty(cols)
    row = a.iloc[0]
    ex = po[po["executed"]]
    tte = ex["tte_s"].dropna()
    maker = maker_share(trades, po)
    maker_all = maker[maker["venue"] == "(all)"]
    rows: list[tuple[str, float, str, int]] = [
        ("orders", float(row["orders"]), "count", int(row["orders"])),
        ("executed orders", float(row["executed"]), "count", int(row["executed"])),
        ("executed notional", float(row["notional"]), "fiat", int(row["executed"])),
        (
            "quote slippage",
            row["quote_slippage_bp"],
            "bp",
            int(ex["quote_slippage_bp"].notna().sum()),
        ),
        (
            "slippage vs best clean quote",
            row["best_quote_slippage_bp"],
            "bp",
            int(ex["best_quote_slippage_bp"].notna().sum()),
        ),
        (
            "best-venue hit rate",
            row["best_venue_hit_rate"],
            "share",
            int(ex["best_venue_hit"].notna().sum()),
        ),
        (
            "arrival slippage",
            row["arrival_slippage_bp"],
            "bp",
            int(ex["arrival_slippage_bp"].notna().sum()),
        ),
        (
            "fees (venue + operational)",
            row["fee_total_bp"],
            "bp",
            int(ex["fee_total_bp"].notna().sum()),
        ),
        ("fill rate", row["fill_rate"], "share", int(po["fill_rate"].notna().sum())),
        ("median time to execution", row["median_tte_s"], "s", int(tte.size)),
        (
            "p90 time to execution",
            float(tte.quantile(0.9)) if tte.size else np.nan,
            "s",
            int(tte.size),
        ),
        (
            "maker share (trades)",
            float(maker_all["maker_share"].iloc[0]) if len(maker_all) else np.nan,
            "share",
            int(maker_all["trades"].iloc[0]) if len(maker_all) else 0,
        ),
    ]
    return _conform(pd.DataFrame(rows, columns=list(cols)), cols)


def _shares(po: pd.DataFrame, key: str) -> pd.DataFrame:
    ex = po[po["executed"]]
    g = ex.groupby(key, sort=True)
    out = pd.DataFrame({"orders": g.size(), "notional": g["notional"].sum(min_count=1)})
    out["order_share"] = out["orders"] / out["orders"].sum()
    out["notional_share"] = out["notional"] / out["notional"].sum()
    return out.reset_index()


def venues(po: pd.DataFrame, trades: pd.DataFrame | None) -> pd.DataFrame:
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
    maker = maker_share(trades, po).set_index("venue")
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


BREAKDOWN_DIMENSIONS: tuple[str, ...] = ("symbol", "side", "venue", "rule", "type", "month")


def breakdown(po: pd.DataFrame) -> pd.DataFrame:
    """The main metrics by each of symbol, side, venue, rule, order type and month."""
    cols = {"dimension": "str", "group": "str"} | AGG_COLUMNS
    if po.empty:
        return empty(cols)
    parts = []
    for dim in BREAKDOWN_DIMENSIONS:
        a = aggregate(po, [dim]).rename(columns={dim: "group"})
        a.insert(0, "dimension", dim)
        a["group"] = a["group"].astype(str).astype(object)
        parts.append(a)
    return _conform(pd.concat(parts, ignore_index=True), cols)
