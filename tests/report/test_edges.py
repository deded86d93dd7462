"""Issue 15, bugs 1-7: each on a small fixture whose expected numbers are derived by hand in
the comments (each test fails on the report before the fix)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _report_frames import T0_MS, closed_order, make_frames

from toolkit.recording._rows import session_row
from toolkit.recording._writer import RecordingWriter
from toolkit.report import _metrics, execution_report

MS = 1_000_000  # ns per ms


def quote(oid: str, rank: int, exchange: str, price: float, reason: str | None = None) -> dict:
    return {"orderId": oid, "rank": rank, "exchange": exchange, "price": price, "reason": reason}


def tick(symbol: str, at_ms: int, mid: float, spread: float = 0.2) -> dict[str, Any]:
    return {
        "symbol": symbol,
        "bid": mid - spread / 2,
        "ask": mid + spread / 2,
        "last": mid,
        "timestamp": pd.Timestamp(at_ms, unit="ms", tz="UTC"),
        "received_at": pd.Timestamp(at_ms + 5, unit="ms", tz="UTC"),
    }


def po_of(frames: Any, market: pd.DataFrame | None = None, **kw: Any) -> pd.DataFrame:
    return _metrics.per_order(frames, market, **kw).set_index("orderId")


# ------------------------------------------------------------ 1. markouts past the recording


def test_markouts_only_inside_the_recording() -> None:
    # an 8-second recording, T0 - 1 s .. T0 + 7 s, mid 100 then 102 at the last tick; a buy
    # at 101 executed at T0 + 2 s
    rows = [tick("BTC/BRL", T0_MS + s * 1_000, 100.0) for s in range(-1, 7)]
    rows.append(tick("BTC/BRL", T0_MS + 7_000, 102.0))
    frames = make_frames([closed_order("b", "buy", 101.0)])
    po = po_of(frames, pd.DataFrame(rows))
    # markout 0: mid at T0 + 2 s = 100: (101 - 100) / 100 x 1e4 = +100 bp
    assert po.loc["b", "markout_0s_bp"] == pytest.approx(100.0)
    # T0 + 22 s, + 62 s, + 122 s are past the last moment recorded (T0 + 7.005 s): the last
    # tick (102) must not stand in for them; T0 - 58 s is before the first
    for h in (-60, -20, 20, 60, 120):
        assert math.isnan(po.loc["b", f"markout_{h}s_bp"]), h
    m = _metrics.markouts(_metrics.per_order(frames, pd.DataFrame(rows))).set_index("horizon_s")
    assert m.loc[0, "orders"] == 1 and m.loc[0, "coverage"] == 1.0
    assert m.loc[20, "eligible"] == 1 and m.loc[20, "orders"] == 0
    assert m.loc[20, "coverage"] == 0.0


def _write_recording(root: Path) -> None:
    """watchtickers messages (two pairs each) and the session rows of a disconnect from
    T0 + 5 s to T0 + 30 s; the recording runs until T0 + 200 s."""

    def tickers(at_ms: int, btc: float) -> str:
        pairs = [
            {
                "symbol": "BTC/BRL",
                "bid": btc - 0.1,
                "ask": btc + 0.1,
                "last": btc,
                "timestamp": at_ms,
            },
            {"symbol": "ETH/BRL", "bid": 9.9, "ask": 10.1, "last": 10.0, "timestamp": at_ms},
        ]
        return json.dumps({"channel": "watchtickers", "message": {"tickers": pairs}})

    with RecordingWriter(root) as writer:
        ticks = ((-1, 100.0), (4, 100.0), (40, 104.0), (200, 104.0))
        for seq, (at_s, btc) in enumerate(ticks, 1):
            writer.add_raw(
                tickers(T0_MS + at_s * 1_000, btc), (T0_MS + at_s * 1_000 + 5) * MS, "c1", seq
            )
        gap = (T0_MS + 5_000) * MS, (T0_MS + 30_000) * MS
        writer.add(session_row("disconnected", received_at_ns=gap[0], connection_id="c1"))
        writer.add(session_row("connected", received_at_ns=gap[1], connection_id="c2"))
        writer.add(
            session_row(
                "gap",
                received_at_ns=gap[1],
                connection_id="c2",
                gap_start_ns=gap[0],
                gap_end_ns=gap[1],
            )
        )


def test_markouts_skip_the_gaps_of_a_recording_read_per_pair(tmp_path: Path) -> None:
    _write_recording(tmp_path)
    frames = make_frames(
        [
            closed_order("b", "buy", 101.0),  # executed at T0 + 2 s
            closed_order("e", "sell", 9.95, symbol="ETH/BRL"),
        ]
    )
    report = execution_report(frames, tmp_path)
    po = report["per_order"].set_index("orderId")
    # arrival from the watchtickers pair of BTC/BRL at T0 - 1 s: mid 100, spread 0.2
    # (20 bp): (101 - 100) / 100 x 1e4 = 100 bp = 100 / (20 / 2) = 10 half-spreads
    assert po.loc["b", "arrival_mid"] == pytest.approx(100.0)
    assert po.loc["b", "arrival_spread_bp"] == pytest.approx(20.0)
    assert po.loc["b", "arrival_slippage_half_spreads"] == pytest.approx(10.0)
    # each pair is its own symbol: ETH mid 10, a sell at 9.95: -(9.95 - 10) / 10 x 1e4 = 50
    assert po.loc["e", "arrival_slippage_bp"] == pytest.approx(50.0)
    # t0 + 20 s = T0 + 22 s lies in the gap (T0 + 5 s .. T0 + 30 s): no markout
    assert math.isnan(po.loc["b", "markout_20s_bp"])
    # t0 + 60 s = T0 + 62 s: the tick of T0 + 40 s, after the gap: (101 - 104) / 104 x 1e4
    assert po.loc["b", "markout_60s_bp"] == pytest.approx(-3 / 104 * 1e4)
    m = report["markouts"].set_index("horizon_s")
    assert m.loc[20, "orders"] == 0 and m.loc[60, "orders"] == 2


def test_a_disconnect_without_a_gap_row_is_a_gap() -> None:
    rows = [tick("BTC/BRL", T0_MS - 1_000, 100.0), tick("BTC/BRL", T0_MS + 300_000, 90.0)]
    market = pd.DataFrame(rows).assign(channel="watchticker")
    session = pd.DataFrame(
        {
            "channel": ["_session", "_session"],
            "kind": ["disconnected", "connected"],
            "received_at": pd.to_datetime([T0_MS + 10_000, T0_MS + 70_000], unit="ms", utc=True),
        }
    )
    market = pd.concat([market, session], ignore_index=True)
    po = po_of(make_frames([closed_order("b", "buy", 101.0)]), market, max_quote_age=None)
    # t0 = T0 + 2 s: +0 s is before the disconnect, +20 s and +60 s inside it, +120 s after
    # it with the tick of T0 - 1 s still the last one: no gap between it and T0 + 122 s?
    # there is (T0 + 10 s .. T0 + 70 s), so no markout there either
    assert po.loc["b", "markout_0s_bp"] == pytest.approx(100.0)
    for h in (20, 60, 120):
        assert math.isnan(po.loc["b", f"markout_{h}s_bp"]), h


# ------------------------------------------------------------ 2. seconds vs milliseconds


def test_numeric_ticker_times_in_seconds_are_read_as_seconds() -> None:
    # a buy at 100.07 created at T0 against a mid of 100 one second earlier:
    # (100.07 - 100) / 100 x 1e4 = +7.00 bp; the times are Unix seconds (floats)
    market = pd.DataFrame(
        {
            "symbol": ["BTC/BRL", "BTC/BRL", "ETH/BRL"],
            "bid": [99.9, 90.0, 9.9],
            "ask": [100.1, 90.2, 10.1],
            "last": [100.0, 90.1, 10.0],
            # the 90.1 tick is 2 ms before T0 when read as seconds / 1000 (never): as
            # seconds it is 10 days earlier and older than the 100 tick
            "timestamp": [(T0_MS - 1_000) / 1000, (T0_MS - 864_000_000) / 1000, T0_MS + 5_000],
        }
    )
    frames = make_frames([closed_order("b", "buy", 100.07)])
    for age in (60.0, None):
        po = po_of(frames, market, max_quote_age=age)
        assert po.loc["b", "arrival_slippage_bp"] == pytest.approx(7.0), age


def test_epoch_units_are_inferred_value_by_value() -> None:
    from toolkit.report._columns import epoch_to_utc

    t = pd.Timestamp(T0_MS, unit="ms", tz="UTC")
    s = pd.Series([T0_MS / 1000, T0_MS, T0_MS * 1000, T0_MS * 1_000_000, float("nan")])
    out = epoch_to_utc(s)
    assert list(out[:4]) == [t, t, t, t]
    assert pd.isna(out.iloc[4])


# ------------------------------------------------------------ 3. ties at the best price


def test_a_tie_at_the_best_price_is_a_hit() -> None:
    frames = make_frames(
        [
            closed_order("t", "buy", 100.0),  # executed on venueA, listed second
            closed_order("m", "buy", 100.0),  # venueA at 100, venueC at 99: a miss
        ],
        quotes=[
            quote("t", 0, "venueB", 100.0),
            quote("t", 1, "venueA", 100.0),
            quote("m", 0, "venueC", 99.0),
            quote("m", 1, "venueA", 100.0),
        ],
    )
    po = po_of(frames)
    assert po.loc["t", "best_venue_hit"] == 1.0
    assert po.loc["t", "routing_gap_bp"] == 0.0
    assert po.loc["m", "best_venue_hit"] == 0.0
    # (100 - 99) / 99 x 1e4 = 101.0101 bp of routing gap
    assert po.loc["m", "routing_gap_bp"] == pytest.approx(1e4 / 99)
    hit = _metrics.summary(po.reset_index(), None).set_index("metric").loc["best-venue hit rate"]
    assert hit["value"] == pytest.approx(0.5)


# ------------------------------------------------------------ 4. fiat-denominated fills


def test_fill_rate_of_an_order_requested_in_fiat() -> None:
    # 1,000.00 BRL requested and spent; amountOriginal is the estimate 0.0100 BTC, filled
    # 0.009993: filled / amountOriginal = 0.9993, but in the order's own unit 1000 / 1000
    fiat = dict(
        amountOriginal=0.01,
        filled=0.009993,
        cost=1000.0,
        quoteAmount=1000.0,
        quoteAmountOriginal=1000.0,
        remainingQuoteAmount=0.0,
    )
    frames = make_frames(
        [
            closed_order("f", "buy", 100_070.0, filledStatus="filled", **fiat),
            closed_order("n", "buy", 100_070.0, **fiat),  # no filledStatus: the fiat ratio
            # half of 1 BTC, requested in BTC: 0.5 stays 0.5
            closed_order("p", "buy", 100.0, amountOriginal=1.0, filled=0.5, cost=50.0),
        ]
    )
    po = po_of(frames)
    assert po.loc["f", "fill_rate"] == 1.0 and po.loc["f", "fill_basis"] == "filledStatus"
    assert po.loc["n", "fill_rate"] == 1.0 and po.loc["n", "fill_basis"] == "quote amount"
    assert po.loc["p", "fill_rate"] == 0.5
    f = _metrics.fill_rate(po.reset_index()).set_index("type").loc["market"]
    # weights: 1000 + 1000 (fiat requested) + 100 (1 BTC x 100): (2000 + 50) / 2100
    assert f["weighted_fill_rate"] == pytest.approx(2050 / 2100)
    assert f["fully_filled_share"] == pytest.approx(2 / 3)


# ------------------------------------------------------------ 5. fee.cost 0 beside fee.cripto


def test_zero_fee_cost_beside_a_crypto_fee_counts_the_crypto_fee() -> None:
    # 10,000 BRL notional at 100,000: fee.cripto 0.0005996 BTC x 100,000 = 59.96 BRL =
    # 59.96 bp; operational 9.99 BRL = 9.99 bp; total 69.95 bp (fee.cost "0.00" is no fee)
    order = closed_order(
        "z",
        "buy",
        100_000.0,
        amount=0.1,
        amountOriginal=0.1,
        filled=0.1,
        cost=10_000.0,
        operationalFees=9.99,
        **{"fee.cost": 0.0, "fee.cripto": 0.0005996},
    )
    frames = make_frames([order])
    po = po_of(frames)
    assert po.loc["z", "venue_fee_bp"] == pytest.approx(59.96)
    assert po.loc["z", "operational_bp"] == pytest.approx(9.99)
    assert po.loc["z", "fee_total_bp"] == pytest.approx(69.95)
    assert po.loc["z", "venue_fee_source"] == "fee.cripto x average"
    checks = _metrics.all_tables(frames)["data_checks"]
    assert "fee.cost 0 beside fee.cripto" in set(checks["check"])


def test_fee_checks_against_the_crypto_fee_and_the_trades() -> None:
    # fee.cost 12.00 but fee.cripto 0.0001 x 100,000 = 10.00: (12 - 10) / 10 = 2,000 bp;
    # the two trades charged 5.00 each: 10.00, not the order's 12.00
    order = closed_order(
        "x",
        "buy",
        100_000.0,
        amount=0.1,
        filled=0.1,
        cost=10_000.0,
        quoteAmount=10_000.0,
        **{"fee.cost": 12.0, "fee.cripto": 0.0001},
    )
    trades = [
        {
            "orderId": "x",
            "id": f"t{i}",
            "price": 100_000.0,
            "amount": 0.05,
            "cost": 5_000.0,
            "timestamp": T0_MS + 1_000,
            "fee.cost": 5.0,
            "fee.cripto": 0.00005,
        }
        for i in (1, 2)
    ]
    frames = make_frames([order], trades=trades)
    checks = _metrics.all_tables(frames)["data_checks"].set_index("check")
    assert checks.loc["fee.cost vs fee.cripto x average", "diff_bp"] == pytest.approx(2_000.0)
    row = checks.loc["order fee.cost vs sum of trade fees"]
    assert (row["value"], row["expected"]) == (pytest.approx(12.0), pytest.approx(10.0))
    # fee.cripto 0.0001 = 0.00005 x 2: consistent, not flagged
    assert "order fee.cripto vs sum of trade fees" not in checks.index


# ------------------------------------------------------------ 6. no average, trades present


def test_a_closed_order_without_average_is_priced_from_its_trades() -> None:
    # trades 0.4 at 100 (40) and 0.6 at 105 (63): VWAP 103 / 1.0 = 103; quote 100:
    # (103 - 100) / 100 x 1e4 = +300 bp
    order = closed_order("a", "buy", float("nan"), cost=103.0, quoteAmount=103.0)
    trades = [
        {
            "orderId": "a",
            "id": "t1",
            "price": 100.0,
            "amount": 0.4,
            "cost": 40.0,
            "timestamp": T0_MS,
        },
        {
            "orderId": "a",
            "id": "t2",
            "price": 105.0,
            "amount": 0.6,
            "cost": 63.0,
            "timestamp": T0_MS,
        },
    ]
    frames = make_frames([order], trades=trades, quotes=[quote("a", 0, "venueA", 100.0)])
    tables = _metrics.all_tables(frames)
    po = tables["per_order"].set_index("orderId")
    assert po.loc["a", "executed"]
    assert po.loc["a", "average"] == pytest.approx(103.0)
    assert po.loc["a", "quote_slippage_bp"] == pytest.approx(300.0)
    checks = tables["data_checks"]
    row = checks[checks["check"] == "average missing"]
    assert row["orderId"].tolist() == ["a"] and "trades VWAP" in row["detail"].iloc[0]


# ------------------------------------------------------------ 7. duplicate order ids


def test_duplicate_order_ids_count_once_at_their_latest_state() -> None:
    # "a" loaded twice: first at 101 (updated T0 + 2 s), then at 102 (updated T0 + 5 s);
    # its trade and quote loaded twice too. The latest: (102 - 100) / 100 = +200 bp
    first = closed_order("a", "buy", 101.0, updatedAt=T0_MS + 2_000)
    latest = closed_order("a", "buy", 102.0, updatedAt=T0_MS + 5_000)
    trade = {
        "orderId": "a",
        "id": "t1",
        "price": 102.0,
        "amount": 1.0,
        "cost": 102.0,
        "timestamp": T0_MS,
        "takerOrMaker": "maker",
    }
    frames = make_frames(
        [latest, first, closed_order("b", "sell", 100.0)],
        trades=[trade, trade],
        quotes=[quote("a", 0, "venueA", 100.0), quote("a", 0, "venueA", 100.0)],
    )
    report = execution_report(frames)
    po = report["per_order"].set_index("orderId")
    assert len(po) == 2
    assert po.loc["a", "average"] == 102.0
    assert po.loc["a", "quote_slippage_bp"] == pytest.approx(200.0)
    assert po.loc["a", "quotes_seen"] == 1
    maker = report["maker_share"].set_index("venue").loc["(all)"]
    assert maker["trades"] == 1
    checks = report["data_checks"]
    dup = checks[checks["check"] == "duplicate order id"]
    assert dup["orderId"].tolist() == ["a"] and dup["value"].iloc[0] == 2
