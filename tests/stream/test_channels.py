"""Tests of the sans-I/O channel rules: names, validation, keys, confirmations, backoff."""

from __future__ import annotations

import random

import pytest

from toolkit.errors import InvalidRequest, PermissionDenied
from toolkit.stream._channels import (
    Backoff,
    PendingRequest,
    classify_reply,
    confirmation_text,
    normalize_channel,
    parse_channel_spec,
    subscription_key,
    subscription_request,
    validate_subscription,
)


@pytest.mark.parametrize(
    "given, expected",
    [
        ("watchOrders", "watchorders"),
        ("WATCHTICKER", "watchticker"),
        ("watchtickers", "watchtickers"),
        (" WatchBalance ", "watchbalance"),
    ],
)
def test_channel_names_are_case_insensitive(given: str, expected: str) -> None:
    assert normalize_channel(given) == expected


@pytest.mark.parametrize("bad", ["watchOrder", "", "ticker", "watchTicker:BTC/BRL"])
def test_unknown_channel_is_refused(bad: str) -> None:
    with pytest.raises(InvalidRequest, match="unknown channel"):
        normalize_channel(bad)


def test_ticker_requires_a_symbol_in_base_quote_form() -> None:
    assert validate_subscription("watchTicker", {"symbol": "btc/brl"}) == (
        "watchticker",
        {"symbol": "BTC/BRL"},
    )
    with pytest.raises(InvalidRequest, match="requires a symbol"):
        validate_subscription("watchTicker")
    for bad in ("BTCBRL", "BTC-BRL", "BTC/", "/BRL", "BTC/BRL/X", 42):
        with pytest.raises(InvalidRequest, match="invalid symbol"):
            validate_subscription("watchTicker", {"symbol": bad})


def test_tickers_only_priority_must_be_bool_and_others_take_no_data() -> None:
    assert validate_subscription("watchTickers", {"onlyPriority": True}) == (
        "watchtickers",
        {"onlyPriority": True},
    )
    assert validate_subscription("watchTickers") == ("watchtickers", {})
    with pytest.raises(InvalidRequest, match="onlyPriority must be a bool"):
        validate_subscription("watchTickers", {"onlyPriority": "yes"})
    with pytest.raises(InvalidRequest, match="does not take symbol"):
        validate_subscription("watchOrders", {"symbol": "BTC/BRL"})
    with pytest.raises(InvalidRequest, match="does not take"):
        validate_subscription("watchTicker", {"symbol": "BTC/BRL", "depth": 5})


def test_parse_channel_spec() -> None:
    assert parse_channel_spec("watchTicker:BTC/BRL") == ("watchticker", {"symbol": "BTC/BRL"})
    assert parse_channel_spec("watchOrders") == ("watchorders", {})
    assert parse_channel_spec("watchTickers") == ("watchtickers", {})
    assert parse_channel_spec("watchTickers:priority") == ("watchtickers", {"onlyPriority": True})
    assert parse_channel_spec("watchBalance") == ("watchbalance", {})
    with pytest.raises(InvalidRequest):
        parse_channel_spec("watchOrders:BTC/BRL")
    with pytest.raises(InvalidRequest):
        parse_channel_spec("watchTicker")
    with pytest.raises(InvalidRequest):
        parse_channel_spec("nope:1")


def test_subscription_key_and_confirmation_text() -> None:
    assert subscription_key("watchticker", {"symbol": "BTC/BRL"}) == "watchticker#btcbrl"
    assert subscription_key("watchOrders", {}) == "watchorders"
    assert subscription_key("watchtickers", {"onlyPriority": True}) == "watchtickers"
    assert (
        confirmation_text("subscribe", "watchticker#btcbrl")
        == "Successfully subscribed to channel: watchticker#btcbrl"
    )
    assert (
        confirmation_text("unsubscribe", "watchorders")
        == "Successfully unsubscribed from channel: watchorders"
    )


