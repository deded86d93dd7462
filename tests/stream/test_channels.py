"""Tests of the sans-I/O channel rules: names, validation, keys, confirmations, backoff."""

from __future__ import annotations

import random
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.frames import Close

from toolkit.errors import InvalidRequest, PermissionDenied
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.stream._channels import (
    Backoff,
    Confirmation,
    PendingRequest,
    classify_reply,
    confirmation_text,
    expected_confirmation,
    inferred_confirmation,
    keepalive_request,
    normalize_channel,
    parse_channel_spec,
    subscription_key,
    subscription_request,
    validate_subscription,
)
from toolkit.stream._keepalive import ConnectionPolicy, refusal_code


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
    assert pong is not None and pong.kind == "keepalive" and pong.subscriptions == ("watchorders",)
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


# -- the profile's texts, keep-alive and policy (cases the simulator never produces) --------

ALT = DEFAULT_PROFILE.replace(
    {
        "stream.keepalive_action": "heartbeat",
        "stream.keepalive_reply_field": "type",
        "stream.keepalive_reply_value": "heartbeat_ack",
        "stream.subscribed_text_no_symbol": "Successfully subscribed to channel: {channel}#",
        "stream.unsubscribed_text": "Unsubscribed from {channel}#{symbol}",
        "stream.unsubscribed_text_no_symbol": "Unsubscribed from {channel}",
        "stream.only_priority_type": "int",
    }
)


def _reply(msg: dict[str, Any], profile: ServiceProfile = ALT) -> Confirmation:
    reply = classify_reply(msg, profile)
    assert reply is not None
    return reply


def test_keepalive_reply_is_recognised_by_the_profile_field_and_value() -> None:
    ack = _reply({"type": "heartbeat_ack", "subscriptions": ["watchorders"]})
    assert ack.kind == "keepalive" and ack.success and ack.subscriptions == ("watchorders",)
    nested = DEFAULT_PROFILE.replace(
        {"stream.keepalive_reply_field": "data.kind", "stream.keepalive_reply_value": "alive"}
    )
    assert _reply({"data": {"kind": "alive"}}, nested).kind == "keepalive"
    # under this profile a ``pong`` text is an ordinary confirmation, never a keep-alive
    assert _reply({"success": True, "message": "pong"}).kind == "confirmation"
    assert classify_reply({"channel": "watchticker", "message": {"type": "x"}}, ALT) is None
    assert classify_reply({"type": "something_else"}, ALT) is None


def test_confirmations_follow_the_profile_templates_case_insensitively() -> None:
    sub = PendingRequest("subscribe", "watchorders", {}, ALT)
    assert expected_confirmation("subscribe", "watchorders", {}, ALT).endswith("watchorders#")
    assert sub.matches(
        _reply({"success": True, "message": "SUCCESSFULLY subscribed to channel: WatchOrders#"})
    )
    unsub = PendingRequest("unsubscribe", "watchticker", {"symbol": "BTC/BRL"}, ALT)
    assert unsub.matches(
        _reply({"success": True, "message": "Unsubscribed from watchticker#btcbrl"})
    )
    assert not unsub.matches(
        _reply({"success": True, "message": "Unsubscribed from watchticker#ethbrl"})
    )
    # a subscribe is never confirmed by an unsubscribe text of the same channel, nor the reverse
    assert not sub.matches(_reply({"success": True, "message": "Unsubscribed from watchorders"}))
    unsub_orders = PendingRequest("unsubscribe", "watchorders", {}, ALT)
    assert not unsub_orders.matches(
        _reply({"success": True, "message": "Successfully subscribed to channel: watchorders#"})
    )


def test_safe_inference_names_channel_and_symbol_as_whole_words() -> None:
    ticker = PendingRequest("subscribe", "watchticker", {"symbol": "BTC/BRL"}, ALT)
    assert ticker.matches(_reply({"success": True, "message": "ok: watchticker#btcbrl"}))
    assert ticker.matches(_reply({"success": True, "message": "now on watchticker btc/brl"}))
    # another channel whose name contains this one, or another symbol: not ours
    assert not ticker.matches(_reply({"success": True, "message": "ok: watchtickers"}))
    assert not ticker.matches(_reply({"success": True, "message": "ok: watchticker#btcbrlx"}))
    assert not ticker.matches(_reply({"success": True, "message": "ok: watchticker#ethbrl"}))
    assert inferred_confirmation("unsubscribe", "watchbalance", {}, "removed watchbalance")
    assert not inferred_confirmation("unsubscribe", "watchbalance", {}, "subscribed watchbalance")


