"""Payload shapes a list setting describes with ``*`` (a balance keyed by asset, tickers
keyed by pair) and ISO-8601 payload times: the stream's events read them, and a shape the
setting does not describe is a mismatch naming it. Sans-I/O: the simulator under the
stranger profile serves these shapes too, these feed them directly."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.stream import _events
from toolkit.stream._events import BalanceEvent, RawEvent, TickersEvent, event_from_message

KW: dict[str, Any] = {"received_at_ns": 1, "connection_id": "c1", "seq": 1}
ISO = "2026-11-27T09:23:40.637Z"
ISO_MS = 1_795_771_420_637


def keyed_profile(**payloads: str) -> ServiceProfile:
    return dataclasses.replace(
        DEFAULT_PROFILE,
        name="keyed",
        payloads=dataclasses.replace(DEFAULT_PROFILE.payloads, **payloads),
    )


WALLET = keyed_profile(
    balance_list="wallet.*",
    balance_asset="*",
    balance_free="available",
    balance_locked="onHold",
    balance_total="total",
    balance_time="ts",
)
BY_PAIR = keyed_profile(tickers_list="data.*", ticker_symbol="market", ticker_time="at")


@pytest.fixture(autouse=True)
def _fresh_reports() -> Any:
    _events._reported.clear()
    yield
    _events._reported.clear()


def test_a_balance_keyed_by_asset_with_an_iso_time() -> None:
    message = {
        "wallet": {
            "BTC": {"available": "1.5", "onHold": "0.5", "total": "2"},
            "BRL": {"available": "100", "onHold": "0", "total": "100"},
        },
        "ts": ISO,
    }
    ev = event_from_message({"channel": "watchbalance", "message": message}, **KW, profile=WALLET)
    assert isinstance(ev, BalanceEvent)
    assert [(b["asset"], b["free"], b["locked"]) for b in ev.balances] == [
        ("BTC", "1.5", "0.5"),
        ("BRL", "100", "0"),
    ]
    assert ev.timestamp == ISO_MS


def test_tickers_keyed_by_pair_take_the_key_when_the_element_has_no_symbol() -> None:
    message = {
        "data": {
            "BTC-BRL": {"bid": "10", "ask": "11", "last": "10.5", "at": ISO},
            "ETH-BRL": {"market": "ETH/BRL", "bid": "1", "ask": "2", "last": "1.5", "at": 5},
        }
    }
    ev = event_from_message({"channel": "watchtickers", "message": message}, **KW, profile=BY_PAIR)
    assert isinstance(ev, TickersEvent)
    got = [(t.symbol, t.bid, t.timestamp) for t in ev.tickers]
    # the element's own field wins over its key; a number stays a Unix time
    assert got == [("BTC-BRL", 10.0, ISO_MS), ("ETH/BRL", 1.0, 5000)]


def test_a_single_ticker_with_an_iso_time() -> None:
    raw = {
        "channel": "watchticker",
        "message": {"market": "BTC-BRL", "bid": "10", "ask": "11", "last": "10.5", "at": ISO},
    }
    ev = event_from_message(raw, **KW, profile=BY_PAIR)
    assert (ev.symbol, ev.timestamp) == ("BTC-BRL", ISO_MS)  # type: ignore[union-attr]


def test_a_list_where_a_keyed_object_is_named_is_still_read() -> None:
    message = {"wallet": [{"available": "1", "onHold": "0", "total": "1"}], "ts": 1}
    ev = event_from_message({"channel": "watchbalance", "message": message}, **KW, profile=WALLET)
    # no key and no asset field: a mismatch naming the asset setting, not an empty asset
    assert isinstance(ev, RawEvent)
    assert "payloads.balance_asset" in ev.error


def test_an_object_where_a_list_is_named_is_a_mismatch() -> None:
    """Without ``*`` the setting names a list: an object there is not silently read."""
    plain = keyed_profile(balance_list="wallet")
    message = {"wallet": {"BTC": {"asset": "BTC", "free": 1, "locked": 0, "total": 1}}}
    ev = event_from_message({"channel": "watchbalance", "message": message}, **KW, profile=plain)
    assert isinstance(ev, RawEvent)
    assert "payloads.balance_list" in ev.error


def test_a_keyed_element_that_is_not_an_object_names_its_key() -> None:
    message = {"data": {"BTC-BRL": "10.5"}}
    ev = event_from_message({"channel": "watchtickers", "message": message}, **KW, profile=BY_PAIR)
    assert isinstance(ev, RawEvent)
    assert "'BTC-BRL'" in ev.error and "payloads.tickers_list" in ev.error


def test_the_payload_itself_keyed_by_asset() -> None:
    profile = keyed_profile(balance_list="*", balance_asset="*")
    message = {"ETH": {"asset": "eth", "free": "3", "locked": "0", "total": "3"}}
    ev = event_from_message({"channel": "watchbalance", "message": message}, **KW, profile=profile)
    assert isinstance(ev, BalanceEvent)
    assert ev.balances[0]["asset"] == "ETH"  # '*' is the key, whatever the element says
