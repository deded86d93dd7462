"""The fee table: venue fees (fiat, and crypto priced at the fill) and operational fees per
symbol, in bp of notional, and the fee rate charged against the tier rate."""

from __future__ import annotations

import pandas as pd

from toolkit.report._columns import _conform, empty

FEE_AMOUNTS = ("fee_cost", "fee_cripto_fiat", "venue_fee", "operational_fees")


def fees(po: pd.DataFrame) -> pd.DataFrame:
    """Per symbol: the venue fee counted (fee.cost, or fee.cripto priced at the fill) and
    the operational fees, as amounts in the quote currency and in bp of the notional of the
    orders that carry them, fee.cripto as reported (crypto units), and the fee rate against
    the tier rate. fee.cost and fee.cripto x average are one fee: where they disagree the
    data checks say so, rather than two more near-identical columns here."""
    cols = {
        "symbol": "str",
        "currency": "str",
        "orders": "int64",
        "notional": "float64",
        "venue_fee": "float64",
        "venue_fee_bp": "float64",
        "operational_fees": "float64",
        "operational_bp": "float64",
        "fee_total_bp": "float64",
        "fee_rate": "float64",
        "tier_rate": "float64",
        "rate_vs_tier_bp": "float64",
        "fee_cripto": "float64",
        "orders_above_tier": "int64",
    }
    ex = po[po["executed"] & (po["notional"] > 0)]
    has_fee = ex[["fee_cost", "fee_cripto", "operational_fees", "fee_rate"]].notna().any(axis=1)
    ex = ex[has_fee]
    if ex.empty:
        return empty(cols)
    w = ex["notional"]
    extra: dict[str, pd.Series] = {
        "_above": (ex["fee_rate_vs_tier_bp"] > 1e-6).astype("int64"),
        "_wt": ex["fee_total_bp"] * w,
        "_wtw": w.where(ex["fee_total_bp"].notna()),
    }
    for col in (*FEE_AMOUNTS, "fee_rate", "tier_rate"):
        extra[f"_w_{col}"] = w.where(ex[col].notna())
        extra[f"_wx_{col}"] = ex[col] * w
    work = ex.assign(**extra)
    g = work.groupby(["symbol", "currency"], sort=True)
    out = pd.DataFrame(
        {
            "orders": g.size(),
            "notional": g["notional"].sum(min_count=1),
            "fee_cripto": g["fee_cripto"].sum(min_count=1),
            "orders_above_tier": g["_above"].sum(),
            "fee_total_bp": g["_wt"].sum(min_count=1) / g["_wtw"].sum(min_count=1),
        }
    )
    for col in FEE_AMOUNTS:
        out[col] = g[col].sum(min_count=1)
    for col, bp in (("venue_fee", "venue_fee_bp"), ("operational_fees", "operational_bp")):
        out[bp] = out[col] / g[f"_w_{col}"].sum(min_count=1) * 1e4
    for col in ("fee_rate", "tier_rate"):
        out[col] = g[f"_wx_{col}"].sum(min_count=1) / g[f"_w_{col}"].sum(min_count=1)
    out["rate_vs_tier_bp"] = (out["fee_rate"] - out["tier_rate"]) * 1e4
    return _conform(out.reset_index(), cols)
