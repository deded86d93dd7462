"""The latency tables: time to execution per order type and basis (median, p90, p99, mean)
and the count of orders in each latency bucket."""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.report._columns import _conform, empty
from toolkit.report._definitions import LATENCY_BUCKETS


def time_to_execution(po: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per order type and basis: median/p90/p99 seconds; and counts per latency bucket."""
    cols = {
        "type": "str",
        "basis": "str",
        "orders": "int64",
        "median_s": "float64",
        "p90_s": "float64",
        "p99_s": "float64",
        "mean_s": "float64",
    }
    bcols = {"type": "str", "bucket": "str", "orders": "int64", "share": "float64"}
    t = po[po["tte_s"] >= 0]
    if t.empty:
        return empty(cols), empty(bcols)
    g = t.groupby(["type", "tte_basis"], sort=True)["tte_s"]
    out = pd.DataFrame(
        {
            "orders": g.size(),
            "median_s": g.median(),
            "p90_s": g.quantile(0.9),
            "p99_s": g.quantile(0.99),
            "mean_s": g.mean(),
        }
    ).reset_index()
    out = out.rename(columns={"tte_basis": "basis"})
    edges = [b[0] for b in LATENCY_BUCKETS] + [np.inf]
    labels = [b[2] for b in LATENCY_BUCKETS]
    bucket = pd.cut(t["tte_s"], bins=edges, labels=labels, right=False)
    b = (
        pd.DataFrame({"type": t["type"], "bucket": bucket})
        .groupby(["type", "bucket"], observed=False, sort=True)
        .size()
        .rename("orders")
        .reset_index()
    )
    b["bucket"] = b["bucket"].astype(str).astype(object)
    b["share"] = b["orders"] / b.groupby("type")["orders"].transform("sum")
    return _conform(out, cols), _conform(b, bcols)
