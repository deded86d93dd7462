"""The metrics of the execution-quality report, as pandas tables computed from the order
frames (and an optional ticker recording): re-exports each metric family and composes them."""

from __future__ import annotations

import warnings

import pandas as pd

from toolkit.report._breakdowns import (
    AGG_COLUMNS,
    BREAKDOWN_DIMENSIONS,
    aggregate,
    breakdown,
    contingencies,
    rules,
    summary,
    venues,
)
from toolkit.report._checks import CHECK_COLUMNS, data_checks
from toolkit.report._columns import (
    NONE_LABEL,
    PER_ORDER_COLUMNS,
    UTC_NS,
    WEIGHTS,
    empty,
)
from toolkit.report._fees import FEE_AMOUNTS, fees
from toolkit.report._fills import fill_rate, funnel, maker_share, outcomes, rejections
from toolkit.report._latency import time_to_execution
from toolkit.report._per_order import (
    EXECUTED_STATUSES,
    LIMIT_OUTCOMES,
    MARKET_OUTCOMES,
    FramesLike,
    per_order,
)
from toolkit.report._quotes import canonical_quotes, quote_problem
from toolkit.report._slippage import SLIPPAGE_COLUMNS, markouts, routing, slippage

__all__ = [
    "AGG_COLUMNS",
    "BREAKDOWN_DIMENSIONS",
    "CHECK_COLUMNS",
    "EXECUTED_STATUSES",
    "FEE_AMOUNTS",
    "LIMIT_OUTCOMES",
    "MARKET_OUTCOMES",
    "NONE_LABEL",
    "PER_ORDER_COLUMNS",
    "SLIPPAGE_COLUMNS",
    "UTC_NS",
    "WEIGHTS",
    "FramesLike",
    "aggregate",
    "all_tables",
    "breakdown",
    "contingencies",
    "data_checks",
    "empty",
    "fees",
    "fill_rate",
    "funnel",
    "maker_share",
    "markouts",
    "outcomes",
    "per_order",
    "rejections",
    "routing",
    "rules",
    "slippage",
    "summary",
    "time_to_execution",
    "venues",
]


def all_tables(
    frames: FramesLike,
    market: pd.DataFrame | None = None,
    *,
    max_quote_age: float | None = 60.0,
) -> dict[str, pd.DataFrame]:
    """Every table of the report, by name; ``per_order`` holds the per-order metrics."""
    po = per_order(frames, market, max_quote_age=max_quote_age)
    trades = getattr(frames, "trades", None)
    problem = quote_problem(frames)
    if problem:
        warnings.warn(problem, RuntimeWarning, stacklevel=3)
    orders = frames.orders if frames.orders is not None else pd.DataFrame()
    cont, reasons = contingencies(canonical_quotes(frames))
    tte, buckets = time_to_execution(po)
    return {
        "summary": summary(po, trades),
        "slippage": slippage(po),
        "routing": routing(po),
        "venues": venues(po, trades),
        "rules": rules(po),
        "contingencies": cont,
        "contingency_reasons": reasons,
        "markouts": markouts(po),
        "fees": fees(po),
        "fill_rate": fill_rate(po),
        "outcomes": outcomes(po),
        "funnel": funnel(po),
        "rejections": rejections(po),
        "time_to_execution": tte,
        "latency_buckets": buckets,
        "maker_share": maker_share(trades, po),
        "breakdown": breakdown(po),
        "data_checks": data_checks(po, orders, trades, quote_problem=problem),
        "per_order": po,
    }
