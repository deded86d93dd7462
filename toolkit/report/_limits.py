"""Limit-order analytics: distance of the limit from the mid at creation, fill probability by
that distance and by time to expiry, trigger delay and trigger slippage against the limit,
fills that break the limit, opportunity cost of the unfilled orders, and cancel latency."""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.report._columns import LIMIT_COLUMNS, _conform, _num, _time, empty

__all__ = [
    "LIMIT_COLUMNS",
    "add_limit_columns",
    "add_limit_mids",
    "fill_probability",
    "limit_summary",
]

#: (upper bound, label) of the buckets of the limit's distance from the mid (bp)
DISTANCE_BUCKETS: tuple[tuple[float, str], ...] = (
    (0.0, "through the mid"),
    (10.0, "0-10 bp"),
    (50.0, "10-50 bp"),
    (100.0, "50-100 bp"),
    (500.0, "100-500 bp"),
    (np.inf, ">= 500 bp"),
)
#: (upper bound s, label) of the buckets of the time to expiry
EXPIRY_BUCKETS: tuple[tuple[float, str], ...] = (
    (3_600.0, "< 1 h"),
    (86_400.0, "1 h-1 d"),
    (7 * 86_400.0, "1-7 d"),
    (np.inf, ">= 7 d"),
)
#: a fill beyond the limit by more than this (relative) breaks the limit
LIMIT_TOLERANCE = 1e-9
FINALIZED = ("executed", "expired", "cancelled")


def add_limit_columns(po: pd.DataFrame, o: pd.DataFrame) -> pd.DataFrame:
    """The per-order limit columns that need no market data (NaN for market orders)."""
    is_limit = po["type"] == "limit"
    limit = _num(o, "limitPrice").where(is_limit & (_num(o, "limitPrice") > 0))
    sign = po["sign"]
    po["limit_price"] = limit
    expires = _time(o, "expiresAt")
    po["time_to_expiry_s"] = (expires - po["createdAt"]).dt.total_seconds().where(is_limit)
    po["trigger_delay_s"] = (po["triggeredAt"] - po["createdAt"]).dt.total_seconds()
    po["trigger_delay_s"] = po["trigger_delay_s"].where(is_limit)
    filled_limit = is_limit & po["executed"] & limit.notna()
    po["trigger_slippage_bp"] = (sign * (po["average"] - limit) / limit * 1e4).where(filled_limit)
    beyond = sign * (po["average"] - limit) > LIMIT_TOLERANCE * limit
    po["limit_respected"] = (~beyond).astype("float64").where(filled_limit)
    amount = _num(o, "amountOriginal")
    amount = amount.where(amount > 0, _num(o, "amount"))
    filled = _num(o, "filled").fillna(0.0)
    unfilled = (amount - filled).clip(lower=0.0)
    ended = po["outcome"].isin(["expired", "cancelled"]) & is_limit
    po["endedAt"] = _time(o, "updatedAt").where(ended)
    po["_unfilled"] = unfilled.where(ended)
    requested = _time(o, "cancelRequestedAt")
    cancelled = po["status"] == "CANCELLED"
    latency = (_time(o, "updatedAt") - requested).dt.total_seconds()
    po["cancel_latency_s"] = latency.where(cancelled & is_limit)
    return po


def add_limit_mids(po: pd.DataFrame) -> pd.DataFrame:
    """The limit columns that need the mid at creation (``creation_mid``) and at the end of
    an unfilled order (``end_mid``), both from the market recording."""
    for col in ("creation_mid", "end_mid"):
        if col not in po.columns:
            po[col] = np.nan
    sign, mid0, limit = po["sign"], po["creation_mid"], po["limit_price"]
    # buy: a limit below the mid waits for the price to fall; positive = away from the mid
    po["limit_distance_bp"] = sign * (mid0 - limit) / mid0 * 1e4
    ended = po["endedAt"].notna()
    po["unfilled_notional"] = (po["_unfilled"] * mid0).where(ended)
    # the move the client missed: after a buy not filled the price rose (a cost)
    move = sign * (po["end_mid"] - mid0) / mid0 * 1e4
    po["opportunity_cost_bp"] = move.where(ended)
    po["opportunity_cost_amount"] = po["opportunity_cost_bp"] * po["unfilled_notional"] / 1e4
    return po.drop(columns="_unfilled")


