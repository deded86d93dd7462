"""Sync twins: the same calls from a plain script and from inside a running event loop
(as in Jupyter), on a private loop thread, without patching asyncio."""

from __future__ import annotations

import asyncio
import threading

import pytest

from toolkit.client._sync import LoopThread, run_sync
from toolkit.sim import Simulator


def test_sync_twins_in_a_plain_script(sim: Simulator) -> None:
    order_id = sim.control.order_ids()[0]
    with sim.client() as client:
        assert client.fetch_order(order_id)["id"] == order_id
        assert len(client.list_limit_orders(limit=sim.profile.listing.page_max)) > 0


def test_sync_twins_inside_a_running_loop(sim: Simulator) -> None:
    order_id = sim.control.order_ids()[0]
    loop_before = asyncio.get_event_loop_policy()

    async def notebook_cell() -> tuple[str, int, int]:
        client = sim.client()
        order = client.fetch_order(order_id)  # a sync call where a loop runs
        items = list(client.iter_limit_orders(limit=10))
        frames = client.load_orders(ids=[order_id], progress=False)
        # and the async twin on the "kernel's" loop, with the same client
        again = await client.afetch_order(order_id)
        assert again["id"] == order["id"]
        await client.aclose()
        return order["id"], len(items), len(frames.orders)

    got_id, n_items, n_rows = asyncio.run(notebook_cell())
    assert got_id == order_id and n_items > 10 and n_rows == 1
    assert asyncio.get_event_loop_policy() is loop_before  # nothing patched
    assert not hasattr(asyncio, "_nest_patched")


def test_sync_call_from_the_clients_own_loop_is_refused(sim: Simulator) -> None:
    with sim.client() as client:

        async def inner() -> None:
            client.fetch_order("x")

        with pytest.raises(RuntimeError, match="await the async twin"):
            client._run(inner())


def test_closed_client_refuses_calls(sim: Simulator) -> None:
    client = sim.client()
    client.token()
    client.close()
    client.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        client.fetch_order(sim.control.order_ids()[0])
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(client.afetch_order(sim.control.order_ids()[0]))


def test_run_sync_with_and_without_a_loop() -> None:
    async def where() -> str:
        return threading.current_thread().name

    assert run_sync(where()) == threading.current_thread().name

    async def inside() -> str:
        return run_sync(where())

    assert asyncio.run(inside()) == "toolkit-shared-loop"


def test_loop_thread_runs_iterates_and_stops() -> None:
    thread = LoopThread("t-test")

    async def numbers():  # type: ignore[no-untyped-def]
        for i in range(3):
            yield i

    async def boom() -> None:
        raise ValueError("inside")

    assert list(thread.iterate(numbers())) == [0, 1, 2]
    with pytest.raises(ValueError, match="inside"):
        thread.run(boom())
    assert thread.running
    thread.stop()
    thread.stop()
    assert not thread.running
    with pytest.raises(RuntimeError, match="stopped"):
        thread.run(boom())
