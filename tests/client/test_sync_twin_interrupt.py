"""A KeyboardInterrupt while a sync twin waits (Ctrl-C in a script, "interrupt the kernel"
in a notebook): the work on the private loop thread is cancelled and waited for, so the
store keeps what was fetched and its lock is free at once, nothing is left pending on the
loop, and the interrupt says what was kept. The interrupt is a real SIGINT delivered to
the main thread once the simulator has answered enough requests."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolkit.client import Client
from toolkit.client._sync import _Call
from toolkit.sim import Simulator
from toolkit.store import OrderStore

AFTER = 25


@pytest.fixture
def slow_sim() -> Iterator[Simulator]:
    with Simulator(seed=5, engine=False, history_orders=120, latency_ms=20) as s:
        yield s


def interrupt_after(answers: int) -> Callable[[httpx.Response], Any]:
    """A response hook that sends SIGINT to the main thread at the ``answers``-th answer."""
    seen = 0

    async def hook(response: httpx.Response) -> None:
        nonlocal seen
        seen += 1
        if seen == answers:
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    return hook


def pending_tasks(client: Client) -> int:
    loop = client._loop_thread.loop
    assert loop is not None

    async def count() -> int:
        return len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])

    return asyncio.run_coroutine_threadsafe(count(), loop).result(10)


def test_an_interrupted_load_is_cancelled_and_says_what_it_fetched(slow_sim: Simulator) -> None:
    ids = slow_sim.control.order_ids()
    hooks = {"response": [interrupt_after(AFTER)]}
    with slow_sim.client(concurrency=4, event_hooks=hooks) as client:
        with pytest.raises(KeyboardInterrupt) as info:
            client.load_orders(ids=ids, progress=False)
        notes = getattr(info.value, "__notes__", [])
        assert any("load_orders was interrupted with" in n for n in notes), notes
        assert pending_tasks(client) == 0  # nothing runs on behind the caller's back
        assert client.fetch_order(ids[0])["id"] == ids[0]  # and the client still works


def test_an_interrupted_store_sync_keeps_the_bodies_and_frees_the_lock(
    slow_sim: Simulator, tmp_path: Path
) -> None:
    ids = slow_sim.control.order_ids()
    store = OrderStore(tmp_path / "store")
    hooks = {"response": [interrupt_after(AFTER)]}
    with slow_sim.client(concurrency=4, event_hooks=hooks) as client:
        with pytest.raises(KeyboardInterrupt) as info:
            store.sync(client, ids=ids, listing=False)
        notes = " ".join(getattr(info.value, "__notes__", []))
        assert "kept in the store" in notes, notes
        kept = len(store.frames().orders)
        assert kept > 0 and f"({kept} order(s) fetched before it kept in the store)" in notes
        assert pending_tasks(client) == 0
        # at once, in the same process: before, StoreLocked naming this very process
        result = store.sync(client, ids=ids, listing=False)
    assert result.new == len(ids) - kept


def test_an_interrupt_inside_a_running_loop_cancels_the_twin_too(slow_sim: Simulator) -> None:
    """Jupyter's case: the twin is called from a cell, inside the kernel's running loop."""
    ids = slow_sim.control.order_ids()
    hooks = {"response": [interrupt_after(AFTER)]}
    client = slow_sim.client(concurrency=4, event_hooks=hooks)

    async def cell() -> None:
        client.load_orders(ids=ids, progress=False)

    # a loop running like the kernel's (asyncio.run would take SIGINT over itself)
    kernel = asyncio.new_event_loop()
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            kernel.run_until_complete(cell())
        notes = getattr(info.value, "__notes__", [])
        assert any("load_orders was interrupted with" in n for n in notes), notes
        assert pending_tasks(client) == 0
    finally:
        client.close()
        kernel.close()


def test_a_call_interrupted_before_it_began_ends_at_once() -> None:
    """Ctrl-C right after the call was submitted: the caller's wait ends at once (before,
    nothing would ever tell it), and the coroutine never runs."""
    started: list[bool] = []

    async def work() -> None:
        started.append(True)

    call = _Call()
    call.cancel()

    async def loop_side() -> None:
        with pytest.raises(asyncio.CancelledError):
            await call.run(work())

    asyncio.run(loop_side())
    assert call.ended.is_set() and not started
