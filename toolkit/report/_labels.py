"""What the reader sees of the report's names: one name in words per metric (the tables
keep their column names; the page and the notebook show these), durations in human units,
and the buckets of a breakdown in their natural order with the time zone of an hour."""

from __future__ import annotations

import math
import re

import pandas as pd

from toolkit.report._decomposition import SIZE_BUCKETS

#: the one name of each metric, wherever a table or figure shows it
METRIC_NAMES: dict[str, str] = {
    "quote slippage": "execution slippage",
    "execution slippage (vs chosen venue)": "execution slippage",
    "slippage vs best clean quote": "slippage vs best clean quote",
    "vs best clean quote": "slippage vs best clean quote",
    "fees (venue + operational)": "fees",
}

#: column -> its header in words, the unit in brackets
COLUMN_LABELS: dict[str, str] = {
    "orderId": "order id",
    "type": "order type",
    "excluded_venue": "excluded venue",
    "orders": "orders",
    "executed": "executed orders",
    "notional": "notional",
    "requested_notional": "requested notional",
    "routing_gap_bp": "routing gap (bp)",
    "execution_bp": "execution slippage (bp)",
    "quote_slippage_bp": "execution slippage (bp)",
    "best_quote_slippage_bp": "slippage vs best clean quote (bp)",
    "arrival_slippage_bp": "arrival slippage (bp)",
    "fees_bp": "fees (bp)",
    "fee_total_bp": "fees (bp)",
    "total_bp": "total cost (bp)",
    "total_cost_bp": "total cost (bp)",
    "routing_gap": "routing gap (amount)",
    "execution": "execution slippage (amount)",
    "fees": "fees (amount)",
    "total": "total cost (amount)",
    "total_cost_amount": "total cost (amount)",
    "order_share": "share of orders",
    "notional_share": "share of notional",
    "best_venue_hit_rate": "best-venue hit rate",
    "maker_share": "maker share (trades)",
    "maker_cost_share": "maker share (trade cost)",
    "maker_trades": "maker trades",
    "share_of_venue": "share of the venue's quotes",
    "share_of_orders": "share of orders",
    "cost_bp": "cost (bp)",
    "cost": "cost (amount)",
    "quote_age": "quote age",
    "median_bp": "median (bp)",
    "mean_bp": "mean (bp)",
    "weighted_mean_bp": "weighted mean (bp)",
    "trimmed_mean_bp": "10 % trimmed mean (bp)",
    "robust_sigma_bp": "robust sigma (bp)",
    "p10_bp": "10th percentile (bp)",
    "p90_bp": "90th percentile (bp)",
    "horizon_s": "horizon",
    "eligible": "executed orders with a t0",
    "coverage": "coverage",
    "fill_probability": "fill probability",
    "venue_fee": "venue fee",
    "venue_fee_bp": "venue fee (bp)",
    "operational_fees": "operational fees",
    "operational_bp": "operational fees (bp)",
    "fee_rate": "fee rate",
    "tier_rate": "tier rate",
    "rate_vs_tier_bp": "rate above tier (bp)",
    "fee_cripto": "fee in crypto",
    "orders_above_tier": "orders above tier",
    "weighted_fill_rate": "fill rate (weighted)",
    "mean_fill_rate": "fill rate (mean)",
    "fully_filled_share": "fully filled",
    "median_s": "median",
    "p90_s": "90th percentile",
    "p99_s": "99th percentile",
    "mean_s": "mean",
    "median_tte_s": "median time to execution",
    "market_orders": "market orders (n)",
    "limit_orders": "limit orders (n)",
    "a_orders": "A orders",
    "b_orders": "B orders",
    "a_ci_low": "A 95 % low",
    "a_ci_high": "A 95 % high",
    "b_ci_low": "B 95 % low",
    "b_ci_high": "B 95 % high",
    "b_minus_a": "B - A",
    "diff_bp": "difference (bp)",
    "ci_low": "95 % low",
    "ci_high": "95 % high",
    "ci_low_bp": "95 % low (bp)",
    "ci_high_bp": "95 % high (bp)",
    "ci_low_amount": "95 % low (amount)",
    "ci_high_amount": "95 % high (amount)",
    "day": "day (UTC)",
    "createdAt": "created (UTC)",
    "size_bucket": "size",
    "unfilled_notional": "unfilled notional",
    "opportunity_cost_bp": "opportunity cost (bp)",
    "opportunity_cost_amount": "opportunity cost (amount)",
}

