"""Slippage and routing tables: executed prices against the venue's quote, the best clean
quote and the arrival mid, per order type."""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.report._columns import _conform, empty


def _stats(values: pd.Series, weights: pd.Series) -> dict[str, float]:
    ok = values.notna()
    v, w = values[ok], weights[ok]
    wok = w > 0
    return {
        "orders": float(ok.sum()),
        "notional": float(w[wok].sum()) if wok.any() else np.nan,
        "weighted_mean_bp": float((v[wok] * w[wok]).sum() / w[wok].sum()) if wok.any() else np.nan,
        "mean_bp": float(v.mean()) if len(v) else np.nan,
        "median_bp": float(v.median()) if len(v) else np.nan,
        "p10_bp": float(v.quantile(0.1)) if len(v) else np.nan,
        "p90_bp": float(v.quantile(0.9)) if len(v) else np.nan,
    }


SLIPPAGE_COLUMNS = {
    "type": "str",
    "metric": "str",
    "orders": "int64",
    "notional": "float64",
    "weighted_mean_bp": "float64",
    "mean_bp": "float64",
    "median_bp": "float64",
    "p10_bp": "float64",
    "p90_bp": "float64",
}


def slippage(po: pd.DataFrame) -> pd.DataFrame:
    """Distribution of each slippage measure per order type (market, limit, all): one row
    per measure that has data (the half-spread row is in half-spreads, not bp)."""
    rows = []
    metrics = {
        "routing gap": "routing_gap_bp",
        "quote slippage": "quote_slippage_bp",
        "vs best clean quote": "best_quote_slippage_bp",
        "arrival slippage": "arrival_slippage_bp",
        "arrival slippage (half-spreads)": "arrival_slippage_half_spreads",
    }
    # each type's part copies the columns read, not the per-order table's hundred
    po = po[["type", "notional", *metrics.values()]]
    for t in ("market", "limit", "all"):
        part = po if t == "all" else po[po["type"] == t]
        for label, col in metrics.items():
            if part[col].notna().any():
                rows.append({"type": t, "metric": label, **_stats(part[col], part["notional"])})
    return _conform(pd.DataFrame(rows), SLIPPAGE_COLUMNS) if rows else empty(SLIPPAGE_COLUMNS)


def routing(po: pd.DataFrame) -> pd.DataFrame:
    """Shares of orders improved / at / worse than the best clean quote."""
    cols = {"outcome": "str", "orders": "int64", "share": "float64", "notional_share": "float64"}
    r = po[["routing_outcome", "notional"]].dropna(subset=["routing_outcome"])
    if r.empty:
        return empty(cols)
    g = r.groupby("routing_outcome")
    out = pd.DataFrame({"orders": g.size(), "notional": g["notional"].sum(min_count=1)})
    out = out.reindex(["improved", "at", "worse"], fill_value=0)
    out["share"] = out["orders"] / out["orders"].sum()
    out["notional_share"] = out["notional"] / out["notional"].sum()
    return _conform(out.rename_axis("outcome").reset_index(), cols)
