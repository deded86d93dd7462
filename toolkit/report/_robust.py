"""Headline numbers per order type with bootstrap 95 % confidence intervals, robust
aggregates (median, trimmed mean, robust sigma), the worst orders and the comparison of two
periods."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from toolkit.errors import InvalidRequest
from toolkit.report._columns import _conform, empty
from toolkit.report._definitions import BOOTSTRAP_RESAMPLES

#: (metric, per-order column, unit, weight column): the headline, each with a CI
HEADLINE: tuple[tuple[str, str, str, str], ...] = (
    ("routing gap", "routing_gap_bp", "bp", "notional"),
    ("execution slippage (vs chosen venue)", "execution_bp", "bp", "notional"),
    ("fees (venue + operational)", "fee_total_bp", "bp", "notional"),
    ("total cost", "total_cost_bp", "bp", "notional"),
    ("arrival slippage", "arrival_slippage_bp", "bp", "notional"),
    ("best-venue hit rate", "best_venue_hit", "share", "_one"),
    ("fill rate", "fill_rate", "share", "requested_notional"),
)
HEADLINE_TYPES = ("market", "limit", "all")
BOOTSTRAP_SEED = 20_251_113
TRIM = 0.1
WORST_N = 20

HEADLINE_COLUMNS = {
    "type": "str",
    "metric": "str",
    "unit": "str",
    "orders": "int64",
    "value": "float64",
    "ci_low": "float64",
    "ci_high": "float64",
}


def _weights(po: pd.DataFrame, weight: str) -> pd.Series:
    if weight == "_one":
        return pd.Series(1.0, index=po.index)
    return po[weight].astype("float64")


#: above this many orders the resampling draws random blocks of orders (as many blocks)
BOOTSTRAP_BLOCKS = 5_000


def _blocks(
    xs: list[np.ndarray], ws: list[np.ndarray], seed: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Orders summed into ``BOOTSTRAP_BLOCKS`` random blocks: per block sum(w x) as x and
    sum(w) as w. Resampling independent orders' blocks keeps the variance of the sums (each
    block of m orders has m times an order's variance), at a fraction of the cost."""
    n = len(xs[0])
    rng = np.random.default_rng(seed + 1)
    block = rng.permutation(n) % BOOTSTRAP_BLOCKS
    bx, bw = [], []
    for x, w in zip(xs, ws, strict=True):
        sw = np.bincount(block, weights=w, minlength=BOOTSTRAP_BLOCKS)
        swx = np.bincount(block, weights=x * w, minlength=BOOTSTRAP_BLOCKS)
        with np.errstate(invalid="ignore", divide="ignore"):
            bx.append(np.where(sw > 0, swx / np.where(sw > 0, sw, 1.0), 0.0))
        bw.append(sw)
    return bx, bw


def _bootstrap(
    xs: list[np.ndarray], ws: list[np.ndarray], resamples: int, seed: int
) -> list[tuple[float, float]]:
    """Percentile 95 % intervals of the weighted means sum(w x) / sum(w) of several metrics
    over the same resampled orders (one multinomial draw of the orders per resample)."""
    n = len(xs[0]) if xs else 0
    if n < 2 or resamples <= 0:
        return [(np.nan, np.nan)] * len(xs)
    if n > BOOTSTRAP_BLOCKS:
        xs, ws = _blocks(xs, ws, seed)
        n = BOOTSTRAP_BLOCKS
    rng = np.random.default_rng(seed)
    wx = np.stack([np.nan_to_num(x * w) for x, w in zip(xs, ws, strict=True)], axis=1)
    w = np.stack(ws, axis=1)
    means = np.empty((resamples, len(xs)))
    chunk = max(1, min(resamples, 2_000_000 // n))
    done = 0
    while done < resamples:
        k = min(chunk, resamples - done)
        counts = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(k)])
        counts = counts.astype("float64")
        with np.errstate(invalid="ignore", divide="ignore"):
            means[done : done + k] = (counts @ wx) / (counts @ w)
        done += k
    out = []
    for j in range(len(xs)):
        m = means[:, j]
        m = m[np.isfinite(m)]
        out.append(tuple(np.percentile(m, [2.5, 97.5])) if len(m) else (np.nan, np.nan))
    return out  # type: ignore[return-value]


def headline(po: pd.DataFrame, *, resamples: int = BOOTSTRAP_RESAMPLES) -> pd.DataFrame:
    """Per order type (market, limit, all) and headline metric: orders, notional-weighted
    value (weights as ``HEADLINE`` says), bootstrap 95 % interval."""
    if po.empty:
        return empty(HEADLINE_COLUMNS)
    # each type's part copies the columns read, not the per-order table's hundred
    used = {"type", *(col for _, col, _, _ in HEADLINE), *(w for *_, w in HEADLINE)}
    po = po[[c for c in po.columns if c in used]]
    rows = []
    for t in HEADLINE_TYPES:
        part = po if t == "all" else po[po["type"] == t]
        if part.empty:
            continue
        xs, ws, labels = [], [], []
        for metric, col, unit, weight in HEADLINE:
            x = part[col].astype("float64").to_numpy()
            w = _weights(part, weight).to_numpy()
            ok = np.isfinite(x) & (w > 0)
            w = np.where(ok, w, 0.0)
            xs.append(np.where(ok, x, 0.0))
            ws.append(w)
            value = float((xs[-1] * w).sum() / w.sum()) if w.sum() > 0 else np.nan
            labels.append((metric, unit, int(ok.sum()), value))
        cis = _bootstrap(xs, ws, resamples, BOOTSTRAP_SEED)
        for (metric, unit, n, value), (lo, hi) in zip(labels, cis, strict=True):
            if n == 0:
                lo = hi = np.nan
            rows.append((t, metric, unit, n, value, lo, hi))
    return _conform(pd.DataFrame(rows, columns=list(HEADLINE_COLUMNS)), HEADLINE_COLUMNS)


