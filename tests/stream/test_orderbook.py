"""Tests of OrderBook.apply (sans-I/O): newest updatedAt wins, stale and duplicate
notifications are ignored, both status casings, REST wins ties, bounded history."""

from __future__ import annotations

from typing import Any

import pytest

from toolkit.stream._events import OrderEvent, order_event
from toolkit.stream._orderbook import OrderBook


def note(oid: str, status: str, updated: int, **extra: Any) -> OrderEvent:
    """A watchOrders notification."""
    order = {"id": oid, "status": status, "updatedAt": updated, "symbol": "BTC/BRL", **extra}
    return order_event(order, received_at_ns=updated * 1_000_000, connection_id="c1", seq=1)


def test_newer_state_wins_and_stale_is_ignored() -> None:
    book = OrderBook()
    assert book.apply(note("l1", "OPEN", 100)) is not None
    assert book.apply(note("l1", "TRIGGERED", 200)) is not None
    assert book.apply(note("l1", "OPEN", 150)) is None  # stale, arrived late
    state = book.orders["l1"]
    assert (state.status, state.updated_at_ms, state.final) == ("TRIGGERED", 200_000, False)
    assert [t.status for t in book.history("l1")] == ["OPEN", "TRIGGERED"]
    assert book.ignored == 1


def test_duplicate_is_ignored_and_casings_are_one_status() -> None:
    book = OrderBook()
    assert book.apply(note("l1", "closed", 300)) is not None
    assert book.apply(note("l1", "CLOSED", 300)) is None
    assert book.apply(note("l1", "closed", 300)) is None
    state = book.orders["l1"]
    assert (state.status, state.status_raw, state.final) == ("CLOSED", "closed", True)
    assert len(book.history("l1")) == 1


def test_same_millisecond_prefers_the_later_life_cycle_step() -> None:
    book = OrderBook()
    book.apply(note("l1", "PROCESSING", 500))
    assert book.apply(note("l1", "EXECUTED", 500)) is not None
    assert book.apply(note("l1", "closed", 500)) is not None
    # out of order within the same millisecond: not a step back
    assert book.apply(note("l1", "PROCESSING", 500)) is None
    assert book.orders["l1"].status == "CLOSED"


def test_rest_wins_a_tie_and_final_needs_a_newer_stamp() -> None:
    book = OrderBook()
    book.apply(note("l1", "TRIGGERED", 700))
    rest = {"id": "l1", "status": "OPEN", "updatedAt": 700, "symbol": "BTC/BRL"}  # re-armed
    event = book.apply(rest)
    assert event is not None and event.reconciled
    assert book.orders["l1"].status == "OPEN"
    assert book.history("l1")[-1].reconciled
    book.apply(note("l1", "CANCELLED", 800))
    assert book.apply(note("l1", "OPEN", 800)) is None
    assert book.orders["l1"].final


def test_listeners_get_changes_only_and_can_be_removed() -> None:
    book = OrderBook()
    seen: list[str] = []
    remove = book.add_listener(lambda e: seen.append(f"{e.order_id}:{e.status}"))
    book.apply(note("m1", "pending", 1))
    book.apply(note("m1", "pending", 1))
    book.apply(note("m1", "executed", 2))
    remove()
    book.apply(note("m1", "closed", 3))
    assert seen == ["m1:PENDING", "m1:EXECUTED"]
    assert book.orders["m1"].final


def test_listener_error_does_not_break_the_book() -> None:
    book = OrderBook()

    def boom(event: OrderEvent) -> None:
        raise RuntimeError("listener bug")

    book.add_listener(boom)
    assert book.apply(note("m1", "pending", 1)) is not None
    assert "m1" in book


def test_history_is_bounded_per_order_and_overall() -> None:
    book = OrderBook(history_limit=3, history_per_order=2)
    for i, status in enumerate(["OPEN", "TRIGGERED", "OPEN", "TRIGGERED"]):
        book.apply(note("l1", status, 10 + i))
    # small stamps read as seconds (auto): still ordered, as milliseconds
    assert [t.updated_at_ms for t in book.history("l1")] == [12_000, 13_000]
    for n in range(5):
        book.apply(note(f"m{n}", "closed", 100 + n))
    finished = [oid for oid, s in book.orders.items() if s.final]
    assert finished == ["m2", "m3", "m4"]  # the oldest finished are forgotten first
    assert "l1" in book  # orders still moving are never evicted


def test_order_without_id_is_ignored() -> None:
    book = OrderBook()
    assert book.apply({"status": "OPEN", "updatedAt": 1}) is None
    assert len(book) == 0


def test_to_frame() -> None:
    pd = pytest.importorskip("pandas")
    book = OrderBook()
    book.apply(note("l1", "OPEN", 1_763_000_000_000, side="buy", type="limit"))
    book.apply(note("m1", "closed", 1_763_000_000_500, side="sell", type="market"))
    frame = book.to_frame()
    assert list(frame["id"]) == ["l1", "m1"]
    assert list(frame["status"]) == ["OPEN", "CLOSED"]
    assert list(frame["statusRaw"]) == ["OPEN", "closed"]
    assert str(frame["updatedAt"].dtype) == "datetime64[ms, UTC]"
    assert frame["updatedAt"].iloc[1] == pd.Timestamp(1_763_000_000_500, unit="ms", tz="UTC")
    assert list(frame["final"]) == [False, True]
    empty = OrderBook().to_frame()
    assert len(empty) == 0 and "status" in empty.columns


def test_reconcile_without_client_is_a_clear_error() -> None:
    import asyncio

    from toolkit.errors import ToolkitError

    with pytest.raises(ToolkitError, match="no client"):
        asyncio.run(OrderBook().reconcile())
