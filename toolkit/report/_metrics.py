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
from toolkit.report._checks import (
    CHECK_COLUMNS,
    data_checks,
    order_field_problems,
    slippage_outliers,
)
from toolkit.report._columnar import tables_from_frame
from toolkit.report._columns import (
    NONE_LABEL,
    PER_ORDER_COLUMNS,
    UTC_NS,
    WEIGHTS,
    empty,
)
from toolkit.report._coverage import frame_notes
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
from toolkit.report._robust import Period
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
    checks = data_checks(
        po,
        d.orders,
        trades,
        quote_problems=problems,
        duplicates=d.duplicate_orders,
        coverage=frame_notes(frames),
    )
    # tables_from_frame lists the slippage outliers itself, after the other checks
    outliers = sum(len(f) for f in slippage_outliers(po))
    tables = tables_from_frame(
        po,
        makers=maker_by_order(trades),
        checks=checks.iloc[: len(checks) - outliers],
        contingencies=cont,
        contingency_reasons=reasons,
        compare=compare,
    )
    del tables["daily_cost"]  # the report draws it from per_order (a set read back too)
    return {**tables, "per_order": po}
