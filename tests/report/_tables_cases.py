"""The order frames the report tests build, named, for the tests that hold the tables from
parts against ``all_tables``: each case is (frames, market) made afresh."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from _report_frames import T0_MS, closed_order, make_frames
from _synthetic import mixed_orders, synthetic_orders

from toolkit.frames._frames import build_frames

Case = tuple[Any, pd.DataFrame | None]


def _quote(oid: str, rank: int, exchange: str, price: float, reason: str | None = None) -> dict:
    return {"orderId": oid, "rank": rank, "exchange": exchange, "price": price, "reason": reason}


def _market_for(frames: Any) -> pd.DataFrame:
    """A ticker every 5 s per symbol of ``frames``, around its orders' average price, from a
    minute before the first order to ten minutes after the last."""
    o = frames.orders
    created = pd.to_datetime(o["createdAt"], utc=True)
    t0 = int(created.min().value // 1_000_000) - 60_000
    t1 = int(created.max().value // 1_000_000) + 600_000
    rows = []
    for sym, g in o.groupby("symbol"):
        avg = pd.to_numeric(g["average"], errors="coerce")
        avg = avg[avg > 0]
        mid = float(avg.median()) if len(avg) else 100.0
        for k, at in enumerate(range(t0, t1, 5_000)):
            m = mid * (1 + 0.001 * np.sin(k / 7))
            rows.append(
                {
                    "received_at": pd.Timestamp(at + 5, unit="ms", tz="UTC"),
                    "symbol": sym,
                    "bid": m - mid * 2e-4,
                    "ask": m + mid * 2e-4,
                    "last": m,
                    "timestamp": pd.Timestamp(at, unit="ms", tz="UTC"),
                }
            )
    df = pd.DataFrame(rows)
    df["received_at"] = df["received_at"].astype("datetime64[ns, UTC]")
    df["timestamp"] = df["timestamp"].astype("datetime64[ms, UTC]")
    return df


def _routing() -> Case:
    orders = [
        closed_order("w", "buy", 100.6, executedExchange="venueA"),
        closed_order("i", "buy", 99.9, executedExchange="venueB"),
        closed_order("s", "sell", 100.0, executedExchange="venueC", exchange="venueA"),
    ]
    quotes = [
        _quote("w", 0, "venueB", 100.0),
        _quote("w", 1, "venueA", 100.5),
        _quote("w", 2, "venueC", 99.0, "venue timeout"),
        _quote("i", 0, "venueB", 100.0),
        _quote("s", 0, "venueC", 100.2),
        _quote("s", 1, "venueA", 100.1, "stale"),
    ]
    return make_frames(orders, quotes=quotes), None


def _limits_with_market() -> Case:
    orders = [
        closed_order("m", "buy", 100.8, operationalFees=0.1008),
        closed_order("l", "sell", 101.0, type="limit", limitPrice=100.5),
        closed_order(
            "x", "buy", float("nan"), type="limit", status="EXPIRED", limitPrice=99.0, filled=0.0
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
    return make_frames(orders, quotes=[_quote("m", 0, "venueB", 100.0)]), market


def _duplicates() -> Case:
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
        [latest, first, closed_order("b", "sell", 100.0), closed_order("c", "sell", 150.0)],
        trades=[trade, trade],
        # "c": 5,000 bp from its quote, an outlier of the data checks
        quotes=[
            _quote("a", 0, "venueA", 100.0),
            _quote("a", 0, "venueA", 100.0),
            _quote("c", 0, "venueA", 100.0),
        ],
    )
    return frames, None


def _mixed_market(n: int, seed: int) -> Case:
    frames = build_frames(mixed_orders(n, seed=seed))
    return frames, _market_for(frames)


#: case name -> a builder of (frames, market)
CASES: dict[str, Callable[[], Case]] = {
    "empty": lambda: (make_frames([]), None),
    "empty with market": lambda: (make_frames([]), _limits_with_market()[1]),
    "routing": _routing,
    "limits with market": _limits_with_market,
    "duplicate ids": _duplicates,
    "synthetic 12": lambda: (build_frames(synthetic_orders(12, seed=3)), None),
    "mixed 80": lambda: (build_frames(mixed_orders(80, seed=5)), None),
    "mixed 120 exact": lambda: (build_frames(mixed_orders(120, seed=9), exact=True), None),
    "mixed 300 with market": lambda: _mixed_market(300, 5),
}
