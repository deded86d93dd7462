"""Typed events under another profile (profiles/alt.toml): payload fields read where the
profile's ``payloads`` section says, times in seconds read as milliseconds (never 1970),
and a payload missing a mapped field reported by the setting's name, once."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import pytest

from toolkit.profile import DEFAULT_PROFILE, load_profile
from toolkit.stream import _events
from toolkit.stream._events import (
    BalanceEvent,
    OrderEvent,
    PayloadMismatch,
    RawEvent,
    TickerEvent,
    TickersEvent,
    event_from_message,
    order_event,
)

ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")
SECONDS = 1_763_000_000  # 2025-11-13, in seconds
KW: dict[str, Any] = {"received_at_ns": SECONDS * 10**9, "connection_id": "c1", "seq": 1}


def alt_ticker(symbol: str = "BTC/BRL", **quote: Any) -> dict[str, Any]:
    return {"s": symbol, "quote": {"bid": "10.5", "ask": "11", "last": "10.75", **quote}}


@pytest.fixture(autouse=True)
def _fresh_reports() -> Any:
    """Each test sees the once-per-setting warnings afresh."""
    _events._reported.clear()
    yield
    _events._reported.clear()


def test_alt_ticker_fields_come_from_the_profile_paths() -> None:
    raw = {"channel": "watchticker", "message": {**alt_ticker(), "ts": SECONDS}}
    ev = event_from_message(raw, **KW, profile=ALT)
    assert isinstance(ev, TickerEvent)
    assert (ev.symbol, ev.bid, ev.ask, ev.last) == ("BTC/BRL", 10.5, 11.0, 10.75)
    assert ev.timestamp == SECONDS * 1000  # seconds became milliseconds


def test_alt_tickers_list_and_balance_list() -> None:
    raw = {
        "channel": "watchtickers",
        "message": {
            "data": [
                {**alt_ticker("BTC/BRL"), "ts": SECONDS},
                {**alt_ticker("ETH/BRL", last=""), "ts": SECONDS + 1},
            ]
        },
    }
    ev = event_from_message(raw, **KW, profile=ALT)
    assert isinstance(ev, TickersEvent)
    assert [t.symbol for t in ev.tickers] == ["BTC/BRL", "ETH/BRL"]
    assert [t.timestamp for t in ev.tickers] == [SECONDS * 1000, (SECONDS + 1) * 1000]
    assert math.isnan(ev.tickers[1].last)  # an empty decimal: the service has no price

    wallet = {"currency": "BRL", "available": "10", "hold": "1", "balance": "11"}
    raw = {"channel": "watchbalance", "message": {"wallets": [wallet], "ts": SECONDS}}
    bal = event_from_message(raw, **KW, profile=ALT)
    assert isinstance(bal, BalanceEvent)
    assert bal.timestamp == SECONDS * 1000
    (b,) = bal.balances
    assert (b["asset"], b["free"], b["locked"], b["total"]) == ("BRL", "10", "1", "11")
    assert b["currency"] == "BRL"  # the fields as sent are kept beside


def test_an_empty_list_path_means_the_payload_is_the_list() -> None:
    profile = ALT.replace({"payloads.tickers_list": ""})
    raw = {"channel": "watchtickers", "message": [{**alt_ticker("SOL/BRL"), "ts": SECONDS}]}
    ev = event_from_message(raw, **KW, profile=profile)
    assert isinstance(ev, TickersEvent)
    assert [t.symbol for t in ev.tickers] == ["SOL/BRL"]


def test_default_payload_under_alt_profile_is_an_error_naming_the_setting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    raw = {
        "channel": "watchticker",
        "message": {"symbol": "BTC/BRL", "bid": "1", "ask": "2", "last": "1.5", "timestamp": 1},
    }
    with caplog.at_level(logging.WARNING, logger="toolkit.stream"):
        first = event_from_message(raw, **KW, profile=ALT)
        second = event_from_message(raw, **KW, profile=ALT)
    for ev in (first, second):
        assert isinstance(ev, RawEvent)  # never a TickerEvent with "" and NaN
        assert ev.channel == "watchticker" and ev.message == raw["message"]
        assert "profile payloads.ticker_symbol" in ev.error
        assert "'s'" in ev.error and "fields present: symbol, bid, ask, last" in ev.error
    warnings = [r for r in caplog.records if "payloads.ticker_symbol" in r.getMessage()]
    assert len(warnings) == 1  # once per setting, not per message


def test_missing_nested_field_names_its_setting_and_the_fields_present() -> None:
    raw = {"channel": "watchticker", "message": {"s": "BTC/BRL", "quote": {"bid": "1"}, "ts": 1}}
    with pytest.raises(PayloadMismatch) as info:
        event_from_message(raw, **KW, profile=ALT, strict=True)
    assert info.value.setting == "payloads.ticker_ask"
    assert str(info.value) == (
        "watchticker payload has no 'quote.ask' (profile payloads.ticker_ask); "
        "fields present: s, quote, ts"
    )
    assert isinstance(info.value, ValueError)


def test_missing_list_or_balance_field_is_an_error() -> None:
    raw = {"channel": "watchtickers", "message": {"tickers": []}}
    ev = event_from_message(raw, **KW, profile=ALT)
    assert isinstance(ev, RawEvent) and "payloads.tickers_list" in ev.error
    raw = {"channel": "watchbalance", "message": {"wallets": [{"currency": "BRL"}], "ts": 1}}
    ev = event_from_message(raw, **KW, profile=ALT)
    assert isinstance(ev, RawEvent) and "payloads.balance_free" in ev.error
    raw = {"channel": "watchtickers", "message": {"data": [{"s": "X/Y", "ts": 1}]}}
    ev = event_from_message(raw, **KW, profile=ALT)
    assert isinstance(ev, RawEvent) and "watchtickers element" in ev.error


def test_missing_time_keeps_the_prices_and_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    raw = {"channel": "watchticker", "message": alt_ticker()}
    with caplog.at_level(logging.WARNING, logger="toolkit.stream"):
        for _ in range(3):
            ev = event_from_message(raw, **KW, profile=ALT)
            assert isinstance(ev, TickerEvent) and ev.timestamp == 0 and ev.bid == 10.5
    assert sum("payloads.ticker_time" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize(
    "profile, stamp",
    [
        (DEFAULT_PROFILE, SECONDS),  # auto: by magnitude
        (DEFAULT_PROFILE, SECONDS * 1000),
        (DEFAULT_PROFILE, float(SECONDS)),
        (DEFAULT_PROFILE, str(SECONDS)),
        (ALT, SECONDS),  # alt says seconds
        (ALT, str(SECONDS)),
    ],
)
def test_order_times_in_seconds_or_milliseconds_are_milliseconds(profile: Any, stamp: Any) -> None:
    order = {"id": "l-1", "status": "OPEN", "updatedAt": stamp}
    ev = event_from_message({"channel": "watchorders", "message": order}, **KW, profile=profile)
    assert isinstance(ev, OrderEvent)
    assert ev.updated_at_ms == SECONDS * 1000
    assert (ev.status, ev.status_raw) == ("OPEN", "OPEN")


def test_order_status_case_and_id_under_another_name() -> None:
    ev = order_event(
        {"orderId": "m-7", "status": "closed", "updatedAt": SECONDS},
        received_at_ns=1,
        profile=ALT,
    )
    assert (ev.order_id, ev.status, ev.status_raw, ev.final) == ("m-7", "CLOSED", "closed", True)


def test_a_time_that_is_not_a_number_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a Unix timestamp"):
        order_event({"id": "x", "status": "OPEN", "updatedAt": "soon"}, received_at_ns=1)
