"""The metrics of the execution-quality report, as pandas tables computed from the order
frames (and an optional ticker recording): re-exports each metric family and composes them."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

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
from toolkit.report._checks import CHECK_COLUMNS, data_checks, order_field_problems
from toolkit.report._columns import (
    NONE_LABEL,
    PER_ORDER_COLUMNS,
    UTC_NS,
    WEIGHTS,
    empty,
)
from toolkit.report._coverage import frame_notes
from toolkit.report._decomposition import contingency_costs, cost_decomposition, venue_mismatch
from toolkit.report._fees import FEE_AMOUNTS, fees
from toolkit.report._fills import (
    fill_rate,
    funnel,
    maker_by_order,
    maker_share,
    outcomes,
    rejections,
)
from toolkit.report._latency import time_to_execution
from toolkit.report._limits import fill_probability, limit_summary
from toolkit.report._market import MarketLike, markouts
from toolkit.report._per_order import (
    EXECUTED_STATUSES,
    LIMIT_OUTCOMES,
    MARKET_OUTCOMES,
    FramesLike,
    deduplicate,
    per_order,
)
from toolkit.report._quotes import canonical_quotes, quote_problems
from toolkit.report._robust import Period, comparison, headline, robust, worst_orders
from toolkit.report._routing import quote_age
from toolkit.report._slippage import SLIPPAGE_COLUMNS, routing, slippage

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
    market: MarketLike | None = None,
    *,
    max_quote_age: float | None = 60.0,
    compare: Sequence[Period] | None = None,
) -> dict[str, pd.DataFrame]:
    """Every table of the report, by name; ``per_order`` holds the per-order metrics."""
    d = deduplicate(frames)
    po = per_order(d, market, max_quote_age=max_quote_age)
    trades = d.trades
    problems = quote_problems(frames)
    messages = [m for _, m in problems] + [p.message for p in order_field_problems(po)]
    for message in messages:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    cont, reasons = contingencies(canonical_quotes(d))
    tte, buckets = time_to_execution(po)
    makers = maker_by_order(trades)
    return {
        "headline": headline(po),
        "cost_decomposition": cost_decomposition(po),
        "summary": summary(po, trades, makers),
        "slippage": slippage(po),
        "routing": routing(po),
        "worst_orders": worst_orders(po),
        "venues": venues(po, trades, makers),
        "rules": rules(po),
        "contingencies": cont,
        "contingency_reasons": reasons,
        "contingency_costs": contingency_costs(po),
        "venue_mismatch": venue_mismatch(po),
        "quote_age": quote_age(po),
        "markouts": markouts(po),
        "limit_summary": limit_summary(po),
        "fill_probability": fill_probability(po),
        "fees": fees(po),
        "fill_rate": fill_rate(po),
        "outcomes": outcomes(po),
        "funnel": funnel(po),
        "rejections": rejections(po),
        "time_to_execution": tte,
        "latency_buckets": buckets,
        "maker_share": maker_share(trades, po, makers),
        "robust": robust(po),
        "comparison": comparison(po, compare),
        "breakdown": breakdown(po),
        "data_checks": data_checks(
            po,
            d.orders,
            trades,
            quote_problems=problems,
            duplicates=d.duplicate_orders,
            coverage=frame_notes(frames),
        ),
        "per_order": po,
    }
