"""Cost over time: the total trading cost per UTC day, in bp of the notional and in the
quote currency, with a 95 % interval (normal approximation of the ratio estimator), as a
table and a figure; drawn from the per-order table alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from toolkit.report._columns import _conform, empty

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: two-sided 95 % quantile of the normal distribution
Z95 = 1.959964

DAILY_COLUMNS = {
    "day": "str",
    "currency": "str",
    "executed": "int64",
    "orders": "int64",
    "notional": "float64",
    "total_cost_bp": "float64",
    "ci_low_bp": "float64",
    "ci_high_bp": "float64",
    "total_cost_amount": "float64",
    "ci_low_amount": "float64",
    "ci_high_amount": "float64",
}


def daily_cost(po: pd.DataFrame) -> pd.DataFrame:
    """Per UTC day of ``createdAt`` and quote currency: executed orders, the decomposed
    ones (``orders``), their notional, and the total cost = sum of the orders' cost
    amounts / sum of their notional x 1e4 bp, with its 95 % interval R +- 1.96 x se, se =
    sqrt(n / (n - 1) x sum((a_i - R x w_i)^2)) / sum(w_i) (a_i cost amount, w_i notional;
    none for a single order); the amounts are the bp figures x the day's notional / 1e4."""
    if po.empty or "decomposed" not in po.columns:
        return empty(DAILY_COLUMNS)
    ex = po[po["executed"].astype(bool) & po["createdAt"].notna()]
    if ex.empty:
        return empty(DAILY_COLUMNS)
    # each day written once, not once per order
    codes, days = pd.factorize(ex["createdAt"].dt.floor("D"))
    day = pd.Series(days.strftime("%Y-%m-%d").to_numpy()[codes], index=ex.index, dtype="str")
    counts = ex.groupby([day, ex["currency"]]).size().rename("executed")
    d = ex[ex["decomposed"].astype(bool) & (ex["notional"] > 0)]
    dd = day[d.index]
    w = d["notional"].astype("float64")
    a = d["total_cost_amount"].astype("float64")
    keys = [dd, d["currency"]]
    sw = w.groupby(keys).sum()
    sa = a.groupby(keys).sum()
    n = w.groupby(keys).size()
    ratio = sa / sw
    r_i = ratio.reindex(pd.MultiIndex.from_arrays(keys)).to_numpy()
    resid2 = pd.Series(((a.to_numpy() - r_i * w.to_numpy()) ** 2), index=d.index)
    ss = resid2.groupby(keys).sum()
    se = np.sqrt(ss * n / (n - 1).where(n > 1)) / sw
    out = pd.DataFrame(
        {
            "orders": n,
            "notional": sw,
            "total_cost_bp": ratio * 1e4,
            "ci_low_bp": (ratio - Z95 * se) * 1e4,
            "ci_high_bp": (ratio + Z95 * se) * 1e4,
            "total_cost_amount": sa,
        }
    )
    out["ci_low_amount"] = out["ci_low_bp"] * sw / 1e4
    out["ci_high_amount"] = out["ci_high_bp"] * sw / 1e4
    out = counts.to_frame().join(out, how="left")
    out.index = out.index.set_names(["day", "currency"])
    out["orders"] = out["orders"].fillna(0)
    return _conform(out.reset_index().sort_values(["currency", "day"]), DAILY_COLUMNS)


def daily_cost_figure(tables: Mapping[str, pd.DataFrame]) -> Figure:
    """The daily cost of the largest currency: bp with its 95 % band above, the amount
    with its interval below, one point per UTC day."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 4.4), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    t = tables["daily_cost"]
    t = t[t["orders"] > 0] if len(t) else t
    top.set_title("Trading cost per day (UTC), positive = cost")
    if t.empty:
        top.text(0.5, 0.5, "no data: no decomposed order", ha="center", transform=top.transAxes)
        return fig
    cur = t.groupby("currency")["notional"].sum().sort_values().index[-1]
    t = t[t["currency"] == cur]
    x = pd.to_datetime(t["day"]).to_numpy()
    top.fill_between(
        x, t["ci_low_bp"], t["ci_high_bp"], color="C0", alpha=0.25, label="95 % interval"
    )
    top.plot(x, t["total_cost_bp"], color="C0", marker="o", ms=3, label="total cost (bp)")
    top.axhline(0, color="0.5", lw=0.8)
    top.set_ylabel("bp of notional")
    top.legend(fontsize="small", loc="upper left")
    err = np.vstack(
        [
            (t["total_cost_amount"] - t["ci_low_amount"]).clip(lower=0).fillna(0),
            (t["ci_high_amount"] - t["total_cost_amount"]).clip(lower=0).fillna(0),
        ]
    )
    bottom.bar(
        x, t["total_cost_amount"], width=0.8, color="C1", alpha=0.7, label=f"total cost ({cur})"
    )
    bottom.errorbar(
        x, t["total_cost_amount"], yerr=err, fmt="none", ecolor="0.5", label="95 % interval"
    )
    bottom.axhline(0, color="0.5", lw=0.8)
    bottom.set_ylabel(cur)
    bottom.set_xlabel("day (UTC)")
    bottom.legend(fontsize="small", loc="upper left")
    if len(x) == 1:
        bottom.set_xlim(x[0] - np.timedelta64(1, "D"), x[0] + np.timedelta64(1, "D"))
    fig.autofmt_xdate()
    return fig