ROBUST_METRICS: tuple[tuple[str, str], ...] = (
    ("routing gap", "routing_gap_bp"),
    ("execution slippage", "execution_bp"),
    ("total cost", "total_cost_bp"),
    ("arrival slippage", "arrival_slippage_bp"),
)


def trimmed_mean(v: np.ndarray, trim: float = TRIM) -> float:
    """Mean of the values left after cutting ``trim`` of them at each end."""
    v = np.sort(v[np.isfinite(v)])
    k = int(np.floor(len(v) * trim))
    core = v[k : len(v) - k] if len(v) > 2 * k else v
    return float(core.mean()) if len(core) else np.nan


def robust(po: pd.DataFrame) -> pd.DataFrame:
    """Per order type and metric: weighted mean beside median, 10 % trimmed mean and robust
    sigma (1.4826 x median absolute deviation), so outliers cannot hide."""
    cols = {
        "type": "str",
        "metric": "str",
        "orders": "int64",
        "weighted_mean_bp": "float64",
        "median_bp": "float64",
        "trimmed_mean_bp": "float64",
        "robust_sigma_bp": "float64",
        "p10_bp": "float64",
        "p90_bp": "float64",
    }
    rows = []
    po = po[["type", "notional", *(col for _, col in ROBUST_METRICS)]]
    for t in HEADLINE_TYPES:
        part = po if t == "all" else po[po["type"] == t]
        for label, col in ROBUST_METRICS:
            v = part[col].dropna()
            if v.empty:
                continue
            w = part.loc[v.index, "notional"]
            ok = w > 0
            med = float(v.median())
            rows.append(
                {
                    "type": t,
                    "metric": label,
                    "orders": len(v),
                    "weighted_mean_bp": float((v[ok] * w[ok]).sum() / w[ok].sum())
                    if ok.any()
                    else np.nan,
                    "median_bp": med,
                    "trimmed_mean_bp": trimmed_mean(v.to_numpy()),
                    "robust_sigma_bp": 1.4826 * float((v - med).abs().median()),
                    "p10_bp": float(v.quantile(0.1)),
                    "p90_bp": float(v.quantile(0.9)),
                }
            )
    return _conform(pd.DataFrame(rows), cols) if rows else empty(cols)


WORST_COLUMNS = {
    "orderId": "str",
    "type": "str",
    "symbol": "str",
    "venue": "str",
    "createdAt": "datetime64[ns, UTC]",
    "currency": "str",
    "notional": "float64",
    "routing_gap_bp": "float64",
    "execution_bp": "float64",
    "fees_bp": "float64",
    "total_cost_bp": "float64",
    "total_cost_amount": "float64",
}


def worst_orders(po: pd.DataFrame, n: int = WORST_N) -> pd.DataFrame:
    """The ``n`` decomposed orders with the highest total cost in the quote currency."""
    d = po[po["decomposed"].astype(bool)].dropna(subset=["total_cost_amount"])
    if d.empty:
        return empty(WORST_COLUMNS)
    top = d.nlargest(n, "total_cost_amount")
    return _conform(top[list(WORST_COLUMNS)], WORST_COLUMNS)


Period = tuple[Any, Any]

COMPARISON_COLUMNS = {
    "type": "str",
    "metric": "str",
    "unit": "str",
    "a_orders": "int64",
    "a": "float64",
    "a_ci_low": "float64",
    "a_ci_high": "float64",
    "b_orders": "int64",
    "b": "float64",
    "b_ci_low": "float64",
    "b_ci_high": "float64",
    "b_minus_a": "float64",
}


def _utc(value: Any) -> pd.Timestamp:
    ts = pd.Timestamp(value)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def in_period(po: pd.DataFrame, period: Period) -> pd.DataFrame:
    """The orders created in the half-open period [start, end) (None: open)."""
    start, end = period
    keep = po["createdAt"].notna()
    if start is not None:
        keep &= po["createdAt"] >= _utc(start)
    if end is not None:
        keep &= po["createdAt"] < _utc(end)
    return po[keep]


def comparison(po: pd.DataFrame, compare: Sequence[Period] | None) -> pd.DataFrame:
    """The headline of period a beside period b (created in [start, end)), b - a."""
    if not compare:
        return empty(COMPARISON_COLUMNS)
    if len(compare) != 2:
        raise InvalidRequest("compare takes two periods: ((start_a, end_a), (start_b, end_b))")
    a, b = (headline(in_period(po, p)).set_index(["type", "metric"]) for p in compare)
    keys = a.index.union(b.index, sort=False)
    a, b = a.reindex(keys), b.reindex(keys)
    out = pd.DataFrame(
        {
            "unit": a["unit"].fillna(b["unit"]),
            "a_orders": a["orders"].fillna(0),
            "a": a["value"],
            "a_ci_low": a["ci_low"],
            "a_ci_high": a["ci_high"],
            "b_orders": b["orders"].fillna(0),
            "b": b["value"],
            "b_ci_low": b["ci_low"],
            "b_ci_high": b["ci_high"],
        }
    )
    out["b_minus_a"] = out["b"] - out["a"]
    return _conform(out.reset_index(), COMPARISON_COLUMNS)
