"""Cost over time and the drill-down, and the figures' own words: the daily cost in bp and
BRL with its 95 % interval (hand-checked), the small chart of each worst order (its quotes,
its fill, the arrival mid), the legends (waterfall, CDF with the orders it rests on) and
figures drawn in the page's text colour."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from toolkit.report._daily import daily_cost, daily_cost_figure
from toolkit.report._drilldown import order_chart, worst_order_quotes
from toolkit.report._figures import CDF_POINTS, cost_waterfall, latency_cdf
from toolkit.report._svg import INK, figure_svg, ink

DAY = pd.Timestamp("2026-11-02 09:00", tz="UTC")


def _po(amounts: list[float], notionals: list[float], days: list[int]) -> pd.DataFrame:
    n = len(amounts)
    return pd.DataFrame(
        {
            "executed": [True] * n,
            "decomposed": [True] * n,
            "currency": ["BRL"] * n,
            "createdAt": [DAY + pd.Timedelta(days=d) for d in days],
            "notional": notionals,
            "total_cost_amount": amounts,
        }
    )


def test_daily_cost_in_bp_and_brl_with_its_interval() -> None:
    # day 1: a = 1, 2, 3 BRL on w = 100, 100, 200 -> R = 6 / 400 = 150 bp; residuals
    # -0.5, 0.5, 0 -> se = sqrt(3/2 x 0.5) / 400 = 0.0021651 -> +-42.43 bp
    # day 2: a single order: its cost, no interval
    t = daily_cost(_po([1.0, 2.0, 3.0, 4.0], [100.0, 100.0, 200.0, 1_000.0], [0, 0, 0, 1]))
    first, second = t.iloc[0], t.iloc[1]
    assert (first["day"], first["orders"], first["executed"]) == ("2026-11-02", 3, 3)
    assert first["total_cost_bp"] == pytest.approx(150.0)
    assert first["total_cost_amount"] == pytest.approx(6.0)
    half = 1.959964 * math.sqrt(0.75) / 400 * 1e4
    assert first["ci_low_bp"] == pytest.approx(150.0 - half)
    assert first["ci_high_bp"] == pytest.approx(150.0 + half)
    assert first["ci_low_amount"] == pytest.approx((150.0 - half) * 400 / 1e4)
    assert second["total_cost_bp"] == pytest.approx(40.0)
    assert math.isnan(second["ci_low_bp"]) and math.isnan(second["ci_high_amount"])


def test_daily_cost_counts_executed_orders_it_could_not_decompose() -> None:
    po = _po([1.0, 2.0], [100.0, 100.0], [0, 0])
    po.loc[1, "decomposed"] = False
    row = daily_cost(po).iloc[0]
    assert (row["orders"], row["executed"]) == (1, 2)
    assert row["total_cost_bp"] == pytest.approx(100.0)


def test_daily_cost_figure_has_its_band_and_units() -> None:
    tables = {"daily_cost": daily_cost(_po([1.0, 2.0, 3.0], [100.0, 100.0, 200.0], [0, 0, 1]))}
    with ink():
        fig = daily_cost_figure(tables)
    top, bottom = fig.axes
    assert top.get_ylabel() == "bp of notional" and bottom.get_ylabel() == "BRL"
    assert bottom.get_xlabel() == "day (UTC)"
    assert [t.get_text() for t in top.get_legend().get_texts()] == [
        "95 % interval",
        "total cost (bp)",
    ]
    assert top.collections, "the interval is drawn as a band"


def test_cdf_legend_counts_every_order_not_the_points_drawn() -> None:
    n = CDF_POINTS + 54
    po = pd.DataFrame(
        {"tte_s": np.linspace(0.1, 100, n), "type": "market", "tte_basis": "createdAt"}
    )
    with ink():
        fig = latency_cdf({"per_order": po})
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == [f"market orders from createdAt (n={n:,})"]
    assert "%" in fig.axes[0].get_ylabel() and "(s" in fig.axes[0].get_xlabel()


def test_waterfall_has_a_legend() -> None:
    d = pd.DataFrame(
        {
            "type": ["market", "all"],
            "currency": ["BRL", "BRL"],
            "notional": [100.0, 100.0],
            "routing_gap_bp": [2.0, 2.0],
            "execution_bp": [-1.0, -1.0],
            "fees_bp": [3.0, 3.0],
        }
    )
    with ink():
        fig = cost_waterfall({"cost_decomposition": d})
    legend = fig.axes[0].get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()][:2] == ["adds to the cost", "saves cost"]


def test_figures_draw_in_the_page_text_colour_on_no_background() -> None:
    d = pd.DataFrame({"type": [], "currency": [], "notional": []})
    with ink():
        fig = cost_waterfall({"cost_decomposition": d})
    svg = figure_svg(fig, "cost_waterfall")
    assert svg.startswith("<svg") and "currentColor" in svg
    assert INK not in svg and "#ffffff" not in svg.lower()
    assert "http" not in svg and 'aria-label="cost_waterfall"' in svg


class _Frames:
    def __init__(self, quotes: pd.DataFrame) -> None:
        self.evaluated_tickers = quotes


def test_each_worst_order_charts_its_quotes_fill_and_arrival_mid() -> None:
    quotes = pd.DataFrame(
        {
            "orderId": ["a", "a", "a", "b"],
            "rank": [0, 1, 2, 0],
            "exchange": ["v1", "v2", "v3", "v1"],
            "price": [100.0, 99.5, 99.0, 50.0],
            "reason": ["", "", "venue timeout", ""],
            "quotedAt": [0, 0, 0, 0],
        }
    )
    worst = pd.DataFrame({"orderId": ["a"]})
    q = worst_order_quotes(_Frames(quotes), worst)
    assert q["orderId"].tolist() == ["a"] * 3
    assert q["venue"].tolist() == ["v1", "v2", "v3"]
    po = pd.DataFrame(
        {
            "orderId": ["a"],
            "side": ["buy"],
            "symbol": ["BTC/BRL"],
            "currency": ["BRL"],
            "venue": ["v1"],
            "average": [100.2],
            "arrival_mid": [99.6],
            "total_cost_bp": [25.0],
        }
    )
    with ink():
        fig = order_chart({"per_order": po, "worst_order_quotes": q}, "a")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["quote", "excluded quote", "fill (average)", "arrival mid"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["v1", "v2", "v3"]
    assert ax.get_ylabel() == "BRL" and "+25.0 bp" in ax.get_title()
