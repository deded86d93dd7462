"""Cost decomposition, headline with confidence intervals, robust aggregates, worst orders,
period comparison, contingency costs and limit-order analytics, on hand-computed cases."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _report_frames import T0_MS, closed_order, make_frames

from toolkit.report import _metrics, execution_report
from toolkit.report._robust import _bootstrap, trimmed_mean


def quote(oid: str, rank: int, exchange: str, price: float, reason: str | None = None) -> dict:
    return {"orderId": oid, "rank": rank, "exchange": exchange, "price": price, "reason": reason}


def decomposition_frames() -> Any:
    # market buy "m" on venueA at 100.8, notional 100.8, operational fee 0.1008 (10 bp);
    # quotes: venueB 100.0 (best clean), venueA 100.5, venueC 99.0 excluded (timeout)
    # limit sell "l" on venueA at 101, notional 101; quotes venueA 100 = the best clean
    orders = [
        closed_order("m", "buy", 100.8, operationalFees=0.1008),
        closed_order("l", "sell", 101.0, type="limit", limitPrice=100.5),
    ]
    quotes = [
        quote("m", 0, "venueB", 100.0),
        quote("m", 1, "venueA", 100.5),
        quote("m", 2, "venueC", 99.0, "venue timeout"),
        quote("l", 0, "venueA", 100.0),
    ]
    return make_frames(orders, quotes=quotes)


def test_cost_decomposition_per_order_and_type() -> None:
    tables = _metrics.all_tables(decomposition_frames())
    po = tables["per_order"].set_index("orderId")
    # m: routing gap (100.5 - 100) / 100 = 50 bp; execution (100.8 - 100.5) / 100.5 =
    # 29.8507 bp; fees 0.1008 / 100.8 = 10 bp; total 89.8507 bp
    assert po.loc["m", "routing_gap_bp"] == pytest.approx(50.0)
    assert po.loc["m", "execution_bp"] == pytest.approx(0.3 / 100.5 * 1e4)
    assert po.loc["m", "fees_bp"] == pytest.approx(10.0)
    assert po.loc["m", "total_cost_bp"] == pytest.approx(60 + 0.3 / 100.5 * 1e4)
    # amounts: 50 bp x 100.8 = 0.504 BRL
    assert po.loc["m", "routing_gap_amount"] == pytest.approx(0.504)
    # l: sold at 101 against 100: -(101 - 100) / 100 = -100 bp, no routing gap
    assert po.loc["l", "routing_gap_bp"] == 0.0
    assert po.loc["l", "total_cost_bp"] == pytest.approx(-100.0)
    d = tables["cost_decomposition"].set_index("type")
    assert list(d.index) == ["market", "limit", "all"]
    assert (d["currency"] == "BRL").all()
    m_total = 0.504 + 0.3 / 100.5 * 100.8 + 0.1008
    assert d.loc["market", "total"] == pytest.approx(m_total)
    # all: (m_total - 1.01) / (100.8 + 101) x 1e4, components adding up
    assert d.loc["all", "total_bp"] == pytest.approx((m_total - 1.01) / 201.8 * 1e4)
    parts = d.loc["all", ["routing_gap_bp", "execution_bp", "fees_bp"]].sum()
    assert parts == pytest.approx(d.loc["all", "total_bp"])


def test_headline_separates_market_and_limit_with_intervals() -> None:
    h = _metrics.all_tables(decomposition_frames())["headline"].set_index(["type", "metric"])
    assert h.loc[("market", "routing gap"), "value"] == pytest.approx(50.0)
    assert h.loc[("limit", "total cost"), "value"] == pytest.approx(-100.0)
    # one order per type: no interval from a single order
    lo, hi = h.loc[("market", "routing gap"), ["ci_low", "ci_high"]]
    assert math.isnan(lo) and math.isnan(hi)
    # all: (50 x 100.8 + 0 x 101) / 201.8
    assert h.loc[("all", "routing gap"), "value"] == pytest.approx(50 * 100.8 / 201.8)
    lo, hi = h.loc[("all", "routing gap"), ["ci_low", "ci_high"]]
    assert 0.0 <= lo <= hi <= 50.0


def test_bootstrap_interval_covers_the_mean_and_shrinks_with_n() -> None:
    rng = np.random.default_rng(1)
    small, large = rng.normal(10, 5, 50), rng.normal(10, 5, 5_000)
    ((lo_s, hi_s),) = _bootstrap([small], [np.ones(50)], 300, 7)
    ((lo_l, hi_l),) = _bootstrap([large], [np.ones(5_000)], 300, 7)
    assert lo_s < small.mean() < hi_s and lo_l < large.mean() < hi_l
    # the standard error falls as 1 / sqrt(n): 100 times fewer orders, ~10 times wider
    assert 7.0 < (hi_s - lo_s) / (hi_l - lo_l) < 13.0


def test_robust_aggregates_and_worst_orders() -> None:
    # execution slippage 10, 11, 9, 10, 400 bp on notionals 100: the weighted mean is
    # (10 + 11 + 9 + 10 + 400) / 5 = 88, the median 10, the 10 % trimmed mean of 5 values
    # trims int(0.5) = 0 values: 88; robust sigma 1.4826 x median(|x - 10|) = 1.4826 x 1
    slips = [10.0, 11.0, 9.0, 10.0, 400.0]
    orders = [
        closed_order(f"o{i}", "buy", 100.0 * (1 + s / 1e4), cost=100.0) for i, s in enumerate(slips)
    ]
    frames = make_frames(orders, quotes=[quote(f"o{i}", 0, "venueA", 100.0) for i in range(5)])
    tables = _metrics.all_tables(frames)
    r = tables["robust"].set_index(["type", "metric"]).loc[("market", "execution slippage")]
    assert r["weighted_mean_bp"] == pytest.approx(88.0)
    assert r["median_bp"] == pytest.approx(10.0)
    assert r["trimmed_mean_bp"] == pytest.approx(88.0)
    assert r["robust_sigma_bp"] == pytest.approx(1.4826)
    worst = tables["worst_orders"]
    assert worst["orderId"].iloc[0] == "o4"
    # 400 bp x 100 = 4.00 BRL
    assert worst["total_cost_amount"].iloc[0] == pytest.approx(4.0)
    assert trimmed_mean(np.array([1.0, 2, 3, 4, 5, 6, 7, 8, 9, 100])) == pytest.approx(5.5)


def test_compare_two_periods() -> None:
    day = 86_400_000
    orders = [
        closed_order("a", "buy", 101.0),  # day 0: +100 bp
        closed_order("b", "buy", 100.5, createdAt=T0_MS + day, executedAt=T0_MS + day + 1),
    ]
    frames = make_frames(
        orders, quotes=[quote("a", 0, "venueA", 100.0), quote("b", 0, "venueA", 100.0)]
    )
    t0 = pd.Timestamp(T0_MS, unit="ms", tz="UTC")
    periods = ((t0, t0 + pd.Timedelta(days=1)), (t0 + pd.Timedelta(days=1), None))
    c = execution_report(frames, compare=periods)["comparison"].set_index(["type", "metric"])
    row = c.loc[("market", "execution slippage (vs chosen venue)")]
    # a: +100 bp, b: +50 bp, b - a = -50 bp
    assert (row["a"], row["b"], row["b_minus_a"]) == (
        pytest.approx(100.0),
        pytest.approx(50.0),
        pytest.approx(-50.0),
    )
    assert row["a_orders"] == 1 and row["b_orders"] == 1
    with pytest.raises(ValueError, match="two periods"):
        execution_report(frames, compare=(periods[0],))  # type: ignore[arg-type]


def test_excluded_best_quote_costs_and_venue_mismatch() -> None:
    tables = _metrics.all_tables(decomposition_frames())
    c = tables["contingency_costs"].set_index(["excluded_venue", "reason"])
    row = c.loc[("venueC", "venue timeout")]
    # the clean best 100 against the excluded 99 for a buy: (100 - 99) / 100 = 100 bp, on
    # 100.8 of notional: 1.008 BRL; one of the two executed orders with a best quote
    assert row["cost_bp"] == pytest.approx(100.0)
    assert row["cost"] == pytest.approx(1.008)
    assert row["share_of_orders"] == pytest.approx(0.5)
    # exchange "toolkit-sim" is the service, never a venue: no mismatch
    assert tables["venue_mismatch"].empty
    frames = make_frames(
        [closed_order("x", "buy", 100.0, exchange="venueB", executedExchange="venueA")],
        quotes=[quote("x", 0, "venueB", 100.0), quote("x", 1, "venueA", 100.0)],
    )
    mm = _metrics.all_tables(frames)["venue_mismatch"]
    assert mm[["exchange", "venue", "orders"]].values.tolist() == [["venueB", "venueA", 1]]


def test_limit_order_analytics() -> None:
    limit: dict[str, Any] = {"type": "limit", "amountOriginal": 1.0, "amount": 1.0}
    orders = [
        # buy 1 BTC, limit 99 with the mid at 100: 100 bp away; expired 60 s later with
        # the mid at 102: it missed (102 - 100) / 100 = +200 bp on 1 x 100 = 2.00 BRL
        closed_order(
            "x",
            "buy",
            float("nan"),
            status="EXPIRED",
            limitPrice=99.0,
            filled=0.0,
            cost=float("nan"),
            updatedAt=T0_MS + 60_000,
            expiresAt=T0_MS + 60_000,
            **limit,
        ),
        # filled at 98.9 under a 99 limit: (98.9 - 99) / 99 = -10.101 bp; triggered 30 s in
        closed_order(
            "f",
            "buy",
            98.9,
            limitPrice=99.0,
            triggeredAt=T0_MS + 30_000,
            executedAt=T0_MS + 31_000,
            expiresAt=T0_MS + 7_200_000,
            **limit,
        ),
        # sold at 98 under a 99 limit: beyond the limit
        closed_order("b", "sell", 98.0, limitPrice=99.0, **limit),
        # cancel requested at T0 + 10 s, CANCELLED at T0 + 12.5 s: 2.5 s
        closed_order(
            "c",
            "buy",
            float("nan"),
            status="CANCELLED",
            limitPrice=90.0,
            filled=0.0,
            cost=float("nan"),
            cancelRequestedAt=T0_MS + 10_000,
            updatedAt=T0_MS + 12_500,
            **limit,
        ),
    ]
    ticks = [(T0_MS - 1_000, 100.0), (T0_MS + 59_000, 102.0), (T0_MS + 120_000, 102.0)]
    market = pd.DataFrame(
        {
            "symbol": "BTC/BRL",
            "bid": [m - 0.1 for _, m in ticks],
            "ask": [m + 0.1 for _, m in ticks],
            "last": [m for _, m in ticks],
            "timestamp": pd.to_datetime([t for t, _ in ticks], unit="ms", utc=True),
        }
    )
    tables = _metrics.all_tables(make_frames(orders), market)
    po = tables["per_order"].set_index("orderId")
    assert po.loc["x", "limit_distance_bp"] == pytest.approx(100.0)
    assert po.loc["x", "opportunity_cost_bp"] == pytest.approx(200.0)
    assert po.loc["x", "opportunity_cost_amount"] == pytest.approx(2.0)
    assert po.loc["f", "trigger_slippage_bp"] == pytest.approx(-0.1 / 99 * 1e4)
    assert po.loc["f", "trigger_delay_s"] == pytest.approx(30.0)
    assert po.loc["f", "limit_respected"] == 1.0 and po.loc["b", "limit_respected"] == 0.0
    assert po.loc["c", "cancel_latency_s"] == pytest.approx(2.5)
    s = tables["limit_summary"].set_index("metric")["value"]
    assert s["fills beyond the limit"] == 1
    assert s["median cancel latency"] == pytest.approx(2.5)
    assert s["opportunity cost of unfilled orders (amount)"] == pytest.approx(2.0)
    fp = tables["fill_probability"].set_index(["dimension", "bucket"])
    # x (100 bp, 1 min to expiry) expired and f (100 bp, 2 h to expiry) executed: 1 of 2;
    # b sells with a limit 99 under the mid 100: -100 bp, through the mid, executed; c
    # cancelled with the limit 90 at 1,000 bp from the mid
    assert fp.loc[("distance from mid", "100-500 bp"), "fill_probability"] == 0.5
    assert fp.loc[("distance from mid", "through the mid"), "fill_probability"] == 1.0
    assert fp.loc[("distance from mid", ">= 500 bp"), "orders"] == 1
    assert fp.loc[("time to expiry", "1 h-1 d"), "fill_probability"] == 1.0
    assert math.isnan(po.loc["f", "opportunity_cost_bp"])


def test_quote_age_at_execution_against_slippage() -> None:
    # both executed at T0 + 2 s; "f" on a quote of T0 + 1.5 s (0.5 s old) at +100 bp,
    # "s" on a quote of T0 - 10 s (12 s old) at +300 bp
    orders = [closed_order("f", "buy", 101.0), closed_order("s", "buy", 103.0)]
    quotes = [
        {**quote("f", 0, "venueA", 100.0), "quotedAt": T0_MS + 1_500},
        {**quote("s", 0, "venueA", 100.0), "quotedAt": T0_MS - 10_000},
    ]
    tables = _metrics.all_tables(make_frames(orders, quotes=quotes))
    po = tables["per_order"].set_index("orderId")
    assert po.loc["f", "quote_age_s"] == pytest.approx(0.5)
    assert po.loc["s", "quote_age_s"] == pytest.approx(12.0)
    qa = tables["quote_age"].set_index("quote_age")
    assert list(qa.index) == ["< 1 s", "5-30 s"]
    assert qa.loc["< 1 s", "execution_bp"] == pytest.approx(100.0)
    assert qa.loc["5-30 s", "execution_bp"] == pytest.approx(300.0)