def _bucket(v: pd.Series, buckets: tuple[tuple[float, str], ...]) -> pd.Series:
    edges = [-np.inf] + [b for b, _ in buckets]
    labels = [lbl for _, lbl in buckets]
    return pd.cut(v, bins=edges, labels=labels, right=False).astype(object)


def fill_probability(po: pd.DataFrame) -> pd.DataFrame:
    """Finalized limit orders (executed, expired, cancelled) by distance of the limit from
    the mid at creation and by time to expiry: orders, executed, fill probability."""
    cols = {
        "dimension": "str",
        "bucket": "str",
        "orders": "int64",
        "executed": "int64",
        "fill_probability": "float64",
    }
    lim = po[(po["type"] == "limit") & po["outcome"].isin(FINALIZED)]
    if lim.empty:
        return empty(cols)
    parts = []
    for dim, col, buckets in (
        ("distance from mid", "limit_distance_bp", DISTANCE_BUCKETS),
        ("time to expiry", "time_to_expiry_s", EXPIRY_BUCKETS),
    ):
        b = _bucket(lim[col], buckets).fillna("(unknown)")
        hit = (lim["outcome"] == "executed").astype("int64")
        g = pd.DataFrame({"bucket": b, "hit": hit}).groupby("bucket", sort=False)
        out = pd.DataFrame({"orders": g.size(), "executed": g["hit"].sum()})
        order = [lbl for _, lbl in buckets] + ["(unknown)"]
        out = out.reindex([x for x in order if x in out.index]).reset_index()
        out.insert(0, "dimension", dim)
        parts.append(out)
    res = pd.concat(parts, ignore_index=True)
    res["fill_probability"] = res["executed"] / res["orders"]
    return _conform(res, cols)


def limit_summary(po: pd.DataFrame) -> pd.DataFrame:
    """Limit orders: trigger delay, trigger slippage against the limit, fills breaking the
    limit, opportunity cost of the unfilled ones, cancel latency."""
    cols = {"metric": "str", "value": "float64", "unit": "str", "orders": "int64"}
    lim = po[po["type"] == "limit"]
    if lim.empty:
        return empty(cols)

    def med(col: str) -> tuple[float, int]:
        v = lim[col].dropna()
        return (float(v.median()) if len(v) else np.nan), len(v)

    def weighted(col: str, weight: str) -> tuple[float, int]:
        v, w = lim[col], lim[weight]
        ok = v.notna() & (w > 0)
        return (float((v[ok] * w[ok]).sum() / w[ok].sum()) if ok.any() else np.nan), int(ok.sum())

    respected = lim["limit_respected"].dropna()
    opp = lim["opportunity_cost_amount"].dropna()
    lat = lim["cancel_latency_s"].dropna()
    rows = [
        ("median time from creation to trigger", *med("trigger_delay_s"), "s"),
        ("trigger slippage vs the limit", *weighted("trigger_slippage_bp", "notional"), "bp"),
        (
            "fills beyond the limit",
            float((respected == 0).sum()),
            len(respected),
            "count",
        ),
        (
            "opportunity cost of unfilled orders",
            *weighted("opportunity_cost_bp", "unfilled_notional"),
            "bp",
        ),
        (
            "opportunity cost of unfilled orders (amount)",
            float(opp.sum()) if len(opp) else np.nan,
            len(opp),
            "amount",
        ),
        ("median cancel latency", *med("cancel_latency_s"), "s"),
        ("p90 cancel latency", float(lat.quantile(0.9)) if len(lat) else np.nan, len(lat), "s"),
    ]
    out = pd.DataFrame(
        [(m, v, u, n) for m, v, n, u in rows], columns=["metric", "value", "unit", "orders"]
    )
    return _conform(out, cols)