def test_subscription_request_shape() -> None:
    assert subscription_request("subscribe", "watchorders", {}) == {
        "action": "subscribe",
        "channel": "watchorders",
    }
    assert subscription_request("unsubscribe", "watchticker", {"symbol": "ETH/BRL"}) == {
        "action": "unsubscribe",
        "channel": "watchticker",
        "data": {"symbol": "ETH/BRL"},
    }


def test_classify_reply_tells_data_confirmation_and_pong_apart() -> None:
    assert classify_reply({"channel": "watchorders", "message": {"success": True}}) is None
    pong = classify_reply({"success": True, "message": "pong", "subscriptions": ["watchorders"]})
    assert pong is not None and pong.kind == "pong" and pong.subscriptions == ("watchorders",)
    conf = classify_reply({"success": False, "message": "Permission denied for this channel"})
    assert conf is not None and conf.kind == "confirmation" and not conf.success


def test_pending_request_matches_only_its_own_confirmation() -> None:
    req = PendingRequest("subscribe", "watchticker", {"symbol": "BTC/BRL"})
    ok = classify_reply(
        {"success": True, "message": "Successfully subscribed to channel: watchticker#btcbrl"}
    )
    other = classify_reply(
        {"success": True, "message": "Successfully subscribed to channel: watchticker#ethbrl"}
    )
    unsub = classify_reply(
        {"success": True, "message": "Successfully unsubscribed from channel: watchticker#btcbrl"}
    )
    pong = classify_reply({"success": True, "message": "pong"})
    assert ok is not None and other is not None and unsub is not None and pong is not None
    assert req.matches(ok)
    assert not req.matches(other)
    assert not req.matches(unsub)
    assert not req.matches(pong)
    # a failure carries no key: with one request in flight it can only be the answer
    fail = classify_reply({"success": False, "message": "Invalid symbol: X"})
    assert fail is not None and req.matches(fail)


@pytest.mark.parametrize(
    "channel, permission",
    [
        ("watchorders", "orders:*"),
        ("watchticker", "market:*"),
        ("watchtickers", "market:*"),
        ("watchbalance", "wallet:*"),
    ],
)
def test_permission_refusal_names_channel_and_permission(channel: str, permission: str) -> None:
    data = {"symbol": "BTC/BRL"} if channel == "watchticker" else {}
    req = PendingRequest("subscribe", channel, data)
    reply = classify_reply({"success": False, "message": "Permission denied for this channel"})
    assert reply is not None
    err = req.error(reply)
    assert isinstance(err, PermissionDenied)
    assert permission in str(err)
    assert channel in str(err).lower()


def test_other_refusals_are_invalid_request() -> None:
    req = PendingRequest("unsubscribe", "watchorders", {})
    reply = classify_reply({"success": False, "message": "Not subscribed to channel: watchorders"})
    assert reply is not None
    err = req.error(reply)
    assert isinstance(err, InvalidRequest)
    assert "Not subscribed" in str(err)


def test_backoff_is_capped_exponential_with_jitter() -> None:
    b = Backoff(initial=1.0, maximum=8.0, factor=2.0, jitter=0.5, rng=random.Random(1))
    delays = [b.next_delay() for _ in range(8)]
    caps = [1, 2, 4, 8, 8, 8, 8, 8]
    for delay, cap in zip(delays, caps, strict=True):
        assert cap * 0.5 <= delay <= cap
    assert len(set(delays)) == len(delays)  # jittered, not lockstep
    b.reset()
    assert b.next_delay() <= 1.0


def test_backoff_without_jitter_is_exact_and_validates() -> None:
    b = Backoff(initial=0.1, maximum=0.4, factor=3.0, jitter=0.0)
    assert [round(b.next_delay(), 6) for _ in range(4)] == [0.1, 0.3, 0.4, 0.4]
    with pytest.raises(ValueError):
        Backoff(factor=0.5)
    with pytest.raises(ValueError):
        Backoff(jitter=2)