#: dimension values of the breakdown table in words
DIMENSIONS: dict[str, str] = {"size_bucket": "size (notional)", "hour": "hour (UTC)"}


def metric_name(name: str) -> str:
    """The one name of a metric (``quote slippage`` and its other names read
    ``execution slippage``)."""
    return METRIC_NAMES.get(name, name)


def column_label(column: str) -> str:
    """A column's header in words, its unit in brackets: ``quote_slippage_bp`` reads
    ``execution slippage (bp)``; an unknown ``x_y_bp`` reads ``x y (bp)``."""
    if column in COLUMN_LABELS:
        return COLUMN_LABELS[column]
    m = re.fullmatch(r"markout_(-?\d+)s_bp", column)
    if m:
        return f"markout {int(m.group(1)):+d} s (bp)"
    for suffix, unit in (("_bp", " (bp)"), ("_s", ""), ("_share", " (share)")):
        if column.endswith(suffix):
            return column[: -len(suffix)].replace("_", " ") + unit
    return column.replace("_", " ")


def duration(seconds: float) -> str:
    """``seconds`` in the units a reader counts in: ``850 ms``, ``4.2 s``, ``3 min 5 s``,
    ``12 h 8 min``, ``3 d 4 h``; negative durations keep their sign."""
    if math.isnan(seconds):
        return "–"
    sign, s = ("-" if seconds < 0 else ""), abs(seconds)
    if s < 1:
        return f"{sign}{s * 1000:,.0f} ms"
    if s < 60:
        return f"{sign}{s:.1f} s" if s < 10 else f"{sign}{s:.0f} s"
    minutes = round(s) // 60
    if minutes < 60:
        return f"{sign}{minutes} min {round(s) % 60} s"
    hours, minutes = divmod(round(s / 60), 60)
    if hours < 24:
        return f"{sign}{hours} h {minutes} min"
    days, hours = divmod(round(s / 3600), 24)
    return f"{sign}{days:,} d {hours} h"


def _hour_label(group: str) -> str:
    m = re.fullmatch(r"(\d\d)h", group)
    if not m:
        return group
    h = int(m.group(1))
    return f"{h:02d}:00-{(h + 1) % 24:02d}:00 UTC"


_SIZE_RANK = {label: i for i, (_, label) in enumerate(SIZE_BUCKETS)}


def ordered_breakdown(df: pd.DataFrame) -> pd.DataFrame:
    """The breakdown as a reader scans it: size buckets from small to large, hours with
    their time zone (``09:00-10:00 UTC``), every dimension in words; the other groups keep
    their order."""
    if df.empty or "dimension" not in df.columns or "group" not in df.columns:
        return df
    first = {d: i for i, d in enumerate(dict.fromkeys(df["dimension"]))}
    rank = [
        (first[d], _SIZE_RANK.get(g, len(_SIZE_RANK)) if d == "size_bucket" else 0, i)
        for i, (d, g) in enumerate(zip(df["dimension"], df["group"], strict=True))
    ]
    order = [i for *_, i in sorted(rank)]
    out = df.iloc[order].reset_index(drop=True)
    is_hour = out["dimension"] == "hour"
    out["group"] = out["group"].astype(str).where(~is_hour, out["group"].map(_hour_label))
    out["dimension"] = out["dimension"].map(lambda d: DIMENSIONS.get(d, d))
    return out
