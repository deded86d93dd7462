"""The coverage rule of the report's page: a metric resting on too few of the orders it
applies to says "insufficient coverage (n of N)" instead of showing a figure or a chart,
and what each chart rests on (n of N orders)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

#: default: a metric needs at least 20 % of the orders it applies to ...
MIN_COVERAGE = 0.20
#: ... and at least 30 of them
MIN_ORDERS = 30


@dataclass(frozen=True)
class CoverageRule:
    """When a metric is shown: on at least ``min_orders`` orders and ``min_coverage`` of
    the orders it applies to (``MIN_ORDERS`` = 30 and ``MIN_COVERAGE`` = 20 % by
    default)."""

    min_coverage: float = MIN_COVERAGE
    min_orders: int = MIN_ORDERS

    def enough(self, n: int, total: int) -> bool:
        """Whether ``n`` orders of ``total`` are enough to show the metric."""
        return total > 0 and n >= self.min_orders and n / total >= self.min_coverage

    def describe(self) -> str:
        """The rule in words, for the page."""
        return (
            f"a figure resting on fewer than {self.min_orders:,} orders or on less than "
            f"{self.min_coverage:.0%} of the orders it applies to reads 'insufficient "
            "coverage (n of N)' instead of a value or a chart"
        )


def insufficient(n: int, total: int) -> str:
    """The words shown instead of a metric or a chart."""
    return f"insufficient coverage ({n:,} of {total:,})"


def coverage_words(n: int, total: int, what: str = "orders") -> str:
    """What a figure rests on, shown beside it: ``96 of 139 orders (69 %)``."""
    share = f" ({n / total * 100:.0f}\u00a0%)" if total else ""  # no-break: "69 %" stays whole
    return f"{n:,} of {total:,} {what}{share}"


def executed(tables: Mapping[str, pd.DataFrame], kind: str = "all") -> int:
    """Executed orders of an order type (``all``: every type)."""
    po = tables["per_order"]
    if po.empty:
        return 0
    ex = po["executed"].astype(bool)
    if kind != "all":
        ex = ex & (po["type"] == kind)
    return int(ex.sum())


def _count(po: pd.DataFrame, column: str) -> int:
    return int(po[column].notna().sum()) if column in po.columns else 0


def figure_coverage(name: str, tables: Mapping[str, pd.DataFrame]) -> tuple[int, int]:
    """(n, N) of a chart: the orders it rests on and the orders it applies to."""
    po = tables["per_order"]
    total = executed(tables)
    if name in ("cost_waterfall", "daily_cost"):
        return int(po["decomposed"].astype(bool).sum()) if len(po) else 0, total
    if name in ("slippage_distribution", "slippage_over_time"):
        return _count(po, "quote_slippage_bp"), total
    if name == "markout_curve":
        m = tables["markouts"]
        if m.empty:
            return 0, total
        best = m.sort_values(["orders", "coverage"]).iloc[-1]
        return int(best["orders"]), int(best["eligible"])
    if name == "latency_cdf":
        return int((po["tte_s"] >= 0).sum()) if len(po) else 0, total
    if name == "fee_rate_over_time":
        ok = po["fee_rate"].notna() | po["tier_rate"].notna() if len(po) else po["fee_rate"]
        return int(ok.sum()), total
    if name == "limit_funnel":
        n = int((po["type"] == "limit").sum()) if len(po) else 0
        return n, n
    return total, total
