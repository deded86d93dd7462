"""OrderBook.reconcile against the real simulator: it fetches what changed, not what is
open (fetchOrder calls counted per reconcile), and a book whose REST side is unreachable
(a closed port on loopback) ends with one TransportError instead of retrying for ever."""

from __future__ import annotations

import asyncio
import socket

import pytest
from _book_spy import Counting

from toolkit.client._client import Client
from toolkit.errors import TransportError
from toolkit.sim import Simulator
from toolkit.stream._orderbook import OrderBook

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_reconcile_fetches_what_changed_not_what_is_open(fresh_sim: Simulator) -> None:
    client = fresh_sim.client()
    spy = Counting(client)
    try:
        idle = [
            (await client.acreate_limit_order("BTC/BRL", "buy", "1", amount="0.001"))["id"]
            for _ in range(40)
        ]
        book = OrderBook(spy)  # type: ignore[arg-type]
        await book.reconcile()
        assert set(idle) <= set(book.orders)
        open_limit = sum(1 for s in book.orders.values() if not s.final)
        assert open_limit >= 40
        # nothing changed: the listing confirms every open limit order, none is fetched
        spy.fetched.clear()
        assert await book.reconcile() == []
        assert spy.fetched == []
        assert book.last_reconcile is not None
        assert book.last_reconcile.confirmed == open_limit
        # three change, two are created: those five are fetched, and only those
        moved = idle[:3]
        await asyncio.to_thread(fresh_sim.control.advance, moved[0], "TRIGGERED")
        await asyncio.to_thread(fresh_sim.control.advance, moved[1], "EXPIRED")
        await client.acancel_limit_order(moved[2])
        new = [
            (await client.acreate_limit_order("ETH/BRL", "sell", "999999", amount="0.01"))["id"]
            for _ in range(2)
        ]
        changes = await book.reconcile()
        assert sorted(spy.fetched) == sorted(moved + new)
        assert book.last_reconcile.fetched == 5
        assert {e.order_id for e in changes} == set(moved + new)
        assert book.orders[moved[1]].status == "EXPIRED"
    finally:
        await client.aclose()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def test_a_book_whose_service_is_unreachable_ends_with_one_transport_error(
    fresh_sim: Simulator,
) -> None:
    live = fresh_sim.client()
    gone = Client(
        f"http://127.0.0.1:{closed_port()}",
        ws_url=fresh_sim.ws_url,
        api_key="demo",
        api_secret="demo-secret",
        profile=fresh_sim.profile,
        profile_id="P1",
        timeout=1.0,
        max_retries=0,
    )
    try:
        order = await live.acreate_limit_order("BTC/BRL", "buy", "1", amount="0.001")
        async with live.stream(ping_interval=None) as session:
            book = OrderBook(gone)  # REST gone, the stream still up
            book.apply(order)
            with pytest.raises(TransportError, match="the service looks gone") as caught:
                await asyncio.wait_for(book.run(session), 60)
            assert "the book keeps its last state" in str(caught.value)
            assert book.orders[order["id"]].status == "OPEN"  # kept
            assert book.reconciles == 0
    finally:
        await gone.aclose()
        await live.aclose()


async def test_a_book_whose_whole_service_goes_away_ends_with_one_transport_error(
    service_profile: object,
) -> None:
    """The service stops altogether (REST and WebSocket: the simulator shut down): the
    stream never reconnects, so no gap ever comes; the lost connection itself makes the
    book reconcile, which fails, and the book ends instead of waiting for ever."""
    sim = Simulator(seed=11, engine=False, history_orders=20, profile=service_profile)
    sim.start()
    client = sim.client(timeout=1.0, max_retries=0)
    stopped = False
    try:
        order = await client.acreate_limit_order("BTC/BRL", "buy", "1", amount="0.001")
        async with client.stream(ping_interval=None) as session:
            book = OrderBook(client)
            run = asyncio.ensure_future(book.run(session))
            while book.reconciles == 0:  # the start's reconcile, with the service up
                await asyncio.wait((run,), timeout=0.05)
                assert not run.done(), run
            await asyncio.to_thread(sim.stop)
            stopped = True
            with pytest.raises(TransportError, match="the service looks gone"):
                await asyncio.wait_for(run, 60)
            assert book.orders[order["id"]].status == "OPEN"  # kept
    finally:
        await client.aclose()
        if not stopped:
            sim.stop()
