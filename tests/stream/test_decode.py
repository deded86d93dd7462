"""The stream's typed fast path (msgspec structs made for the profile): for every message,
under both profiles, the event it builds is the one ``event_from_message`` builds from the
decoded dict, or it gives the message back to that general path; ``raw`` is decoded only
when read."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.recording._rows import row_from_event, row_from_text
from toolkit.stream._decode import LazyMessage, decoder_for
from toolkit.stream._events import OrderEvent, TickerEvent, event_from_message

ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")
MS = 1_795_305_600_000
ORDER = {"id": "o-1", "symbol": "BTC/BRL", "status": "closed", "updatedAt": MS, "x": [1, {}]}


def _ticker(profile: ServiceProfile, **changes: Any) -> dict[str, Any]:
    if profile is ALT:
        quote = {"bid": "10.5", "ask": "11", "last": "10.75"}
        body: dict[str, Any] = {"s": "BTC/BRL", "quote": quote, "ts": MS // 1000}
        for key, value in changes.items():
            target = quote if key in quote else body
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value
        return body
    body = {"symbol": "BTC/BRL", "bid": "10.5", "ask": "11", "last": 10.75, "timestamp": MS}
    for key, value in changes.items():
        if value is None:
            body.pop(key)
        else:
            body[key] = value
    return body


def _cases(profile: ServiceProfile) -> list[dict[str, Any]]:
    price = "bid"
    stamp = "ts" if profile is ALT else "timestamp"
    symbol = "s" if profile is ALT else "symbol"
    return [
        {"channel": "watchticker", "message": _ticker(profile)},
        {"channel": "watchTicker", "message": _ticker(profile)},
        {"channel": "watchticker", "message": _ticker(profile, **{stamp: MS // 1000})},  # s
        {"channel": "watchticker", "message": _ticker(profile, **{price: ""})},  # NaN
        {"channel": "watchticker", "message": _ticker(profile, **{price: None})},  # missing
        {"channel": "watchticker", "message": _ticker(profile, **{symbol: ""})},
        {"channel": "watchticker", "message": _ticker(profile, **{stamp: 1.5e12})},
        {"channel": "watchticker", "message": _ticker(profile, **{stamp: None})},
        {"channel": "watchticker", "message": "not an object"},
        {"channel": "watchorders", "message": ORDER},
        {"channel": "watchorders", "message": {**ORDER, "updatedAt": MS // 1000}},
        {"channel": "watchorders", "message": {"orderId": 7, "status": "OPEN"}},
        {"channel": "watchorders", "message": [1, 2]},
        {"channel": "watchbalance", "message": {"balances": [], "timestamp": MS}},
        {"channel": "somethingnew", "message": {"a": 1}},
    ]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


@pytest.mark.parametrize("profile", [DEFAULT_PROFILE, ALT], ids=["default", "alt"])
def test_fast_events_equal_the_general_ones(profile: ServiceProfile) -> None:
    decoder = decoder_for(profile)
    taken = 0
    for msg in _cases(profile):
        text = json.dumps(msg, separators=(",", ":"))
        kw: dict[str, Any] = {"received_at_ns": 5, "connection_id": "c1", "seq": 3}
        want = event_from_message(json.loads(text), **kw, profile=profile)
        decoded = decoder.decode(text)
        got = None if decoded is None else decoder.event(decoded, text, 5, "c1", 3)
        if got is None:
            continue  # the general path builds it: ``want`` itself
        taken += 1
        assert type(got) is type(want), msg
        for name in type(want).__struct_fields__:
            assert _same(getattr(got, name), getattr(want, name)), (msg, name)
        assert isinstance(got.raw, LazyMessage) and got.raw.text == text
    assert taken >= 6  # the usual shapes take the fast path


def test_raw_is_decoded_only_when_read() -> None:
    text = json.dumps({"channel": "watchticker", "message": _ticker(DEFAULT_PROFILE)})
    decoder = decoder_for(DEFAULT_PROFILE)
    event = decoder.event(decoder.decode(text), text, 1, "c", 1)
    assert isinstance(event, TickerEvent) and isinstance(event.raw, LazyMessage)
    assert event.raw.decoded is None  # nobody looked
    assert event.raw["message"]["symbol"] == "BTC/BRL"
    assert event.raw == json.loads(text) and dict(event.raw) == json.loads(text)
    assert isinstance(event.raw, Mapping) and "message" in event.raw
    # a recorded row of it keeps the text as sent, not a re-encoding
    assert row_from_event(event) == row_from_text(text, received_at_ns=1, connection_id="c", seq=1)


def test_an_order_event_owns_its_order() -> None:
    text = json.dumps({"channel": "watchorders", "message": ORDER})
    decoder = decoder_for(DEFAULT_PROFILE)
    event = decoder.event(decoder.decode(text), text, 1, "c", 1)
    assert isinstance(event, OrderEvent) and event.order == ORDER
    assert (event.order_id, event.status, event.status_raw) == ("o-1", "CLOSED", "closed")
    assert event.raw["message"] is not event.order


def test_text_that_is_not_json_goes_the_general_way() -> None:
    assert decoder_for(DEFAULT_PROFILE).decode('{"channel":"watchticker","message":{') is None
