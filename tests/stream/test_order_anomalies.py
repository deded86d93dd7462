"""Faults of order notifications and malformed payloads, sans-I/O: a ``watchOrders``
notification without an id, a status or an ``updatedAt`` is a RawEvent naming the field
on the general and the generated fast path alike (never an OrderEvent with blanks); a
payload or list element of the wrong type is a RawEvent with an error; a boolean price is
no number; the OrderBook never lets a blank or timeless state replace a known one, nor
leaves a final state but for a known, strictly newer ``updatedAt``."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

import toolkit.stream._events as events_module
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.stream._decode import NOT_TAKEN, TypedDecoder
from toolkit.stream._events import (
    BalanceEvent,
    Event,
    OrderEvent,
    PayloadMismatch,
    RawEvent,
    TickersEvent,
    event_from_message,
    order_event,
)
from toolkit.stream._keepalive import Connection
from toolkit.stream._orderbook import OrderBook
from toolkit.stream._session import StreamSession

ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")
MS = 1_767_225_600_000
ORDER = {"id": "o1", "status": "OPEN", "type": "limit", "symbol": "BTC/BRL", "updatedAt": MS}
#: a notification with a base field missing or unusable -> the field the error names
BAD_ORDERS: list[tuple[dict[str, Any], str]] = [
    ({k: v for k, v in ORDER.items() if k != "id"}, "no order id"),
    ({**ORDER, "id": None}, "no order id"),
    ({k: v for k, v in ORDER.items() if k != "status"}, "no 'status'"),
    ({**ORDER, "status": None}, "no 'status' (got None)"),
    ({**ORDER, "status": "  "}, "no 'status' (got '  ')"),
    ({k: v for k, v in ORDER.items() if k != "updatedAt"}, "no 'updatedAt' that is a Unix time"),
    ({**ORDER, "updatedAt": None}, "(got None)"),
    ({**ORDER, "updatedAt": ""}, "(got '')"),
    ({**ORDER, "updatedAt": "x"}, "(got 'x')"),
    ({**ORDER, "updatedAt": 0}, "(got 0)"),
    ({**ORDER, "updatedAt": True}, "(got True)"),
    ({**ORDER, "updatedAt": [1]}, "(got [1])"),
]
KW: dict[str, Any] = {"received_at_ns": 5, "connection_id": "c1", "seq": 1}


@pytest.fixture(autouse=True)
def fresh_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the once-per-setting reports from scratch."""
    monkeypatch.setattr(events_module, "_reported", set())


def _text(body: Any, channel: str = "watchorders") -> str:
    return json.dumps({"channel": channel, "message": body}, separators=(",", ":"))


class _FakeWS:
    def __init__(self, texts: Iterable[str]) -> None:
        self.texts = iter(texts)

    async def recv(self) -> str:
        for text in self.texts:
            return text
        raise ConnectionClosed(None, None)


class _Client:
    class settings:
        ws_url = "ws://fake"

    profile = None


def _read(profile: ServiceProfile, texts: list[str]) -> tuple[list[Event], StreamSession]:
    """What a session's reader delivers for ``texts`` (no network)."""
    session = StreamSession(_Client(), queue_size=0, ping_interval=None, profile=profile)  # type: ignore[arg-type]
    got: list[Event] = []
    session.add_callback(got.append)
    conn = Connection(_FakeWS(texts), "c1", 0.0)  # type: ignore[arg-type]

    async def run() -> None:
        with pytest.raises(ConnectionClosed):
            await session._read(conn)

    asyncio.run(run())
    return got, session


# -------------------------------------------------------------- notifications (fault #2)


@pytest.mark.parametrize("profile", [DEFAULT_PROFILE, ALT], ids=["default", "alt"])
def test_a_notification_missing_a_base_field_is_a_raw_event_on_both_paths(
    profile: ServiceProfile, caplog: pytest.LogCaptureFixture
) -> None:
    decoder = TypedDecoder(profile)
    texts = [_text(body) for body, _ in BAD_ORDERS]
    for (body, named), text in zip(BAD_ORDERS, texts, strict=True):
        general = event_from_message(json.loads(text), profile=profile, **KW)
        assert isinstance(general, RawEvent), body
        assert named in general.error and "watchorders notification has" in general.error
        assert general.message == body
        # the generated fast path does not build it: it leaves it to the general path
        assert decoder.fast(text, 5, "c1", 1) is None, body
        with pytest.raises(PayloadMismatch, match="notification has no"):
            event_from_message(json.loads(text), profile=profile, strict=True, **KW)
    good = _text(ORDER)
    with caplog.at_level(logging.WARNING, "toolkit.stream"):
        delivered, session = _read(profile, [good, *texts, good])
    kinds = [type(e).__name__ for e in delivered]
    assert kinds == ["OrderEvent", *["RawEvent"] * len(texts), "OrderEvent"]
    assert all(isinstance(e, RawEvent) and e.error for e in delivered[1:-1])
    assert session.stats.received == len(texts) + 2 and session.stats.malformed == 0
    # logged once per missing field, not once per message
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 3 and all("reported once" in m for m in said), said


