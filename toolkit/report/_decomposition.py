"""The cost decomposition: per executed order, the routing gap (the chosen venue's quote
against the best clean quote), the execution slippage against the chosen venue's own quote,
and the fees; in bp of the notional and in the symbol's quote currency, then aggregated per
order type and currency, notional-weighted."""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.report._columns import _conform, empty

#: (component, bp column, amount column) in the order they add up
COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("routing gap", "routing_gap_bp", "routing_gap_amount"),
    ("execution slippage", "execution_bp", "execution_amount"),
    ("fees", "fees_bp", "fee_amount"),
)

#: (upper bound of the notional, label) of the size buckets, in the quote currency
SIZE_BUCKETS: tuple[tuple[float, str], ...] = (
    (1e3, "< 1k"),
    (1e4, "1k-10k"),
    (1e5, "10k-100k"),
    (1e6, "100k-1M"),
    (np.inf, ">= 1M"),
)


def add_decomposition(po: pd.DataFrame) -> pd.DataFrame:
    """Per-order routing gap, execution slippage, fees and total (bp and quote currency);
    ``decomposed`` marks the executed orders with both a chosen-venue and a best quote."""
    notional = po["notional"]
    quote = po.get("quote", pd.Series(np.nan, index=po.index))
    best = po.get("best_quote", pd.Series(np.nan, index=po.index))
    gap = po["sign"] * (quote - best) / best * 1e4
    # a venue quoting the best price is no routing cost, whatever the list order
    po["routing_gap_bp"] = gap.where(gap.abs() > 1e-9, 0.0).where(gap.notna())
    po["execution_bp"] = po.get("quote_slippage_bp", pd.Series(np.nan, index=po.index))
    decomposed = po["executed"] & po["routing_gap_bp"].notna() & po["execution_bp"].notna()
    po["decomposed"] = decomposed
    fees_bp = po["fee_total_bp"].where(po["fee_total_bp"].notna(), 0.0)
    po["fees_bp"] = fees_bp.where(decomposed, po["fee_total_bp"])
    po["total_cost_bp"] = (po["routing_gap_bp"] + po["execution_bp"] + fees_bp).where(decomposed)
    po["routing_gap_amount"] = po["routing_gap_bp"] * notional / 1e4
    po["execution_amount"] = po["execution_bp"] * notional / 1e4
    po["total_cost_amount"] = po["total_cost_bp"] * notional / 1e4
    edges = [0.0] + [b for b, _ in SIZE_BUCKETS]
    size = pd.cut(notional, bins=edges, labels=[lbl for _, lbl in SIZE_BUCKETS], right=False)
    po["size_bucket"] = size.astype(object).where(notional.notna(), "(not executed)")
    return po


DECOMPOSITION_COLUMNS = {
    "type": "str",
    "currency": "str",
    "orders": "int64",
    "notional": "float64",
    "routing_gap_bp": "float64",
    "execution_bp": "float64",
    "fees_bp": "float64",
    "total_bp": "float64",
    "routing_gap": "float64",
    "execution": "float64",
    "fees": "float64",
    "total": "float64",
}


def cost_decomposition(po: pd.DataFrame) -> pd.DataFrame:
    """Per order type (market, limit, all) and quote currency: the decomposition of the
    decomposed orders, each component as notional-weighted bp and as an amount."""
    d = po[po["decomposed"].astype(bool) & (po["notional"] > 0)]
    if d.empty:
        return empty(DECOMPOSITION_COLUMNS)
    fee_amount = d["fee_amount"].where(d["fee_amount"].notna(), 0.0)
    work = pd.DataFrame(
        {
            "type": d["type"],
            "currency": d["currency"],
            "notional": d["notional"],
            "routing_gap": d["routing_gap_amount"],
            "execution": d["execution_amount"],
            "fees": fee_amount,
        }
    )
    # each type, then every order as "all": grouped apart, never a second copy of the
    # orders labelled "all" (the same rows in the same order: the same sums)
    sums = ["notional", "routing_gap", "execution", "fees"]
    g = work.groupby(["type", "currency"], sort=True)
    every = work.groupby("currency", sort=True)
    out = pd.concat(
        [
            g[sums].sum().assign(orders=g.size()),
            every[sums]
            .sum()
            .assign(orders=every.size(), type="all")
            .set_index("type", append=True)
            .reorder_levels(["type", "currency"]),
        ]
    )
    out = out.sort_index()
    out["total"] = out[["routing_gap", "execution", "fees"]].sum(axis=1)
    for name in ("routing_gap", "execution", "fees", "total"):
        out[f"{name}_bp"] = out[name] / out["notional"] * 1e4
    out = out.reset_index()
    rank = out["type"].map({"market": 0, "limit": 1, "all": 3}).fillna(2)
    out = out.assign(_r=rank).sort_values(["_r", "type", "currency"]).drop(columns="_r")
    return _conform(out, DECOMPOSITION_COLUMNS)


def contingency_costs(po: pd.DataFrame) -> pd.DataFrame:
    """Executed orders whose overall best quote carried a contingency reason (so it was
    excluded): per venue of that quote and reason, how often and what the exclusion cost
    (the clean best against the excluded quote, bp and quote currency)."""
    cols = {
        "excluded_venue": "str",
        "reason": "str",
        "currency": "str",
        "orders": "int64",
        "share_of_orders": "float64",
        "cost_bp": "float64",
        "cost": "float64",
    }
    if "overall_best_reason" not in po.columns:
        return empty(cols)
    ex = po[po["executed"] & po["best_quote"].notna()]
    hit = ex[ex["overall_best_reason"].astype(str) != ""]
    if hit.empty:
        return empty(cols)
    bp = hit["sign"] * (hit["best_quote"] - hit["overall_best_quote"]) / hit["best_quote"] * 1e4
    work = pd.DataFrame(
        {
            "excluded_venue": hit["overall_best_venue"].astype(str),
            "reason": hit["overall_best_reason"].astype(str),
            "currency": hit["currency"],
            "_wx": bp * hit["notional"],
            "_w": hit["notional"].where(bp.notna()),
        }
    )
    g = work.groupby(["excluded_venue", "reason", "currency"], sort=True)
    out = pd.DataFrame({"orders": g.size(), "cost": g["_wx"].sum(min_count=1) / 1e4})
    out["cost_bp"] = g["_wx"].sum(min_count=1) / g["_w"].sum(min_count=1)
    out["share_of_orders"] = out["orders"] / len(ex)
    return _conform(out.reset_index(), cols)


def venue_mismatch(po: pd.DataFrame) -> pd.DataFrame:
    """Executed orders whose executedExchange differs from exchange where the exchange is a
    venue (not service-managed mode, where exchange names the service itself)."""
    cols = {"exchange": "str", "venue": "str", "orders": "int64", "notional": "float64"}
    mismatch = po["executed"] & (po["venue"] != po["exchange"]) & (po["exchange"] != "")
    ex = po.loc[mismatch, ["exchange", "venue", "notional"]]
    if ex.empty:
        return empty(cols)
    venues = set(po.loc[po["executed"], "venue"].astype(str).unique())
    quoted = set(po.get("best_venue", pd.Series(dtype=object)).dropna().astype(str).unique())
    # an exchange that is itself a venue somewhere (executed or quoted) is not the service
    ex = ex[ex["exchange"].isin(venues | quoted)]
    if ex.empty:
        return empty(cols)
    g = ex.groupby(["exchange", "venue"], sort=True)
    out = pd.DataFrame({"orders": g.size(), "notional": g["notional"].sum(min_count=1)})
    return _conform(out.reset_index(), cols)
