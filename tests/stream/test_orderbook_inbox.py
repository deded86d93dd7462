"""OrderBook.run while a reconcile waits on REST: notifications keep being applied, at most
``inbox_size`` wait to be applied (a flood costs bounded memory), and the ones dropped are
counted, logged once and followed by another reconcile that brings the book back to the
REST truth. A fake session and a fake REST side whose fetchOrder is held open by the test
(an asyncio.Event)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

import pytest

from toolkit.errors import InvalidRequest, OrderNotFound
from toolkit.profile import DEFAULT_PROFILE
from toolkit.stream._events import OrderEvent, SessionEvent, order_event
from toolkit.stream._orderbook import OrderBook

pytestmark = pytest.mark.anyio

T = 1_767_225_600_000  # ms
FINAL = {"CLOSED", "CANCELLED", "EXPIRED", "REJECTED", "closed", "rejected"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def body(oid: str, status: str, at: int, typ: str = "limit") -> dict[str, Any]:
    base = {"id": oid, "type": typ, "symbol": "BTC/BRL", "side": "buy"}
    return {**base, "status": status, "updatedAt": at, "createdAt": at}


class HeldRest:
    """The REST side: ``bodies`` is the truth. fetchOrder reads the truth when called and
    answers once ``gate`` is open (a slow answer); ``fetching`` is set by the first call."""

    profile = DEFAULT_PROFILE

    def __init__(self) -> None:
        self.bodies: dict[str, dict[str, Any]] = {}
        self.gate = asyncio.Event()
        self.fetching = asyncio.Event()
        self.cancelled = 0

    async def _items(self, active: bool) -> AsyncIterator[dict[str, Any]]:
        limits = [b for b in self.bodies.values() if b["type"] == "limit"]
        for item in sorted(limits, key=lambda b: -b["createdAt"]):  # newest first
            if not (active and item["status"] in FINAL):
                yield dict(item)

    def aiter_limit_orders(
        self, status: str | Iterable[str] | None = None, **_: Any
    ) -> AsyncIterator[dict[str, Any]]:
        return self._items(status == "ACTIVE")

    async def afetch_order(self, order_id: str) -> Mapping[str, Any]:
        if order_id not in self.bodies:
            raise OrderNotFound(order_id)
        read = dict(self.bodies[order_id])
        self.fetching.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return read

    async def atoken(self) -> str:  # pragma: no cover - no stream opened here
        return "t"


class FakeSession:
    """What OrderBook.run uses of a StreamSession; ``emit`` dispatches as the reader does
    (synchronously, many messages without giving the loop a turn)."""

    subscriptions = ("watchorders",)

    def __init__(self) -> None:
        self.callbacks: list[Callable[[object], Any]] = []
        self.closed = False
        self.error: BaseException | None = None
        self.seq = 0

    def add_callback(self, fn: Callable[[object], Any], channels: Any = None) -> Callable[[], None]:
        self.callbacks.append(fn)
        return lambda: self.callbacks.remove(fn)

    async def subscribe(self, channel: str, **data: Any) -> str:  # pragma: no cover
        return channel.lower()

    def emit(self, event: object) -> None:
        for fn in list(self.callbacks):
            fn(event)

    def notify(self, order: Mapping[str, Any]) -> None:
        self.seq += 1
        self.emit(order_event(order, received_at_ns=self.seq, connection_id="c1", seq=self.seq))

    def session_event(self, kind: Any) -> None:
        self.seq += 1
        self.emit(SessionEvent("_session", self.seq, "c1", self.seq, None, kind))

    def close(self) -> None:
        self.closed = True
        self.session_event("disconnected")


def applied(book: OrderBook, oid: str, status: str, *, reconciled: bool) -> asyncio.Event:
    """Set once the book applies ``status`` of ``oid`` (from REST or a notification)."""
    seen = asyncio.Event()

    def check(event: OrderEvent) -> None:
        if (event.order_id, event.status, event.reconciled) == (oid, status, reconciled):
            seen.set()

    book.add_listener(check)
    return seen


async def test_notifications_are_applied_while_a_reconcile_waits_on_rest() -> None:
    rest, session = HeldRest(), FakeSession()
    rest.bodies["L1"] = body("L1", "OPEN", T)
    book = OrderBook(rest, reconcile_interval=None)  # type: ignore[arg-type]
    runner = asyncio.create_task(book.run(session))  # type: ignore[arg-type]
    try:
        await asyncio.wait_for(rest.fetching.wait(), 5)  # the start's reconcile is held
        seen = applied(book, "m1", "PENDING", reconciled=False)
        session.notify(body("m1", "pending", T + 1, "market"))
        await asyncio.wait_for(seen.wait(), 5)  # applied with the reconcile still held
        assert book.reconciles == 0 and not rest.gate.is_set()
    finally:
        runner.cancel()
        await asyncio.wait((runner,))
    # cancelling run cancels its reconcile, which was waiting on REST
    assert rest.cancelled == 1


async def test_a_notification_of_an_order_being_read_waits_for_its_rest_answer() -> None:
    # whole-second stamps: the trigger and the close share the stamp of the OPEN read
    rest, session = HeldRest(), FakeSession()
    rest.bodies.update(L1=body("L1", "OPEN", T), L2=body("L2", "OPEN", T))
    book = OrderBook(rest, reconcile_interval=None)  # type: ignore[arg-type]
    runner = asyncio.create_task(book.run(session))  # type: ignore[arg-type]
    await asyncio.wait_for(rest.fetching.wait(), 5)  # both read OPEN; the answers are held
    rest.bodies.update(L1=body("L1", "TRIGGERED", T), L2=body("L2", "CLOSED", T))
    session.notify(rest.bodies["L1"])
    session.notify(rest.bodies["L2"])
    other = applied(book, "m1", "PENDING", reconciled=False)
    session.notify(body("m1", "pending", T, "market"))
    await asyncio.wait_for(other.wait(), 5)
    assert "L1" not in book and "L2" not in book  # they wait for the answers
    rest.gate.set()
    session.close()
    await asyncio.wait_for(runner, 5)
    # the answers (OPEN) first, then the notifications, further along with the same stamp:
    # not overturned by an answer read before them, and no final state left or refused
    assert [t.status for t in book.history("L1")] == ["OPEN", "TRIGGERED"]
    assert [t.status for t in book.history("L2")] == ["OPEN", "CLOSED"]
    assert book.refused == 0 and book.ignored == 0 and book.reconciles == 1


async def test_a_flood_during_a_reconcile_is_bounded_counted_and_reconciled_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rest, session = HeldRest(), FakeSession()
    rest.bodies.update(L1=body("L1", "OPEN", T), L2=body("L2", "OPEN", T))
    book = OrderBook(rest, reconcile_interval=None, inbox_size=8)  # type: ignore[arg-type]
    runner = asyncio.create_task(book.run(session))  # type: ignore[arg-type]
    await asyncio.wait_for(rest.fetching.wait(), 5)  # L1 and L2 were read OPEN: now held
    # meanwhile the truth moves on, and its notifications come in a flood of others
    flood = [body(f"m{i}", "pending", T + i, "market") for i in range(1000)]
    rest.bodies.update({b["id"]: b for b in flood})
    moved = [body("L1", "CLOSED", T + 5), body("L2", "CANCELLED", T + 5), body("L3", "OPEN", T + 5)]
    rest.bodies.update({b["id"]: b for b in moved})
    with caplog.at_level(logging.DEBUG, "toolkit.orderbook"):
        for order in flood + moved:  # one burst: the book's loop gets no turn in between
            session.notify(order)
        # 8 kept, the rest dropped (L1 CLOSED, L2 CANCELLED, L3 OPEN among them)
        assert book.dropped == len(flood) + len(moved) - 8
        seen = applied(book, "m7", "PENDING", reconciled=False)
        await asyncio.wait_for(seen.wait(), 5)
        assert sorted(o for o in book.orders if o.startswith("m")) == [f"m{i}" for i in range(8)]
        assert book.reconciles == 0  # all of it while the first reconcile is still held
        rest.gate.set()
        session.close()
        await asyncio.wait_for(runner, 5)  # run ends once the reconcile asked for is done
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "dropped" in warnings[0].getMessage()
    assert "inbox_size" in warnings[0].getMessage()
    # the first reconcile read L1 and L2 OPEN before they moved; the one after the drops
    # reads the truth, L3 (created meanwhile) included
    assert book.reconciles == 2
    assert set(book.orders) == {"L1", "L2", "L3", *(f"m{i}" for i in range(8))}
    for oid, state in book.orders.items():
        truth = rest.bodies[oid]
        assert (state.status_raw, state.updated_at_ms) == (truth["status"], truth["updatedAt"])


async def test_a_drop_while_no_reconcile_runs_starts_one() -> None:
    rest, session = HeldRest(), FakeSession()
    rest.bodies["L1"] = body("L1", "OPEN", T)
    rest.gate.set()
    book = OrderBook(rest, reconcile_interval=None, inbox_size=4)  # type: ignore[arg-type]
    first = applied(book, "L1", "OPEN", reconciled=True)
    runner = asyncio.create_task(book.run(session))  # type: ignore[arg-type]
    await asyncio.wait_for(first.wait(), 5)
    assert book.reconciles == 1  # counted as the pass ends, right after its last apply
    rest.bodies["L1"] = body("L1", "CLOSED", T + 9)
    for i in range(20):
        session.notify(body(f"m{i}", "pending", T + i, "market"))
    session.notify(rest.bodies["L1"])  # dropped: the reconcile it starts reads it
    session.close()
    await asyncio.wait_for(runner, 5)
    assert book.dropped == 17 and book.reconciles == 2
    assert book.orders["L1"].status == "CLOSED" and book.orders["L1"].history[-1].reconciled


async def test_gaps_during_a_reconcile_ask_for_one_more() -> None:
    rest, session = HeldRest(), FakeSession()
    rest.bodies["L1"] = body("L1", "OPEN", T)
    book = OrderBook(rest, reconcile_interval=None)  # type: ignore[arg-type]
    runner = asyncio.create_task(book.run(session))  # type: ignore[arg-type]
    await asyncio.wait_for(rest.fetching.wait(), 5)
    rest.bodies["L1"] = body("L1", "TRIGGERED", T + 1)  # missed during the gaps
    session.session_event("gap")
    session.session_event("gap")  # two gaps in one pass: one more reconcile covers both
    rest.gate.set()
    session.close()
    await asyncio.wait_for(runner, 5)
    assert book.reconciles == 2
    assert book.orders["L1"].status == "TRIGGERED"


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"inbox_size": 0}, "inbox_size"),
        ({"inbox_size": 2.5}, "inbox_size"),
        ({"inbox_size": True}, "inbox_size"),
        ({"history_limit": -1}, "history_limit"),
        ({"history_per_order": 0}, "history_per_order"),
    ],
)
async def test_bad_sizes_are_refused_naming_the_argument(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(InvalidRequest, match=name):
        OrderBook(None, **kwargs)
