"""Each metric of the execution-quality report on small cases computed by hand, plus
empty, single-order, missing-column and NaN inputs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _report_frames import T0_MS, Frames, closed_order, make_frames

from toolkit.report import _metrics
from toolkit.report._definitions import MARKOUT_HORIZONS_S


def quote(oid: str, rank: int, exchange: str, price: float, reason: str | None = None) -> dict:
    return {
        "orderId": oid,
        "rank": rank,
        "exchange": exchange,
        "price": price,
        "quotedAt": T0_MS - 100,
        "reason": reason,
    }


def trade(
    oid: str, tid: str, price: float, amount: float, maker: bool = False, **over: Any
) -> dict:
    row = {
        "orderId": oid,
        "id": tid,
        "takerOrMaker": "maker" if maker else "taker",
        "type": "market",
        "side": "buy",
        "price": price,
        "amount": amount,
        "cost": round(price * amount, 2),
        "timestamp": T0_MS + 1_000,
    }
    row.update(over)
    return row


def po_of(frames: Frames, market: pd.DataFrame | None = None, **kw: Any) -> pd.DataFrame:
    return _metrics.per_order(frames, market, **kw).set_index("orderId")


# ------------------------------------------------------------------ quote slippage


def test_quote_slippage_sign_buy_and_sell() -> None:
    frames = make_frames(
        [
            closed_order("b", "buy", 101.0),  # paid 101 for a 100 quote: +100 bp cost
            closed_order("s", "sell", 99.0),  # got 99 for a 100 quote: +100 bp cost
            closed_order("g", "sell", 101.0),  # got 101 for a 100 quote: -100 bp (a gain)
        ],
        quotes=[quote(o, 0, "venueA", 100.0) for o in ("b", "s", "g")],
    )
    po = po_of(frames)
    assert po.loc["b", "quote_slippage_bp"] == pytest.approx(100.0)
    assert po.loc["s", "quote_slippage_bp"] == pytest.approx(100.0)
    assert po.loc["g", "quote_slippage_bp"] == pytest.approx(-100.0)
    assert po.loc["b", "sign"] == 1.0
    assert po.loc["s", "sign"] == -1.0


def test_quote_slippage_uses_the_executing_venue() -> None:
    # service-managed: exchange is the service, the venue is executedExchange
    managed = closed_order("m", "buy", 100.5, exchange="toolkit-sim", executedExchange="venueB")
    # direct: no executedExchange, the venue is exchange
    direct = closed_order("d", "buy", 100.5, exchange="venueA", executedExchange=None)
    frames = make_frames(
        [managed, direct],
        quotes=[
            quote("m", 0, "venueA", 100.0),
            quote("m", 1, "venueB", 100.5),
            quote("d", 0, "venueA", 100.0),
            quote("d", 1, "venueB", 100.5),
        ],
    )
    po = po_of(frames)
    assert po.loc["m", "venue"] == "venueB"
    assert po.loc["m", "quote"] == 100.5
    assert po.loc["m", "quote_slippage_bp"] == pytest.approx(0.0)
    assert po.loc["d", "venue"] == "venueA"
    assert po.loc["d", "quote_slippage_bp"] == pytest.approx(50.0)


def test_quote_slippage_is_notional_weighted() -> None:
    # 100 of notional at +10 bp and 300 at +30 bp: (100 x 10 + 300 x 30) / 400 = 25 bp
    frames = make_frames(
        [
            closed_order("a", "buy", 100.1, cost=100.0),
            closed_order("b", "buy", 100.3, cost=300.0),
        ],
        quotes=[quote("a", 0, "venueA", 100.0), quote("b", 0, "venueA", 100.0)],
    )
    tables = _metrics.all_tables(frames)
    slip = tables["slippage"]
    row = slip[slip["type"] == "all"].set_index("metric").loc["quote slippage"]
    assert row["weighted_mean_bp"] == pytest.approx(25.0)
    assert row["mean_bp"] == pytest.approx(20.0)
    summary = tables["summary"].set_index("metric")
    assert summary.loc["quote slippage", "value"] == pytest.approx(25.0)
    assert summary.loc["quote slippage", "orders"] == 2


# ------------------------------------------------------------------ routing


def routing_frames() -> Frames:
    return make_frames(
        [
            # best clean buy quote is venueA 100 (venueB 99 has a contingency): 100.2 = +20 bp
            closed_order("w", "buy", 100.2, executedExchange="venueC"),
            # best clean sell quote is the highest, venueB 101; sold at 101 = at the quote
            closed_order("a", "sell", 101.0, executedExchange="venueB"),
            # bought at 99.9 against a best clean 100: -10 bp, improved
            closed_order("i", "buy", 99.9, executedExchange="venueA"),
        ],
        quotes=[
            quote("w", 0, "venueA", 100.0),
            quote("w", 1, "venueB", 99.0, "venue timeout"),
            quote("w", 2, "venueC", 100.5),
            quote("a", 0, "venueA", 100.0),
            quote("a", 1, "venueB", 101.0),
            quote("a", 2, "venueC", 102.0, "price deviation"),
            quote("i", 0, "venueA", 100.0),
            quote("i", 1, "venueC", 100.0, "insufficient liquidity"),
        ],
    )


def test_best_clean_quote_and_routing_outcome() -> None:
    po = po_of(routing_frames())
    assert po.loc["w", "best_quote"] == 100.0
    assert po.loc["w", "best_venue"] == "venueA"
    assert po.loc["w", "best_quote_slippage_bp"] == pytest.approx(20.0)
    assert po.loc["w", "routing_outcome"] == "worse"
    assert po.loc["w", "best_venue_hit"] == 0.0
    assert po.loc["a", "best_quote"] == 101.0
    assert po.loc["a", "best_venue"] == "venueB"
    assert po.loc["a", "best_quote_slippage_bp"] == pytest.approx(0.0)
    assert po.loc["a", "routing_outcome"] == "at"
    assert po.loc["a", "best_venue_hit"] == 1.0
    assert po.loc["i", "best_quote_slippage_bp"] == pytest.approx(-10.0)
    assert po.loc["i", "routing_outcome"] == "improved"
    assert po.loc["i", "quotes_seen"] == 2
    assert po.loc["i", "contingencies"] == 1


def test_routing_shares_and_hit_rate() -> None:
    tables = _metrics.all_tables(routing_frames())
    r = tables["routing"].set_index("outcome")
    assert list(r.index) == ["improved", "at", "worse"]
    assert r["orders"].tolist() == [1, 1, 1]
    assert r["share"].tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    summary = tables["summary"].set_index("metric")
    # hit rate is by order count: 2 of 3 executed at the best clean venue
    assert summary.loc["best-venue hit rate", "value"] == pytest.approx(2 / 3)
    v = tables["venues"].set_index("venue")
    assert v.loc["venueC", "best_venue_hit_rate"] == 0.0
    assert v.loc["venueB", "best_venue_hit_rate"] == 1.0


def test_contingency_rate_per_venue_with_reasons() -> None:
    cont, reasons = _metrics.contingencies(routing_frames().evaluated_tickers)
    c: Any = cont.set_index("exchange")
    # venueC quoted 3 times, 2 with a reason; venueB 2 times, 1; venueA 3 times, none
    assert c.loc["venueC", ["quotes", "contingencies"]].tolist() == [3, 2]
    assert c.loc["venueC", "rate"] == pytest.approx(2 / 3)
    assert c.loc["venueB", "rate"] == pytest.approx(0.5)
    assert c.loc["venueA", "rate"] == 0.0
    r = reasons.set_index(["exchange", "reason"])
    assert r.loc[("venueB", "venue timeout"), "quotes"] == 1
    assert r.loc[("venueC", "price deviation"), "share_of_venue"] == pytest.approx(1 / 3)
    assert len(reasons) == 3


# ------------------------------------------------------------------ market: arrival and markouts


def ticker(symbol: str, at_ms: int, mid: float, spread: float = 0.2) -> dict:
    return {
        "received_at": pd.Timestamp(at_ms + 5, unit="ms", tz="UTC"),
        "symbol": symbol,
        "bid": mid - spread / 2,
        "ask": mid + spread / 2,
        "last": mid,
        "timestamp": pd.Timestamp(at_ms, unit="ms", tz="UTC"),
    }


def market_frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    df["received_at"] = df["received_at"].astype("datetime64[ns, UTC]")
    df["timestamp"] = df["timestamp"].astype("datetime64[ms, UTC]")
    return df


def test_arrival_uses_the_last_quote_at_or_before_creation_never_after() -> None:
    frames = make_frames(
        [
            closed_order("b", "buy", 101.0),
            closed_order("s", "sell", 99.0),
            closed_order("e", "buy", 101.0, createdAt=T0_MS + 10_000, executedAt=T0_MS + 11_000),
        ]
    )
    market = market_frame(
        [
            ticker("BTC/BRL", T0_MS - 5_000, 100.0),
            # 1 ms after creation: a look-ahead quote, must not be the arrival price
            ticker("BTC/BRL", T0_MS + 1, 200.0),
            # another symbol, closer in time: never used for BTC/BRL
            ticker("ETH/BRL", T0_MS, 50.0),
            # exactly at createdAt of "e": allowed (at or before)
            ticker("BTC/BRL", T0_MS + 10_000, 100.0),
        ]
    )
    po = po_of(frames, market)
    assert po.loc["b", "arrival_mid"] == 100.0
    assert po.loc["b", "arrival_slippage_bp"] == pytest.approx(100.0)
    assert po.loc["s", "arrival_slippage_bp"] == pytest.approx(100.0)
    assert po.loc["e", "arrival_mid"] == 100.0


def test_arrival_ignores_stale_tickers() -> None:
    frames = make_frames([closed_order("b", "buy", 101.0)])
    # the ETH ticker after createdAt: the recording runs past the order
    market = market_frame(
        [ticker("BTC/BRL", T0_MS - 61_000, 100.0), ticker("ETH/BRL", T0_MS + 5_000, 50.0)]
    )
    assert math.isnan(po_of(frames, market)["arrival_slippage_bp"].iloc[0])
    po = po_of(frames, market, max_quote_age=None)
    assert po["arrival_slippage_bp"].iloc[0] == pytest.approx(100.0)


def test_markouts_signed_against_the_client() -> None:
    frames = make_frames(
        [
            closed_order("b", "buy", 100.0, cost=100.0),
            closed_order("s", "sell", 100.0, cost=300.0),
        ]
    )
    # t0 = executedAt = T0 + 2 s; the mid at t0 + h is the last one at or before it
    rows = [ticker("BTC/BRL", T0_MS + h * 1_000, 100.0) for h in (-60, -20, 0, 20)]
    # one minute later the mid is 99: the buy lost, the sell gained
    rows += [ticker("BTC/BRL", T0_MS + 60_000, 99.0), ticker("BTC/BRL", T0_MS + 120_000, 101.0)]
    # the recording runs until T0 + 130 s: it covers t0 + 120 s = T0 + 122 s
    rows += [ticker("BTC/BRL", T0_MS + 130_000, 101.0)]
    po = po_of(frames, market_frame(rows))
    assert po.loc["b", "markout_0s_bp"] == pytest.approx(0.0)
    # buy: (100 - 99) / 99 x 1e4 = +101.01 bp (the price fell after buying)
    assert po.loc["b", "markout_60s_bp"] == pytest.approx(1e4 / 99)
    assert po.loc["s", "markout_60s_bp"] == pytest.approx(-1e4 / 99)
    # at +120 s the mid is 101: buy -99.01 bp, sell +99.01 bp
    assert po.loc["b", "markout_120s_bp"] == pytest.approx(-1e4 / 101)
    assert po.loc["s", "markout_120s_bp"] == pytest.approx(1e4 / 101)
    m = _metrics.markouts(_metrics.per_order(frames, market_frame(rows))).set_index("horizon_s")
    assert list(m.index) == list(MARKOUT_HORIZONS_S)
    # weighted: (100 x 101.01 + 300 x -101.01) / 400 = -50.505 bp
    assert m.loc[60, "weighted_mean_bp"] == pytest.approx(-0.5 * 1e4 / 99)


def test_limit_markouts_anchor_on_execution() -> None:
    order = closed_order(
        "l",
        "buy",
        100.0,
        type="limit",
        createdAt=T0_MS - 3_600_000,
        triggeredAt=T0_MS,
        executedAt=T0_MS + 500,
    )
    rows = [
        ticker("BTC/BRL", T0_MS - 3_600_000, 90.0),
        ticker("BTC/BRL", T0_MS, 100.0),
        ticker("BTC/BRL", T0_MS + 60_000, 98.0),
        ticker("BTC/BRL", T0_MS + 61_000, 98.0),
    ]
    po = po_of(make_frames([order]), market_frame(rows))
    # arrival is at creation (mid 90); markouts run from executedAt = T0 + 0.5 s (mid 100
    # then, at T0 + 60.5 s, 98)
    assert po.loc["l", "arrival_slippage_bp"] == pytest.approx((100 - 90) / 90 * 1e4)
    assert po.loc["l", "markout_0s_bp"] == pytest.approx(0.0)
    assert po.loc["l", "markout_60s_bp"] == pytest.approx((100 - 98) / 98 * 1e4)


def test_mid_falls_back_to_last_without_bid_and_ask() -> None:
    row = ticker("BTC/BRL", T0_MS - 1_000, 0.0)
    row.update(bid=np.nan, ask=np.nan, last=100.0)
    later = ticker("ETH/BRL", T0_MS + 1_000, 50.0)
    po = po_of(make_frames([closed_order("b", "buy", 101.0)]), market_frame([row, later]))
    assert po.loc["b", "arrival_mid"] == 100.0


# ------------------------------------------------------------------ fees


def test_fee_cost_crypto_converted_and_operational_apart() -> None:
    order = closed_order(
        "f",
        "buy",
        100_000.0,
        amount=0.1,
        amountOriginal=0.1,
        filled=0.1,
        cost=10_000.0,
        **{
            "fee.cost": 10.0,
            "fee.cripto": 0.0001,
            "fee.rate": 0.0012,
            "fee.tierService.currentTierFeeRate": 0.001,
            "operationalFees": 5.0,
        },
    )
    only_crypto = closed_order(
        "c",
        "buy",
        100_000.0,
        cost=100_000.0,
        **{"fee.cripto": 0.001, "fee.rate": 0.001, "fee.tierService.currentTierFeeRate": 0.001},
    )
    frames = make_frames([order, only_crypto])
    po = po_of(frames)
    assert po.loc["f", "venue_fee_bp"] == pytest.approx(10.0)
    # 0.0001 BTC x 100,000 = 10 BRL: converted at the fill price before any comparison
    assert po.loc["f", "fee_cripto_fiat"] == pytest.approx(10.0)
    assert po.loc["f", "operational_bp"] == pytest.approx(5.0)
    # one venue fee (not fee.cost + fee.cripto) plus the operational fees
    assert po.loc["f", "fee_total_bp"] == pytest.approx(15.0)
    assert po.loc["f", "fee_rate_vs_tier_bp"] == pytest.approx(2.0)
    # without fee.cost the venue fee is the crypto fee at the fill price: 100 BRL = 10 bp
    assert po.loc["c", "venue_fee"] == pytest.approx(100.0)
    assert po.loc["c", "fee_total_bp"] == pytest.approx(10.0)
    fees: Any = _metrics.fees(_metrics.per_order(frames)).set_index("symbol").loc["BTC/BRL"]
    assert fees["orders"] == 2
    assert fees["orders_above_tier"] == 1
    # one venue fee column: 10 (fee.cost of "f") + 100 (fee.cripto x average of "c")
    assert fees["venue_fee"] == pytest.approx(110.0)
    assert "fee_cost" not in fees.index and "fee_cripto_fiat" not in fees.index
    assert fees["currency"] == "BRL"
    assert fees["venue_fee_bp"] == pytest.approx(110.0 / 110_000 * 1e4)
    assert fees["operational_bp"] == pytest.approx(5.0 / 110_000 * 1e4)
    # rate weighted by notional: (10,000 x 0.0012 + 100,000 x 0.001) / 110,000
    assert fees["fee_rate"] == pytest.approx(112 / 110_000)


# ------------------------------------------------------------------ fills and outcomes


def test_fill_rate_weighted_by_requested_notional() -> None:
    frames = make_frames(
        [
            closed_order("a", "buy", 100.0),  # 1 of 1 filled, 100 requested
            closed_order("b", "buy", 100.0, amountOriginal=3.0, filled=1.5, cost=150.0),
        ]
    )
    po = po_of(frames)
    assert po.loc["b", "fill_rate"] == 0.5
    f: Any = _metrics.fill_rate(po.reset_index()).set_index("type").loc["market"]
    assert f["weighted_fill_rate"] == pytest.approx((100 * 1.0 + 300 * 0.5) / 400)
    assert f["mean_fill_rate"] == pytest.approx(0.75)
    assert f["fully_filled_share"] == pytest.approx(0.5)


def test_outcome_shares_market_and_limit() -> None:
    def order(oid: str, typ: str, status: str) -> dict:
        return closed_order(oid, "buy", 100.0, type=typ, status=status)

    frames = make_frames(
        [
            order("m1", "market", "CLOSED"),
            order("m2", "market", "CLOSED"),
            order("m3", "market", "REJECTED"),
            order("m4", "market", "EXPIRED"),
            order("l1", "limit", "EXECUTED"),
            order("l2", "limit", "CLOSED"),
            order("l3", "limit", "EXPIRED"),
            order("l4", "limit", "CANCELLED"),
            order("l5", "limit", "REJECTED"),
            order("l6", "limit", "OPEN"),
        ]
    )
    po = _metrics.per_order(frames)
    out = _metrics.outcomes(po).set_index(["type", "outcome"])
    assert out.loc[("market", "closed"), "share"] == pytest.approx(0.5)
    assert out.loc[("market", "rejected"), "orders"] == 1
    assert out.loc[("market", "expired"), "orders"] == 1
    assert out.loc[("limit", "executed"), "orders"] == 2
    assert out.loc[("limit", "executed"), "share"] == pytest.approx(2 / 6)
    for outcome in ("expired", "cancelled", "rejected", "active"):
        assert out.loc[("limit", outcome), "orders"] == 1
    funnel = _metrics.funnel(po).set_index("stage")["orders"]
    assert funnel["created"] == 6
    assert funnel["executed"] == 2


def test_rejection_reasons_from_error_message_or_status_reason() -> None:
    frames = make_frames(
        [
            closed_order("m1", "buy", 0.0, status="REJECTED", errorMessage="insufficient balance"),
            closed_order("m2", "buy", 0.0, status="REJECTED", errorMessage="insufficient balance"),
            closed_order(
                "l1", "buy", 0.0, type="limit", status="REJECTED", statusReason="duplicate"
            ),
            closed_order("ok", "buy", 100.0),
        ]
    )
    r = _metrics.rejections(_metrics.per_order(frames)).set_index(["type", "reason"])
    assert r.loc[("market", "insufficient balance"), "orders"] == 2
    assert r.loc[("limit", "duplicate"), "share"] == 1.0
    assert len(r) == 2


# ------------------------------------------------------------------ latency


def test_time_to_execution_stats_and_buckets() -> None:
    def market(oid: str, seconds: float) -> dict:
        return closed_order(oid, "buy", 100.0, executedAt=T0_MS + int(seconds * 1000))

    frames = make_frames(
        [
            market("a", 0.5),
            market("b", 2),
            market("c", 45),
            market("d", 400),
            # limit with a known trigger: measured from triggeredAt (3 s)
            closed_order(
                "l",
                "buy",
                100.0,
                type="limit",
                createdAt=T0_MS,
                triggeredAt=T0_MS + 600_000,
                executedAt=T0_MS + 603_000,
            ),
            # limit without: from createdAt (20 s), said so in the basis column
            closed_order("k", "buy", 100.0, type="limit", executedAt=T0_MS + 20_000),
        ]
    )
    po = _metrics.per_order(frames)
    stats, buckets = _metrics.time_to_execution(po)
    m: Any = stats.set_index(["type", "basis"]).loc[("market", "createdAt")]
    assert m["orders"] == 4
    assert m["median_s"] == pytest.approx((2 + 45) / 2)
    # linear interpolation at 0.9 x 3 = 2.7: 45 + 0.7 x (400 - 45)
    assert m["p90_s"] == pytest.approx(45 + 0.7 * 355)
    lim = stats.set_index(["type", "basis"])
    assert lim.loc[("limit", "triggeredAt"), "median_s"] == pytest.approx(3.0)
    assert lim.loc[("limit", "createdAt"), "median_s"] == pytest.approx(20.0)
    b = buckets[buckets["type"] == "market"].set_index("bucket")["orders"]
    assert b.to_dict() == {
        "0-1 s": 1,
        "1-10 s": 1,
        "10-30 s": 0,
        "30-60 s": 1,
        "1-5 min": 0,
        "> 5 min": 1,
    }


def test_bucket_edges_are_lower_inclusive() -> None:
    frames = make_frames(
        [closed_order(str(s), "buy", 100.0, executedAt=T0_MS + s * 1000) for s in (1, 10, 60, 300)]
    )
    _, buckets = _metrics.time_to_execution(_metrics.per_order(frames))
    b = buckets.set_index("bucket")["orders"]
    assert b["1-10 s"] == 1 and b["10-30 s"] == 1 and b["1-5 min"] == 1 and b["> 5 min"] == 1


# ------------------------------------------------------------------ trades, shares


def test_maker_share_by_count_and_cost() -> None:
    frames = make_frames(
        [closed_order("a", "buy", 100.0, cost=400.0)],
        trades=[
            trade("a", "t1", 100.0, 1.0, maker=True),
            trade("a", "t2", 100.0, 1.0),
            trade("a", "t3", 100.0, 2.0),
        ],
    )
    po = _metrics.per_order(frames)
    m = _metrics.maker_share(frames.trades, po).set_index("venue")
    assert m.loc["(all)", "maker_share"] == pytest.approx(1 / 3)
    assert m.loc["(all)", "maker_cost_share"] == pytest.approx(0.25)
    assert m.loc["venueA", "trades"] == 3


def test_venue_and_rule_shares_by_count_and_notional() -> None:
    frames = make_frames(
        [
            closed_order("a", "buy", 100.0, cost=100.0, rule="best_price"),
            closed_order("b", "buy", 100.0, cost=100.0, rule="best_price"),
            closed_order("c", "buy", 100.0, cost=200.0, executedExchange="venueB", rule="rfq"),
            closed_order("r", "buy", 0.0, status="REJECTED", executedExchange="venueB"),
        ]
    )
    tables = _metrics.all_tables(frames)
    v = tables["venues"].set_index("venue")
    assert v.loc["venueA", "order_share"] == pytest.approx(2 / 3)
    assert v.loc["venueA", "notional_share"] == pytest.approx(0.5)
    assert v.loc["venueB", "orders"] == 1  # the rejected order is not an execution
    r = tables["rules"].set_index("rule")
    assert r.loc["rfq", "notional_share"] == pytest.approx(0.5)
    assert r.loc["best_price", "order_share"] == pytest.approx(2 / 3)


# ------------------------------------------------------------------ data checks


def test_data_checks_flag_mismatches_and_outliers() -> None:
    frames = make_frames(
        [
            # average 101 but trades at 100: +100 bp against the VWAP
            closed_order("v", "buy", 101.0, quoteAmount=100.0),
            # quoteAmount 250 against trades costing 200
            closed_order("q", "buy", 100.0, quoteAmount=250.0),
            # two trades rounded to cents: 0.01 off is rounding, not an error
            closed_order("ok", "buy", 100.0, quoteAmount=100.01),
            # 600 bp of slippage: beyond the absolute bound
            closed_order("x", "buy", 106.0, quoteAmount=106.0),
        ],
        trades=[
            trade("v", "t1", 100.0, 1.0),
            trade("q", "t2", 100.0, 2.0),
            trade("ok", "t3", 100.0, 0.5),
            trade("ok", "t4", 100.0, 0.5),
            trade("x", "t5", 106.0, 1.0),
        ],
        quotes=[quote(o, 0, "venueA", 100.0) for o in ("v", "q", "ok", "x")],
    )
    checks = _metrics.data_checks(_metrics.per_order(frames), frames.orders, frames.trades)
    flagged = set(zip(checks["orderId"], checks["check"], strict=True))
    assert ("v", "average vs trades VWAP") in flagged
    assert ("q", "quoteAmount vs sum of trade costs") in flagged
    assert ("x", "outlier quote_slippage_bp") in flagged
    assert not any(oid == "ok" for oid, _ in flagged)
    v = checks[(checks["orderId"] == "v") & (checks["check"] == "average vs trades VWAP")]
    assert v["diff_bp"].iloc[0] == pytest.approx(100.0)
    assert v["expected"].iloc[0] == pytest.approx(100.0)


def test_robust_sigma_outlier() -> None:
    slips = [10.0, 11.0, 9.0, 10.5, 9.5, 10.0, 80.0]  # 80 bp is far from a tight cluster
    orders = [closed_order(f"o{i}", "buy", 100.0 * (1 + s / 1e4)) for i, s in enumerate(slips)]
    frames = make_frames(orders, quotes=[quote(f"o{i}", 0, "venueA", 100.0) for i in range(7)])
    checks = _metrics.data_checks(_metrics.per_order(frames), frames.orders, frames.trades)
    out = checks[checks["check"] == "outlier quote_slippage_bp"]
    assert out["orderId"].tolist() == ["o6"]
    assert "robust sigmas" in out["detail"].iloc[0]


# ------------------------------------------------------------------ breakdowns


def test_breakdown_by_every_dimension() -> None:
    frames = make_frames(
        [
            closed_order("b", "buy", 101.0, symbol="BTC/BRL"),
            closed_order("s", "sell", 99.5, symbol="ETH/BRL", executedExchange="venueB"),
        ],
        quotes=[quote("b", 0, "venueA", 100.0), quote("s", 0, "venueB", 100.0)],
    )
    b = _metrics.breakdown(_metrics.per_order(frames)).set_index(["dimension", "group"])
    assert set(b.index.get_level_values(0)) == set(_metrics.BREAKDOWN_DIMENSIONS)
    assert b.loc[("side", "buy"), "quote_slippage_bp"] == pytest.approx(100.0)
    assert b.loc[("side", "sell"), "quote_slippage_bp"] == pytest.approx(50.0)
    assert b.loc[("venue", "venueB"), "orders"] == 1
    assert b.loc[("month", "2025-11"), "orders"] == 2
    assert b.loc[("symbol", "ETH/BRL"), "notional"] == pytest.approx(99.5)


# ------------------------------------------------------------------ degenerate inputs


def assert_all_tables_typed(tables: dict[str, pd.DataFrame]) -> None:
    for name, df in tables.items():
        assert isinstance(df, pd.DataFrame), name
        assert len(df.columns) > 0, name


def test_empty_input_gives_empty_tables_with_columns(empty_frames: Frames) -> None:
    tables = _metrics.all_tables(empty_frames, market_frame([ticker("BTC/BRL", T0_MS, 1.0)]))
    assert_all_tables_typed(tables)
    for name, df in tables.items():
        assert df.empty, name
    assert list(tables["per_order"].columns) == list(_metrics.PER_ORDER_COLUMNS)
    assert "weighted_mean_bp" in tables["slippage"].columns
    assert tables["per_order"]["createdAt"].dtype == "datetime64[ns, UTC]"


def test_single_order() -> None:
    frames = make_frames(
        [closed_order("one", "sell", 99.0)],
        trades=[trade("one", "t", 99.0, 1.0, side="sell")],
        quotes=[quote("one", 0, "venueA", 100.0)],
    )
    tables = _metrics.all_tables(frames)
    assert_all_tables_typed(tables)
    slip = tables["slippage"].set_index(["type", "metric"])
    assert slip.loc[("market", "quote slippage"), "p90_bp"] == pytest.approx(100.0)
    assert tables["time_to_execution"]["p99_s"].iloc[0] == pytest.approx(2.0)
    assert tables["data_checks"].empty


def test_orders_missing_optional_columns() -> None:
    # no evaluatedTickers, no executedAt, no fees, no trades, no rule/channel columns
    orders = pd.DataFrame(
        {
            "id": ["a", "b"],
            "symbol": ["BTC/BRL", "BTC/BRL"],
            "side": ["buy", "sell"],
            "status": ["CLOSED", "REJECTED"],
            "average": [100.0, 0.0],
            "createdAt": pd.to_datetime([T0_MS, T0_MS], unit="ms", utc=True),
        }
    )
    frames = Frames(orders, pd.DataFrame(), pd.DataFrame())
    tables = _metrics.all_tables(frames, market_frame([ticker("BTC/BRL", T0_MS - 1, 99.0)]))
    assert_all_tables_typed(tables)
    po: Any = tables["per_order"].set_index("orderId")
    assert pd.isna(po.loc["a", "quote_slippage_bp"])
    assert pd.isna(po.loc["a", "tte_s"])
    assert po.loc["a", "type"] == "market"
    assert po.loc["a", "arrival_slippage_bp"] == pytest.approx((100 - 99) / 99 * 1e4)
    assert tables["routing"].empty and tables["time_to_execution"].empty
    assert tables["outcomes"].set_index("outcome").loc["rejected", "orders"] == 1


def test_nans_do_not_break_the_metrics() -> None:
    frames = make_frames(
        [
            closed_order("a", "buy", 101.0),
            closed_order("n", None, np.nan, cost=np.nan, createdAt=None),  # type: ignore[arg-type]
            closed_order("p", "sell", 99.0, cost=np.nan, quoteAmount=np.nan),
        ],
        quotes=[
            quote("a", 0, "venueA", 100.0),
            quote("n", 0, "venueA", np.nan),
            quote("p", 0, "venueA", 100.0),
        ],
    )
    tables = _metrics.all_tables(frames, market_frame([ticker("BTC/BRL", T0_MS, 100.0)]))
    po = tables["per_order"].set_index("orderId")
    assert not po.loc["n", "executed"]
    # no cost or quoteAmount: notional falls back to filled x average
    assert po.loc["p", "notional"] == pytest.approx(99.0)
    assert po.loc["p", "quote_slippage_bp"] == pytest.approx(100.0)
    assert tables["summary"].set_index("metric").loc["orders", "value"] == 3


def test_exact_decimal_frames_give_the_same_numbers() -> None:
    from _synthetic import mixed_orders

    from toolkit.frames._frames import build_frames

    raw = mixed_orders(60, seed=3)
    approx = _metrics.all_tables(build_frames(raw))
    exact = _metrics.all_tables(build_frames(raw, exact=True))
    for name in ("summary", "venues", "fees", "breakdown"):
        pd.testing.assert_frame_equal(approx[name], exact[name], rtol=1e-9, obj=name)
    executed: Any = approx["summary"].set_index("metric").loc["executed orders", "value"]
    assert executed > 0
