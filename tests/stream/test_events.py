"""Tests of the typed stream events built from data messages (live or replayed)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from toolkit.stream._events import (
    BalanceEvent,
    OrderEvent,
    RawEvent,
    SessionEvent,
    TickerEvent,
    TickersEvent,
    canonical_status,
    event_from_message,
)

KW: dict[str, Any] = {
    "received_at_ns": 1_700_000_000_000_000_000,
    "connection_id": "c1-abc",
    "seq": 3,
}


def test_ticker_decimal_strings_become_floats() -> None:
    raw = {
        "channel": "watchticker",
        "message": {
            "symbol": "BTC/BRL",
            "bid": "350100.10",
            "ask": "350200.20",
            "last": "350150.15",
            "timestamp": 1763000000123,
        },
    }
    ev = event_from_message(raw, **KW)
    assert isinstance(ev, TickerEvent)
    assert (ev.symbol, ev.bid, ev.ask, ev.last, ev.timestamp) == (
        "BTC/BRL",
        350100.10,
        350200.20,
        350150.15,
        1763000000123,
    )
    assert (ev.channel, ev.connection_id, ev.seq, ev.raw) == ("watchticker", "c1-abc", 3, raw)
    assert ev.received_at_ns == KW["received_at_ns"]


def test_tickers_event_holds_one_ticker_per_pair() -> None:
    raw = {
        "channel": "WATCHTICKERS",
        "message": {
            "tickers": [
                {"symbol": "BTC/BRL", "bid": "1", "ask": "2", "last": "1.5", "timestamp": 5},
                {"symbol": "ETH/BRL", "bid": "3", "ask": "4", "last": "", "timestamp": 6},
            ]
        },
    }
    ev = event_from_message(raw, **KW)
    assert isinstance(ev, TickersEvent)
    assert ev.channel == "watchtickers"
    assert [t.symbol for t in ev.tickers] == ["BTC/BRL", "ETH/BRL"]
    assert ev.tickers[0].ask == 2.0
    assert math.isnan(ev.tickers[1].last)


@pytest.mark.parametrize(
    "raw_status, canonical", [("closed", "CLOSED"), ("OPEN", "OPEN"), ("pending", "PENDING")]
)
def test_order_event_status_is_canonical_and_keeps_the_original(
    raw_status: str, canonical: str
) -> None:
    order = {
        "id": "l-000001-aaaa",
        "status": raw_status,
        "updatedAt": 1763000000999,
        "type": "limit",
    }
    ev = event_from_message({"channel": "watchorders", "message": order}, **KW)
    assert isinstance(ev, OrderEvent)
    assert (ev.order_id, ev.status, ev.status_raw, ev.updated_at_ms) == (
        "l-000001-aaaa",
        canonical,
        raw_status,
        1763000000999,
    )
    assert ev.order == order and ev.reconciled is False
    assert ev.final is (canonical == "CLOSED")


def test_balance_event() -> None:
    raw = {
        "channel": "watchbalance",
        "message": {
            "balances": [{"asset": "BRL", "free": "10", "locked": "0", "total": "10"}],
            "timestamp": 1763000000042,
        },
    }
    ev = event_from_message(raw, **KW)
    assert isinstance(ev, BalanceEvent)
    assert ev.balances == ({"asset": "BRL", "free": "10", "locked": "0", "total": "10"},)
    assert ev.timestamp == 1763000000042


def test_unknown_channel_is_kept_as_raw_event() -> None:
    raw = {"channel": "watchTrades", "message": {"x": 1}}
    ev = event_from_message(raw, **KW)
    assert isinstance(ev, RawEvent)
    assert ev.channel == "watchtrades" and ev.message == {"x": 1}


def test_not_a_data_message_raises() -> None:
    with pytest.raises(ValueError, match="not a data message"):
        event_from_message({"success": True, "message": "pong"}, **KW)


def test_bad_decimal_raises_value_error() -> None:
    raw = {"channel": "watchticker", "message": {"symbol": "X/Y", "bid": "abc"}}
    with pytest.raises(ValueError):
        event_from_message(raw, **KW)


def test_events_are_frozen_with_slots() -> None:
    ev = SessionEvent("_session", 1, "c1", 1, None, "gap", "drop", 10, 20)
    with pytest.raises(AttributeError):
        ev.kind = "connected"  # type: ignore[misc]
    assert not hasattr(ev, "__dict__")
    assert (ev.gap_start_ns, ev.gap_end_ns) == (10, 20)


def test_canonical_status() -> None:
    assert canonical_status(" closed ") == "CLOSED"
    assert canonical_status(None) == ""