def test_keepalive_and_subscribe_never_take_each_others_replies() -> None:
    sub = PendingRequest("subscribe", "watchorders", {}, ALT)
    keep = PendingRequest("keepalive", profile=ALT)
    ack = _reply({"type": "heartbeat_ack"})
    refused = _reply({"success": False, "message": "Unknown action: heartbeat"})
    confirmed = _reply(
        {"success": True, "message": "Successfully subscribed to channel: watchorders#"}
    )
    assert not sub.matches(ack)
    assert keep.matches(ack)
    assert keep.matches(refused)  # a failure answers whatever is outstanding: the keep-alive
    assert not keep.matches(confirmed)
    assert keep.message() == {"action": "heartbeat"}
    none = DEFAULT_PROFILE.replace({"stream.keepalive_action": ""})
    assert keepalive_request(none) is None
    with pytest.raises(ValueError, match="keepalive_action"):
        PendingRequest("keepalive", profile=none).message()


def test_only_priority_is_sent_as_the_profile_type() -> None:
    data = {"onlyPriority": True}
    assert subscription_request("subscribe", "watchtickers", data, ALT)["data"] == {
        "onlyPriority": 1
    }
    as_str = DEFAULT_PROFILE.replace({"stream.only_priority_type": "str"})
    assert subscription_request("subscribe", "watchtickers", data, as_str)["data"] == {
        "onlyPriority": "true"
    }
    assert subscription_request("subscribe", "watchtickers", data)["data"] == data


def test_policy_takes_intervals_and_limits_from_the_profile() -> None:
    default = ConnectionPolicy.resolve(DEFAULT_PROFILE)
    assert default.keepalive == {"action": "ping"} and default.keepalive_every == 60.0
    assert default.rotate_after == 7200 - 300
    assert not default.probe_on_open
    assert default.refusal_close_codes == frozenset({1008, 4001, 4003, 4401, 4403})
    alt = ConnectionPolicy.resolve(
        ALT.replace({"stream.max_duration_s": 3600.0, "stream.refusal_kind": "close"})
    )
    assert alt.keepalive == {"action": "heartbeat"} and alt.rotate_after == 3300
    assert alt.probe_on_open
    short = ConnectionPolicy.resolve(DEFAULT_PROFILE.replace({"stream.max_duration_s": 2.0}))
    assert short.rotate_after == pytest.approx(1.8)
    # an explicit keyword overrides the profile, and is still kept below the idle limit
    assert ConnectionPolicy.resolve(DEFAULT_PROFILE, ping_interval=0.3).keepalive_every == 0.3
    assert ConnectionPolicy.resolve(DEFAULT_PROFILE, ping_interval=5000).keepalive_every == 480
    assert ConnectionPolicy.resolve(DEFAULT_PROFILE, ping_interval=None).keepalive_every is None
    assert ConnectionPolicy.resolve(DEFAULT_PROFILE, rotate_after=None).rotate_after is None


def test_policy_without_keepalive_action_relies_on_websocket_pings() -> None:
    none = DEFAULT_PROFILE.replace(
        {
            "stream.keepalive_action": "",
            "stream.idle_limit_s": 10.0,
            "stream.keepalive_interval_s": 99.0,
        }
    )
    policy = ConnectionPolicy.resolve(none)
    assert policy.keepalive is None and policy.keepalive_every is None
    assert policy.ws_ping_interval is not None and policy.ws_ping_interval < 10.0


def _closed(code: int | None) -> ConnectionClosed:
    return ConnectionClosed(Close(code, "refused") if code is not None else None, None)


def test_refusal_is_a_refusal_code_before_any_answer() -> None:
    policy = ConnectionPolicy.resolve(
        DEFAULT_PROFILE.replace({"stream.refusal_close_codes": [4401]})
    )
    assert refusal_code(_closed(4401), False, policy) == 4401
    assert refusal_code(_closed(4401), True, policy) is None  # accepted, closed later
    assert refusal_code(_closed(1000), False, policy) is None
    assert refusal_code(_closed(None), False, policy) is None
    assert refusal_code(TimeoutError(), False, policy) is None
