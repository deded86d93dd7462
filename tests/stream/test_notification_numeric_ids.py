"""watchOrders notifications whose order id is a JSON number: sans-I/O. The event (fast
and general decoding alike) names the order by its id's one form (``123`` -> ``"123"``,
an integer beyond 2**53 exact) in ``order_id`` and in its body, so the book keys ``123``
and ``"123"`` as one order; an id that cannot be an exact integer is refused (a RawEvent
naming ``watchorders.id``), never its text: 51 orders beyond 2**53 written as doubles were
one phantom key before."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolkit.profile import DEFAULT_PROFILE
from toolkit.stream._decode import decoder_for
from toolkit.stream._events import (
    OrderEvent,
    PayloadMismatch,
    RawEvent,
    event_from_message,
    order_event,
)
from toolkit.stream._orderbook import OrderBook

MS = 1_795_305_600_000
BIG = 2**60


def note(oid: Any, status: str = "pending", updated: int = MS) -> str:
    body = {"id": oid, "symbol": "BTC/BRL", "status": status, "updatedAt": updated}
    return json.dumps({"channel": "watchorders", "message": body})


def events(text: str) -> tuple[Any, Any]:
    """The general path's event and the fast path's (None when it leaves it)."""
    general = event_from_message(
        json.loads(text), received_at_ns=1, connection_id="c", seq=1, profile=DEFAULT_PROFILE
    )
    decoder = decoder_for(DEFAULT_PROFILE)
    decoded = decoder.decode(text)
    fast = None if decoded is None else decoder.event(decoded, text, 1, "c", 1)
    return general, fast


@pytest.mark.parametrize(("value", "text"), [(123, "123"), (BIG + 1, str(BIG + 1))])
def test_a_numeric_id_is_the_order_of_its_text(value: int, text: str) -> None:
    general, fast = events(note(value))
    assert fast is not None  # the usual shape takes the fast path
    for event in (general, fast):
        assert isinstance(event, OrderEvent)
        assert event.order_id == text and event.order["id"] == text


@pytest.mark.parametrize("bad", [1.5, 1e20, True, {"n": 1}], ids=json.dumps)
def test_an_id_that_is_no_exact_integer_is_refused(bad: Any) -> None:
    general, fast = events(note(bad))
    assert fast is None  # left to the general path, which names it
    assert isinstance(general, RawEvent) and general.error is not None
    assert "no usable order id" in general.error and "text or an integer" in general.error
    body = json.loads(note(bad))["message"]
    with pytest.raises(PayloadMismatch) as info:
        order_event(body, received_at_ns=1, strict=True)
    assert info.value.setting == "watchorders.id"


def test_51_ids_beyond_2_53_written_as_doubles_make_no_phantom() -> None:
    # 2**60 + 10k as doubles: many are one double, whose text names no order at all
    numbers = [format(float(BIG + 10 * k), ".15e") for k in range(51)]
    assert len(set(numbers)) < 51
    texts = [note(0).replace('"id": 0', f'"id": {n}') for n in numbers]
    got = [events(t)[0] for t in texts]
    assert all(isinstance(e, RawEvent) for e in got), got[0]


def test_the_book_holds_123_and_text_123_as_one_order() -> None:
    book = OrderBook()
    book.apply(order_event(json.loads(note(123))["message"], received_at_ns=1), reconciled=False)
    later = {"id": "123", "symbol": "BTC/BRL", "status": "closed", "updatedAt": MS + 5}
    book.apply(later)
    assert list(book.orders) == ["123"]
    assert book.orders["123"].status == "CLOSED"
    big = {"id": BIG + 1, "symbol": "BTC/BRL", "status": "pending", "updatedAt": MS}
    book.apply(big)
    book.apply({**big, "id": BIG + 2})
    assert sorted(book.orders) == sorted(["123", str(BIG + 1), str(BIG + 2)])
