"""OrderBook and two states stamped with one ``updatedAt`` (a service that stamps whole
seconds; the spec shows no unit): on one connection the later arrival wins, so the re-arm
of spec 3.2 (TRIGGERED or PROCESSING back to OPEN) is never taken for stale; replays,
other connections and REST reads keep the life-cycle rule, and the first tie ignored is
logged. Sans-I/O through the session's own decoder, then live on the simulator with
whole-second stamps (knob ``updated_at_resolution_ms``)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from toolkit.profile import ServiceProfile
from toolkit.protocol import to_epoch_ms
from toolkit.sim import Simulator
from toolkit.stream._decode import decoder_for
from toolkit.stream._events import OrderEvent, order_event
from toolkit.stream._orderbook import OrderBook

T = 1_763_950_000  # whole Unix seconds
BASE = {"id": "L1", "type": "limit", "symbol": "BTC/BRL", "side": "buy", "limitPrice": "1000"}


def wire(profile: ServiceProfile, status: str, at: int, conn: str, seq: int) -> OrderEvent:
    """A watchOrders notification as the session decodes it from the wire."""
    text = json.dumps(
        {"channel": "watchorders", "message": {**BASE, "status": status, "updatedAt": at}}
    )
    event = decoder_for(profile).fast(text, seq, conn, seq)
    assert isinstance(event, OrderEvent)
    return event


def note(status: str, at: int, conn: str = "", seq: int = 0) -> OrderEvent:
    return order_event(
        {**BASE, "status": status, "updatedAt": at},
        received_at_ns=1,
        connection_id=conn,
        seq=seq,
    )


@pytest.mark.parametrize("step", ["TRIGGERED", "PROCESSING"])
def test_a_rearm_in_the_same_second_is_applied_on_one_connection(
    service_profile: ServiceProfile, step: str
) -> None:
    book = OrderBook(profile=service_profile)
    states = [("OPEN", T), ("TRIGGERED", T + 1), (step, T + 1), ("OPEN", T + 1)]
    applied = [
        book.apply(wire(service_profile, status, at, "c1", seq)) is not None
        for seq, (status, at) in enumerate(states, start=1)
    ]
    assert applied == [True, True, step != "TRIGGERED", True]
    assert book.orders["L1"].status == "OPEN" and book.ignored == int(step == "TRIGGERED")
    # the order goes on: triggered again in that same second, then closed
    assert book.apply(wire(service_profile, "TRIGGERED", T + 1, "c1", 9)) is not None
    assert book.apply(wire(service_profile, "CLOSED", T + 1, "c1", 10)) is not None
    assert [t.status for t in book.history("L1")][-3:] == ["OPEN", "TRIGGERED", "CLOSED"]


def test_ties_without_arrival_order_keep_the_life_cycle_rule(
    caplog: pytest.LogCaptureFixture,
) -> None:
    book = OrderBook()
    book.apply(note("OPEN", T, "c1", 1))
    book.apply(note("TRIGGERED", T + 1, "c1", 2))
    with caplog.at_level(logging.DEBUG, "toolkit.orderbook"):
        # a replay of the same connection (no later seq) and another connection's copy
        assert book.apply(note("OPEN", T + 1, "c1", 2)) is None
        assert book.apply(note("OPEN", T + 1, "c2", 7)) is None
    assert book.orders["L1"].status == "TRIGGERED" and book.refused == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # the first tie only; the second at debug level
    assert "ignored a notification of order 'L1' (OPEN)" in warnings[0]
    assert f"the updatedAt ({(T + 1) * 1000}) of the TRIGGERED" in warnings[0]
    # another connection further along the life cycle still wins the tie
    assert book.apply(note("PROCESSING", T + 1, "c2", 8)) is not None
    # a REST read wins a tie; a notification after it keeps the life-cycle rule
    assert book.apply({**BASE, "status": "TRIGGERED", "updatedAt": T + 2}) is not None
    assert book.apply(note("OPEN", T + 2, "c2", 9)) is None
    assert book.orders["L1"].status == "TRIGGERED"


def test_a_rearm_of_no_known_connection_is_not_stale() -> None:
    book = OrderBook()
    book.apply(note("TRIGGERED", T))
    assert book.apply(note("OPEN", T)) is not None
    assert book.apply(note("TRIGGERED", T)) is not None  # further along: as before
    assert book.orders["L1"].status == "TRIGGERED" and book.ignored == 0


def test_arrival_order_keeps_the_protections() -> None:
    book = OrderBook()
    book.apply(note("TRIGGERED", T, "c1", 1))
    # a state without a time never replaces a timed one, whatever its seq
    untimed = order_event({**BASE, "status": "OPEN"}, received_at_ns=1, connection_id="c1", seq=2)
    assert book.apply(untimed) is None and book.refused == 1
    # a final state is left only for a newer updatedAt, even on the same connection
    assert book.apply(note("CLOSED", T, "c1", 3)) is not None
    assert book.apply(note("OPEN", T, "c1", 4)) is None
    assert book.orders["L1"].status == "CLOSED"
    # a duplicate of the held status is no change
    assert book.apply(note("CLOSED", T, "c1", 5)) is None
    assert len(book.history("L1")) == 2


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_live_rearm_with_whole_second_stamps_ends_equal_to_rest(
    fresh_sim: Simulator,
) -> None:
    # every limit event published, whatever the profile's choice: the re-arm is notified
    fresh_sim.control.set_knobs(updated_at_resolution_ms=1000, limit_events="all")
    client = fresh_sim.client()
    unit = client.profile.orders.timestamp_unit
    try:
        async with client.stream(ping_interval=None) as session:
            await session.subscribe("watchOrders")
            book = OrderBook(client, reconcile_interval=None)
            order = await client.acreate_limit_order("BTC/BRL", "buy", "1000", amount="0.001")
            oid = str(order["id"])
            seen: list[OrderEvent] = []

            async def follow(until: str, after: int) -> None:
                async for event in session:
                    if isinstance(event, OrderEvent) and event.order_id == oid:
                        book.apply(event)
                        seen.append(event)
                        if event.status == until and len(seen) > after:
                            return

            await asyncio.wait_for(follow("OPEN", 0), 5)
            await asyncio.to_thread(fresh_sim.control.advance, oid, "TRIGGERED")
            await asyncio.wait_for(follow("TRIGGERED", 1), 5)
            await asyncio.to_thread(fresh_sim.control.advance, oid, "OPEN")  # re-arm
            await asyncio.wait_for(follow("OPEN", 2), 5)
            rest: dict[str, Any] = dict(await client.afetch_order(oid))
    finally:
        await client.aclose()
    stamps = [e.updated_at_ms for e in seen]
    assert [e.status for e in seen] == ["OPEN", "TRIGGERED", "OPEN"]
    assert all(s % 1000 == 0 for s in stamps) and stamps[1] == stamps[2], stamps  # a tie
    state = book.orders[oid]
    assert (state.status, state.updated_at_ms) == ("OPEN", to_epoch_ms(rest["updatedAt"], unit))
    assert rest["status"].upper() == "OPEN"
