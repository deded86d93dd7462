"""The breakdown on the report's engine (toolkit/report/_breakdowns.py) gives, for every
dimension, what the pandas ``aggregate`` gives per group, groups in the same order."""

from __future__ import annotations

import numpy as np
import pandas as pd
from _synthetic import mixed_orders

from toolkit.frames._frames import build_frames
from toolkit.report import _metrics


def test_breakdown_is_the_aggregate_of_each_dimension() -> None:
    po = _metrics.per_order(build_frames(mixed_orders(120, seed=5)))
    # a group with no executed order: its weighted means and notional are NaN, not 0
    po.loc[po.index[:3], "rule"] = "never executed"
    po.loc[po.index[:3], ["executed", "notional", "tte_s"]] = [False, np.nan, np.nan]
    for col in _metrics.WEIGHTS:
        po.loc[po.index[:3], col] = np.nan
    got = _metrics.breakdown(po)
    for dim in _metrics.BREAKDOWN_DIMENSIONS:
        want = _metrics.aggregate(po, [dim]).rename(columns={dim: "group"})
        part = got[got["dimension"] == dim].drop(columns="dimension").reset_index(drop=True)
        want["group"] = want["group"].astype(str)
        pd.testing.assert_frame_equal(part, want, check_dtype=False, rtol=1e-12, obj=dim)
    never = got[(got["dimension"] == "rule") & (got["group"] == "never executed")].iloc[0]
    assert never["orders"] == 3 and never["executed"] == 0
    assert np.isnan(never["notional"]) and np.isnan(never["quote_slippage_bp"])
