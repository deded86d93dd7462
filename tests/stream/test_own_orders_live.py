"""Against the real simulator: a service that publishes only execution outcomes on
watchOrders (spec 6's contradiction) while the client's profile says every limit state is
notified. The book shows the client's new order from the create's answer at once, learns
``stream.limit_events = outcome_only`` when that order is never notified, and from then
on reads the states over REST, so a cancel still reaches CANCELLED in the book."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from toolkit.profile import DEFAULT_PROFILE
from toolkit.sim import Simulator
from toolkit.stream._orderbook import OrderBook
from toolkit.stream._own_orders import SETTING

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_an_unnotified_own_order_teaches_outcome_only_and_the_book_follows() -> None:
    served = DEFAULT_PROFILE.replace({"stream.limit_events": "outcome_only"})
    with Simulator(seed=3, engine=False, history_orders=20, served=served) as sim:
        client = sim.client()
        book = OrderBook(client)
        task = asyncio.create_task(book.run())
        try:
            await until(lambda: book.reconciles >= 1, 60, "the first reconcile")
            created = await client.acreate_limit_order("BTC/BRL", "buy", "1000", amount="0.001")
            oid = str(created["id"])
            assert book.orders[oid].status == "OPEN"  # the create's answer, at once
            await until(lambda: SETTING in client.learned, 120, "the learnt setting")
            assert client.learned[SETTING].value == "outcome_only"
            await client.acancel_limit_order(oid)
            await until(lambda: book.orders[oid].status == "CANCELLED", 120, "CANCELLED over REST")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.aclose()
