"""Order ids served as JSON numbers by the real simulator (knob ``numeric_ids``; spec 2.5
shows no list-item types), 271 limit orders over six pages: the loader, the store (first
and second sync) and the book each hold every order exactly once, under its id's text,
and a notification names its order the same way. With ``numeric_id_base=2**60`` the
ids are beyond 2**53, where neighbours read as doubles would merge."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.profile import ServiceProfile
from toolkit.sim import Simulator
from toolkit.store import OrderStore
from toolkit.stream._events import OrderEvent
from toolkit.stream._orderbook import OrderBook

CASES = {"listing": ("listing", 0), "all-beyond-2**53": ("all", 2**60)}


@pytest.fixture(params=list(CASES))
def numeric_sim(
    request: pytest.FixtureRequest, service_profile: ServiceProfile
) -> Iterator[Simulator]:
    mode, base = CASES[request.param]
    with Simulator(
        seed=7,
        engine=False,
        history_orders=700,
        profile=service_profile,
        numeric_ids=mode,
        numeric_id_base=base,
    ) as sim:
        yield sim


def test_every_listed_order_loads_exactly_once(numeric_sim: Simulator) -> None:
    expected = numeric_sim.control.order_ids(type="limit")
    assert len(expected) >= 250 and all(i.isdigit() for i in expected)
    with numeric_sim.client() as client:
        frames = client.load_orders(progress=False)
    ids = frames.orders["id"].tolist()
    assert Counter(ids).most_common(1)[0][1] == 1  # nothing twice
    assert set(ids) == set(expected)  # nothing missing, no phantom
    assert frames.missing == [] and frames.attrs["pages"] >= 6
    assert set(frames.trades["orderId"]) <= set(expected)


def test_the_store_holds_every_order_once_across_two_syncs(
    numeric_sim: Simulator, tmp_path: Path
) -> None:
    expected = set(numeric_sim.control.order_ids(type="limit"))
    store = OrderStore(tmp_path / "orders")
    with numeric_sim.client() as client:
        first = store.sync(client)
        second = store.sync(client)
    assert first.new == len(expected) and first.missing == {}
    assert second.new == 0 and second.fetched == 0  # the stored ids match the listed ones
    ids = store.frames().orders["id"].tolist()
    assert len(ids) == len(set(ids)) and set(ids) == expected


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_book_and_notifications_name_orders_by_their_id_text(
    numeric_sim: Simulator,
) -> None:
    expected = set(numeric_sim.control.order_ids(type="limit"))
    client = numeric_sim.client()
    try:
        book = OrderBook(client)
        await book.reconcile()
        assert book.orders and set(book.orders) <= expected
        async with client.stream(ping_interval=None) as session:
            await session.subscribe("watchOrders")
            placed = await asyncio.to_thread(
                numeric_sim.control.market_order, symbol="BTC/BRL", side="buy"
            )
            markets = await asyncio.to_thread(numeric_sim.control.order_ids, type="market")
            async with asyncio.timeout(60):  # generous: the event comes at once
                async for event in session:
                    if isinstance(event, OrderEvent):
                        break
        assert event.order_id == str(placed["id"]) and event.order_id in markets
        assert event.order["id"] == event.order_id
        assert book.apply(event) is not None and event.order_id in book
    finally:
        await client.aclose()


def test_create_cancel_and_batch_cancel_answer_numeric_ids(numeric_sim: Simulator) -> None:
    with numeric_sim.client() as client:
        made = [client.create_limit_order("BTC/BRL", "buy", "10", amount="0.001") for _ in range(3)]
        ids = [order["id"] for order in made]
        assert all(isinstance(i, str) and i.isdigit() for i in ids)
        single = client.cancel_limit_order(ids[0])
        assert single.accepted and single.order_id == ids[0]
        batch = client.cancel_limit_orders(ids[1:])
        assert [(r.order_id, r.accepted) for r in batch] == [(i, True) for i in ids[1:]]
