"""OrderBook against the real simulator: reconciliation at start and after gaps, and the
book equal to REST after 50 forced drops during live order activity, in both event modes,
with the open limit orders that did not change never fetched again."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import pytest
from _book_spy import Counting

from toolkit.client._client import Client
from toolkit.errors import TransportError
from toolkit.profile import get_path
from toolkit.protocol import to_epoch_ms
from toolkit.sim import Simulator
from toolkit.stream._channels import Backoff
from toolkit.stream._events import Event, OrderEvent
from toolkit.stream._orderbook import OrderBook

pytestmark = pytest.mark.anyio


class Gate:
    """The session's backoff sleep, held shut by the test: the gap lasts exactly as long
    as the test needs to act while the stream is down."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.opened.set()
        self.waits = 0

    async def sleep(self, delay: float) -> None:
        self.waits += 1
        await self.opened.wait()


def fast(gate: Gate) -> dict[str, Any]:
    return {
        "backoff": Backoff(initial=0.0, maximum=0.0),
        "sleep": gate.sleep,
        "confirm_timeout": 5.0,
        "ping_interval": None,
    }


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def until(cond: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


async def mismatches(book: OrderBook, client: Client) -> list[str]:
    """Orders whose state in the book differs from fetchOrder (``updatedAt`` read in the
    profile's unit: the book keeps milliseconds)."""
    ids = list(book.orders)
    rest = await asyncio.gather(*(client.afetch_order(oid) for oid in ids))
    unit = client.profile.orders.timestamp_unit
    out = []
    for oid, order in zip(ids, rest, strict=True):
        state = book.orders[oid]
        updated_ms = to_epoch_ms(order["updatedAt"], unit)
        if (state.status_raw, state.updated_at_ms) != (order["status"], updated_ms):
            out.append(
                f"{oid}: book {state.status_raw}@{state.updated_at_ms} "
                f"rest {order['status']}@{updated_ms}"
            )
    return out


def listed_id(client: Client, item: dict[str, Any]) -> str:
    """The id of a limit-order list item, where the profile puts it."""
    return str(get_path(item, client.profile.listing.id_field))


async def test_start_reconciles_active_limit_orders_of_the_history(fresh_sim: Simulator) -> None:
    client = fresh_sim.client()
    try:
        active = [
            listed_id(client, item) async for item in client.aiter_limit_orders(status="ACTIVE")
        ]
        assert active, "the seeded history should hold ACTIVE limit orders"
        book = OrderBook(client)
        changes = await book.reconcile()
        assert set(active) <= set(book.orders)
        assert {e.order_id for e in changes} == set(book.orders)
        assert all(e.reconciled for e in changes)
        changes_by_id = {e.order_id: e.updated_at_ms for e in changes}
        assert await mismatches(book, client) == []
        # a second pass reports only what REST changed since (e.g. a cancel completing)
        again = await book.reconcile()
        assert all(
            e.order_id not in changes_by_id or e.updated_at_ms > changes_by_id[e.order_id]
            for e in again
        )
        assert book.reconciles == 2
    finally:
        await client.aclose()


async def test_gap_is_reconciled_with_rest(fresh_sim: Simulator) -> None:
    client = fresh_sim.client()
    gate = Gate()
    try:
        async with client.stream(**fast(gate)) as s:
            # no timer: the reconciles counted here are the start's and the gap's (the
            # periodic one is tested below)
            book = OrderBook(client, reconcile_interval=None)
            changes: list[OrderEvent] = []
            book.add_listener(changes.append)
            runner = asyncio.create_task(book.run(s))
            await until(lambda: book.reconciles == 1, what="initial reconcile")
            order = await client.acreate_limit_order("BTC/BRL", "buy", "100000", amount="0.001")
            if fresh_sim.served.stream.limit_events == "all":  # what the service does
                await until(lambda: order["id"] in book, what="OPEN notification")
            # else the service publishes no OPEN event: the create's answer (the whole
            # order, spec 4.4) put it in the book, as its client made it
            assert book.orders[order["id"]].status == "OPEN"
            # the drop is noticed; meanwhile the order moves and another one is created
            gaps: list[Event] = []
            s.add_callback(lambda e: gaps.append(e) if getattr(e, "kind", "") == "gap" else None)
            fresh_sim.control.set_knobs(limit_events="outcome_only")
            gate.opened.clear()
            await asyncio.to_thread(fresh_sim.control.drop_connections)
            await until(lambda: gate.waits == 1, what="the drop to be noticed")
            # the lost connection is reconciled at once (a service gone altogether never
            # gives a gap); what happens after it, only the gap's reconcile can see
            await until(lambda: book.reconciles == 2, what="the reconcile of the drop")
            await asyncio.to_thread(fresh_sim.control.advance, order["id"], "TRIGGERED")
            created = await client.acreate_limit_order("ETH/BRL", "sell", "99999", amount="0.01")
            gone = await client.acreate_limit_order("SOL/BRL", "buy", "1", amount="0.5")
            await asyncio.to_thread(fresh_sim.control.advance, gone["id"], "EXPIRED")
            assert book.orders[order["id"]].status == "OPEN"  # the stream missed it
            gate.opened.set()
            await until(lambda: book.reconciles >= 3, what="reconcile after the gap")
            assert len(gaps) == 1
            assert book.orders[order["id"]].status == "TRIGGERED"
            assert created["id"] in book
            # created and finished inside the gap: found by the listing of recent orders
            assert book.orders[gone["id"]].status == "EXPIRED"
            assert book.orders[order["id"]].history[-1].reconciled
            assert any(e.reconciled and e.order_id == order["id"] for e in changes)
            assert await mismatches(book, client) == []
        # closing the session ends run() instead of leaving it waiting forever
        await asyncio.wait_for(runner, 5)
    finally:
        await client.aclose()


async def test_a_change_in_a_gap_the_lagging_listing_does_not_show_yet_is_found(
    fresh_sim: Simulator,
) -> None:
    # the listing shows the orders as they were 2 s ago (spec 4.2 rule 6)
    fresh_sim.control.set_knobs(listing_lag_s=2.0)
    client = fresh_sim.client()
    gate = Gate()
    try:
        # an OPEN order of the history: listed long ago, so the replica shows it (an order
        # too new to be listed is fetched anyway)
        status_field = client.profile.listing.status_field
        open_ids = [
            listed_id(client, item)
            async for item in client.aiter_limit_orders(status="OPEN")
            if get_path(item, status_field) == "OPEN"
        ]
        order = {"id": open_ids[0]}
        async with client.stream(**fast(gate)) as s:
            book = OrderBook(client, reconcile_interval=None, listing_slack_ms=3_000)
            book.apply(await client.afetch_order(order["id"]))
            runner = asyncio.create_task(book.run(s))
            await until(lambda: book.reconciles == 1, what="initial reconcile")
            gate.opened.clear()
            await asyncio.to_thread(fresh_sim.control.drop_connections)
            await until(lambda: gate.waits == 1, what="the drop to be noticed")
            # missed by the stream; the lagging listing still shows it OPEN for a while,
            # as the book holds it: the pass after the gap cannot see the change
            await asyncio.to_thread(fresh_sim.control.advance, order["id"], "TRIGGERED")
            gate.opened.set()
            # the pass that settles the gap, once the listing caught up, fetches it
            await until(
                lambda: book.orders[order["id"]].status == "TRIGGERED",
                timeout=30,
                what="the change made during the gap",
            )
            assert book.orders[order["id"]].history[-1].reconciled
            runner.cancel()
            with pytest.raises(asyncio.CancelledError):
                await runner
    finally:
        await client.aclose()


async def test_run_raises_the_error_that_ended_the_session(fresh_sim: Simulator) -> None:
    client = fresh_sim.client()
    try:
        async with client.stream(reconnect=False, ping_interval=None) as s:
            book = OrderBook(client)
            runner = asyncio.create_task(book.run(s))
            await until(lambda: book.reconciles == 1, what="initial reconcile")
            await asyncio.to_thread(fresh_sim.control.drop_connections)
            with pytest.raises(TransportError, match="without a close frame"):
                await asyncio.wait_for(runner, 5)
    finally:
        await client.aclose()


async def test_periodic_reconcile_sees_unpublished_transitions(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(limit_events="outcome_only")
    client = fresh_sim.client()
    try:
        async with client.stream(ping_interval=None) as s:
            book = OrderBook(client, reconcile_interval=0.1)
            runner = asyncio.create_task(book.run(s))
            await until(lambda: book.reconciles == 1, what="initial reconcile")
            order = await client.acreate_limit_order("BTC/BRL", "buy", "10", amount="0.001")
            await asyncio.to_thread(fresh_sim.control.advance, order["id"], "TRIGGERED")
            # no event is published for either; no drop happens: the timer finds them
            await until(
                lambda: order["id"] in book and book.orders[order["id"]].status == "TRIGGERED",
                what="the periodic reconcile",
            )
            assert s.stats.reconnects == 0
            runner.cancel()
            with pytest.raises(asyncio.CancelledError):
                await runner
    finally:
        await client.aclose()


async def test_reconcile_without_active_limit_routes_still_rereads_known_orders(
    fresh_sim: Simulator,
) -> None:
    client = fresh_sim.client()
    try:
        book = OrderBook(client)
        order = await asyncio.to_thread(
            fresh_sim.control.market_order,
            symbol="BTC/BRL",
            side="buy",
            quoteAmount="100",
            outcome="pending",
        )
        book.apply(order)
        fresh_sim.control.set_knobs(limit_routes_active=False)
        await asyncio.to_thread(fresh_sim.control.advance, order["id"], "CLOSED")
        changes = await book.reconcile()
        assert [e.order_id for e in changes] == [order["id"]]
        assert book.orders[order["id"]].status == "CLOSED"
    finally:
        await client.aclose()


@pytest.mark.parametrize("mode", ["all", "outcome_only"])
async def test_book_equals_rest_after_50_drops_during_activity(
    fresh_sim: Simulator, mode: str
) -> None:
    fresh_sim.control.set_knobs(limit_events=mode)
    rng = random.Random(f"drops-{mode}")
    client = fresh_sim.client()
    gate = Gate()
    created: list[str] = []  # every order the test created
    limit_open: list[str] = []
    limit_executing: list[str] = []
    pending_market: list[str] = []

    def control(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return asyncio.to_thread(fn, *args, **kw)

    async def new_limit() -> None:
        symbol = rng.choice(["BTC/BRL", "ETH/BRL", "SOL/BRL"])
        order = await client.acreate_limit_order(symbol, "buy", "10", amount="0.001")
        created.append(order["id"])
        limit_open.append(order["id"])

    async def move_one() -> None:
        """One legal step of some limit order (most end up final, so the set of orders
        a reconcile re-reads stays small), or of a pending market order."""
        choice = rng.random()
        if limit_executing and choice < 0.4:
            oid = limit_executing.pop(rng.randrange(len(limit_executing)))
            to = rng.choice(["OPEN", "CLOSED", "CLOSED"])
            await control(fresh_sim.control.advance, oid, to)
            if to == "OPEN":
                limit_open.append(oid)
        elif limit_open and choice < 0.85:
            oid = limit_open.pop(rng.randrange(len(limit_open)))
            step = rng.choice(["TRIGGERED", "PROCESSING", "EXPIRED", "cancel"])
            if step == "cancel":
                result = await client.acancel_limit_order(oid)
                assert result is not None
            else:
                await control(fresh_sim.control.advance, oid, step)
                if step != "EXPIRED":
                    limit_executing.append(oid)
        elif pending_market:
            oid = pending_market.pop()
            await control(fresh_sim.control.advance, oid, rng.choice(["EXECUTED", "CLOSED"]))

    async def new_market() -> None:
        outcome = rng.choice(["closed", "rejected", "pending"])
        order = await control(
            fresh_sim.control.market_order,
            symbol="BTC/BRL",
            side=rng.choice(["buy", "sell"]),
            quoteAmount="100",
            outcome=outcome,
        )
        created.append(order["id"])
        # published at once, while connected: it must reach the book before a drop can
        # cut it off (a closed market order is found by no listing afterwards)
        await until(lambda: order["id"] in book, what="market order notification")
        if outcome == "pending":
            pending_market.append(order["id"])

    # open limit orders that never change: the listing confirms them, no reconcile after
    # the start fetches them (a reconcile costs what changed, not what is open)
    idle = [
        (await client.acreate_limit_order("SOL/BRL", "buy", "1", amount="0.5"))["id"]
        for _ in range(30)
    ]
    spy = Counting(client)
    # no periodic timer (the profile's default under outcome_only)
    book = OrderBook(spy, reconcile_interval=None)  # type: ignore[arg-type]
    fetched_per_gap: list[int] = []

    def noticed(n: int) -> Callable[[], bool]:
        return lambda: gate.waits >= n

    def reconciled_after(passes: int) -> Callable[[], bool]:
        """A pass begun after ``passes`` had begun is done (not the pass that settles an
        earlier gap, which may run meanwhile): the session is back and caught up."""
        return lambda: book._last_pass is not None and book._last_pass[0] > passes

    try:
        async with client.stream(**fast(gate)) as s:
            runner = asyncio.create_task(book.run(s))
            await until(lambda: book.reconciles == 1, what="initial reconcile")
            assert set(idle) <= set(book.orders)
            spy.fetched.clear()
            loop = asyncio.get_running_loop()
            for drop in range(50):
                # connected: the notifications of these reach the book live
                await new_limit()
                await new_market()
                await move_one()
                await move_one()
                gate.opened.clear()
                await control(fresh_sim.control.drop_connections)
                await until(noticed(drop + 1), what=f"drop {drop} noticed")
                # during the gap: missed by the stream, found by REST
                await move_one()
                if drop % 3 == 0:
                    await new_limit()
                passes = book._passes
                gate.opened.set()
                await until(reconciled_after(passes), what=f"reconcile {drop}")
                assert book.last_reconcile is not None
                fetched_per_gap.append(book.last_reconcile.fetched)
            assert s.stats.reconnects == 50
            assert not set(idle) & set(spy.fetched), "unchanged open orders were fetched"
            # each gap fetched a few orders (those that moved), never the open ones
            assert max(fetched_per_gap) < len(idle), fetched_per_gap
            if mode == "outcome_only":
                # limit transitions were never published: only a reconcile sees them. A
                # cancel completes on its own later (CANCELLING -> CANCELLED), unpublished
                # here too: the last reconcile must come after those completions, or it
                # reads CANCELLING and nothing tells the book of the change
                async def cancelling() -> list[str]:
                    orders = await asyncio.gather(*(client.afetch_order(o) for o in created))
                    return [
                        oid
                        for oid, order in zip(created, orders, strict=True)
                        if order["status"].upper() == "CANCELLING"
                    ]

                deadline = loop.time() + 10
                while left := await cancelling():
                    assert loop.time() < deadline, f"cancels never completed: {left}"
                    await asyncio.sleep(0.05)
                passes = book._passes
                await control(fresh_sim.control.drop_connections)
                await until(reconciled_after(passes), what="final reconcile")
            await until(lambda: all(oid in book for oid in created), what="created orders")
            deadline = loop.time() + 5
            while (diff := await mismatches(book, client)) and loop.time() < deadline:
                await asyncio.sleep(0.05)
            assert diff == []
            runner.cancel()
            with pytest.raises(asyncio.CancelledError):
                await runner
    finally:
        await client.aclose()