def test_a_complete_notification_is_the_same_order_event_on_both_paths() -> None:
    text = _text({**ORDER, "status": "closed", "updatedAt": MS // 1000})
    fast = TypedDecoder(DEFAULT_PROFILE).fast(text, 5, "c1", 1)
    general = event_from_message(json.loads(text), **KW)
    assert isinstance(fast, OrderEvent) and isinstance(general, OrderEvent)
    for field in ("order_id", "status", "status_raw", "updated_at_ms", "order"):
        assert getattr(fast, field) == getattr(general, field), field
    assert (fast.status, fast.updated_at_ms) == ("CLOSED", MS)


def test_rest_reads_still_become_order_events_for_the_book_to_judge() -> None:
    event = order_event({"id": "o1", "status": None}, received_at_ns=1, reconciled=True)
    assert (event.order_id, event.status, event.status_raw, event.updated_at_ms) == (
        "o1",
        "",
        "",
        0,
    )


# -------------------------------------------------- payloads of the wrong type (fault #6)


@pytest.mark.parametrize(
    "channel, body, named",
    [
        ("watchorders", None, "watchorders payload is null, not an object"),
        ("watchorders", [1, 2], "watchorders payload is a list, not an object"),
        ("watchorders", "text", "watchorders payload is a str, not an object"),
        ("watchtickers", {"tickers": [1, "x"]}, "element 0 is an int, not an object"),
        ("watchbalance", {"balances": [1, 2], "timestamp": MS}, "balance 0 is an int"),
        ("watchbalance", {"balances": [None], "timestamp": MS}, "balance 0 is null"),
    ],
)
def test_a_payload_of_the_wrong_type_is_a_raw_event_with_an_error(
    channel: str, body: Any, named: str
) -> None:
    event = event_from_message({"channel": channel, "message": body}, **KW)
    assert isinstance(event, RawEvent) and named in event.error, event


def test_good_list_elements_still_make_their_events() -> None:
    ticker = {"symbol": "BTC/BRL", "bid": "1", "ask": "2", "last": "1.5", "timestamp": MS}
    event = event_from_message({"channel": "watchtickers", "message": {"tickers": [ticker]}}, **KW)
    assert isinstance(event, TickersEvent) and len(event.tickers) == 1
    event = event_from_message(
        {"channel": "watchbalance", "message": {"balances": [], "timestamp": MS}}, **KW
    )
    assert isinstance(event, BalanceEvent) and event.balances == ()


def test_a_boolean_price_is_not_a_number(caplog: pytest.LogCaptureFixture) -> None:
    body = {"symbol": "BTC/BRL", "bid": True, "ask": "2", "last": "1.5", "timestamp": MS}
    text = _text(body, "watchticker")
    with pytest.raises(ValueError, match="not a number: True"):
        event_from_message(json.loads(text), **KW)
    assert TypedDecoder(DEFAULT_PROFILE).fast(text, 5, "c1", 1) is NOT_TAKEN
    with caplog.at_level(logging.WARNING, "toolkit.stream"):
        delivered, session = _read(DEFAULT_PROFILE, [text])
    assert delivered == [] and session.stats.malformed == 1
    assert "not a number: True" in caplog.text


# ----------------------------------------------------------------- the book (fault #2)


def note(oid: str, status: str, updated: int, **extra: Any) -> OrderEvent:
    """A notification as a session delivers it (status and time may be blank here, as a
    REST read or a hand-built event can be)."""
    order = {"id": oid, "status": status, "updatedAt": updated or None, **extra}
    return order_event(order, received_at_ns=1, connection_id="c1", seq=1)


def test_a_blank_status_or_unknown_time_never_replaces_a_known_state(
    caplog: pytest.LogCaptureFixture,
) -> None:
    book = OrderBook()
    assert book.apply(note("o1", "OPEN", MS, type="limit")) is not None
    with caplog.at_level(logging.DEBUG, "toolkit.orderbook"):
        assert book.apply(note("o1", "", MS + 1000)) is None  # no status
        assert book.apply(note("o1", "", MS + 2000)) is None  # again: debug only
        assert book.apply({"id": "o1", "status": "CANCELLED"}) is None  # REST, no time
        assert book.apply(note("o2", "", MS)) is None  # not even as a first state
        assert book.apply({"status": "OPEN", "updatedAt": MS}) is None  # no id
    state = book.orders["o1"]
    assert (state.status, state.updated_at_ms, state.order["type"]) == ("OPEN", MS, "limit")
    assert [t.status for t in state.history] == ["OPEN"] and "o2" not in book
    assert book.refused == 5 and book.ignored == 5
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3, warnings  # the first of each kind: status, time, id
    assert "'o1' (no status): it has no status" in warnings[0]
    assert "it has no updatedAt; the book holds OPEN of" in warnings[1]
    assert "it has no order id" in warnings[2]


def test_a_final_state_is_left_only_for_a_known_strictly_newer_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    book = OrderBook()
    # a final state whose time is unknown: nothing can be told newer than it
    assert book.apply({"id": "o2", "status": "CLOSED"}) is not None
    assert book.apply(note("o2", "OPEN", 1)) is None
    assert book.apply({"id": "o2", "status": "OPEN", "updatedAt": MS}) is None
    assert book.orders["o2"].status == "CLOSED" and book.orders["o2"].final
    # a final state with a time: REST with the same time does not undo it, a newer does
    assert book.apply(note("o3", "CANCELLED", MS)) is not None
    assert book.apply({"id": "o3", "status": "OPEN", "updatedAt": MS}) is None
    assert book.apply(note("o3", "EXECUTED", MS)) is None  # a late step: stale, not refused
    assert book.apply(note("o3", "OPEN", MS - 1000)) is None  # stale
    assert book.orders["o3"].status == "CANCELLED"
    assert book.refused == 3 and book.ignored == 5
    assert book.apply(note("o3", "CLOSED", MS + 1000)) is not None
    assert book.orders["o3"].status == "CLOSED"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "final CLOSED without an updatedAt" in warnings[0]


def test_a_known_time_replaces_an_unknown_one_that_is_not_final() -> None:
    book = OrderBook()
    assert book.apply({"id": "o4", "status": "OPEN"}) is not None
    assert book.apply(note("o4", "TRIGGERED", MS)) is not None
    assert (book.orders["o4"].status, book.refused) == ("TRIGGERED", 0)
