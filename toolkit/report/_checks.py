"""The data checks: orders whose average or quote amount disagree with their trades, negative
times to execution, and slippage outliers (absolute, or in robust sigmas of the median)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.report._columns import _conform, _num, _text, empty
from toolkit.report._definitions import CHECK_TOLERANCE_BP, OUTLIER_ABS_BP, OUTLIER_SIGMAS

CHECK_COLUMNS = {
    "orderId": "str",
    "check": "str",
    "value": "float64",
    "expected": "float64",
    "diff_bp": "float64",
    "detail": "str",
}


def data_checks(
    po: pd.DataFrame,
    orders: pd.DataFrame,
    trades: pd.DataFrame | None,
    *,
    quote_problem: str | None = None,
) -> pd.DataFrame:
    """Orders whose numbers disagree with their trades, or whose slippage is an outlier;
    ``quote_problem`` (the quotes could not be read) becomes a row of its own."""
    found: list[pd.DataFrame] = []
    if quote_problem:
        found.append(
            pd.DataFrame(
                {"orderId": [""], "check": ["evaluatedTickers fields"], "detail": [quote_problem]}
            )
        )
    if trades is not None and len(trades) and "orderId" in trades.columns and len(orders):
        t = pd.DataFrame(
            {
                "orderId": _text(trades, "orderId"),
                "amount": _num(trades, "amount"),
                "cost": _num(trades, "cost"),
            }
        )
        g = t.groupby("orderId")
        agg = pd.DataFrame(
            {
                "amount": g["amount"].sum(min_count=1),
                "cost": g["cost"].sum(min_count=1),
                "n": g.size(),
            }
        )
        agg["vwap"] = agg["cost"] / agg["amount"].where(agg["amount"] > 0)
        # trade costs are rounded to cents: half a cent per trade is not an error
        slack_fiat = 0.005 * agg["n"] + 1e-9
        ids = _text(orders, "id")
        checks = {
            "average vs trades VWAP": (
                pd.Series(_num(orders, "average").to_numpy(), index=ids),
                agg["vwap"],
                slack_fiat / agg["amount"].where(agg["amount"] > 0),
            ),
            "quoteAmount vs sum of trade costs": (
                pd.Series(_num(orders, "quoteAmount").to_numpy(), index=ids),
                agg["cost"],
                slack_fiat,
            ),
        }
        for name, (value, expected, slack) in checks.items():
            v = value[~value.index.duplicated()].reindex(expected.index)
            diff = (v - expected) / expected.where(expected != 0) * 1e4
            bad = (diff.abs() > CHECK_TOLERANCE_BP) & ((v - expected).abs() > slack)
            if bad.any():
                found.append(
                    pd.DataFrame(
                        {
                            "orderId": expected.index[bad],
                            "check": name,
                            "value": v[bad].to_numpy(),
                            "expected": expected[bad].to_numpy(),
                            "diff_bp": diff[bad].to_numpy(),
                            "detail": f"differs by more than {CHECK_TOLERANCE_BP:g} bp",
                        }
                    )
                )
    neg = po[po["tte_s"] < 0]
    if len(neg):
        found.append(
            pd.DataFrame(
                {
                    "orderId": neg["orderId"],
                    "check": "negative time to execution",
                    "value": neg["tte_s"],
                    "detail": "executedAt before " + neg["tte_basis"].astype(str),
                }
            )
        )
    for col in ("quote_slippage_bp", "best_quote_slippage_bp", "arrival_slippage_bp"):
        found.extend(_outliers(po, col))
    if not found:
        return empty(CHECK_COLUMNS)
    return _conform(pd.concat(found, ignore_index=True), CHECK_COLUMNS)


def _outliers(po: pd.DataFrame, col: str) -> list[pd.DataFrame]:
    v = po[col]
    ok = v.dropna()
    if ok.empty:
        return []
    med = float(ok.median())
    sigma = 1.4826 * float((ok - med).abs().median())
    far = (v - med).abs() > OUTLIER_SIGMAS * sigma if sigma > 0 else pd.Series(False, index=v.index)
    bad = (v.abs() > OUTLIER_ABS_BP) | far
    bad = bad & v.notna()
    if not bad.any():
        return []
    detail = np.where(
        v[bad].abs() > OUTLIER_ABS_BP,
        f"|{col}| > {OUTLIER_ABS_BP:g} bp",
        f"beyond {OUTLIER_SIGMAS:g} robust sigmas ({sigma:.2f} bp) of the median {med:.2f} bp",
    )
    return [
        pd.DataFrame(
            {
                "orderId": po.loc[bad, "orderId"],
                "check": f"outlier {col}",
                "value": v[bad],
                "expected": med,
                "diff_bp": v[bad] - med,
                "detail": detail,
            }
        )
    ]
