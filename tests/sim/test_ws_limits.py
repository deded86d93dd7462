"""Connection limits and faults of the simulator's WebSocket: idle timeout, max duration,
forced drop without a close frame, and best-effort delivery across a reconnect."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import pytest
import websockets
from _helpers import call, recv, signin
from websockets.asyncio.client import ClientConnection

if TYPE_CHECKING:
    from toolkit.sim import Simulator


def dropped_count(sim: Simulator) -> int:
    result: Any = sim.control.drop_connections()
    return int(result["dropped"] if isinstance(result, dict) else result)


async def closed_by_server(ws: ClientConnection, within_s: float) -> float:
    """Seconds until the server closed ``ws`` (which must send nothing before)."""
    start = time.monotonic()
    with pytest.raises(websockets.ConnectionClosed):
        await asyncio.wait_for(ws.recv(), within_s)
    return time.monotonic() - start


def test_idle_connection_is_closed_with_1000_idle_timeout(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(ws_idle_limit_s=0.5)
    token = signin(fresh_sim)

    async def run() -> tuple[float, ClientConnection]:
        async with websockets.connect(f"{fresh_sim.ws_url}/?token={token}") as ws:
            return await closed_by_server(ws, 5), ws

    elapsed, ws = asyncio.run(run())
    assert ws.close_code == 1000
    assert ws.close_reason == "idle timeout"
    assert 0.4 <= elapsed < 3


def test_client_messages_reset_idle_until_max_duration(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(ws_idle_limit_s=0.6, ws_max_duration_s=1.5)
    token = signin(fresh_sim)

    async def run() -> tuple[int, ClientConnection]:
        pongs = 0
        async with websockets.connect(f"{fresh_sim.ws_url}/?token={token}") as ws:
            deadline = time.monotonic() + 5
            try:
                while time.monotonic() < deadline:
                    # a ping every 0.2 s keeps a 0.6 s idle limit from firing
                    await asyncio.sleep(0.2)
                    pongs += (await call(ws, {"action": "ping"}))["message"] == "pong"
            except websockets.ConnectionClosed:
                pass
            return pongs, ws

    pongs, ws = asyncio.run(run())
    assert ws.close_code == 1000
    assert ws.close_reason == "max duration reached"
    assert pongs >= 4  # well past the idle limit before max duration hit


def test_knobs_are_read_when_the_connection_starts(fresh_sim: Simulator) -> None:
    token = signin(fresh_sim)

    async def run() -> ClientConnection:
        async with websockets.connect(f"{fresh_sim.ws_url}/?token={token}") as ws:
            await call(ws, {"action": "ping"})
            # a later change applies to new connections, not to this one
            fresh_sim.control.set_knobs(ws_idle_limit_s=0.3)
            async with websockets.connect(f"{fresh_sim.ws_url}/?token={token}") as short:
                await closed_by_server(short, 5)
                assert short.close_reason == "idle timeout"
            assert (await call(ws, {"action": "ping"}))["message"] == "pong"
            return ws

    ws = asyncio.run(run())
    assert ws.close_code == 1000 and ws.close_reason == ""  # closed by the client


def test_forced_drop_cuts_without_a_close_frame(fresh_sim: Simulator) -> None:
    token = signin(fresh_sim)

    async def run() -> tuple[int, websockets.ConnectionClosed]:
        async with websockets.connect(f"{fresh_sim.ws_url}/?token={token}") as ws:
            await call(ws, {"action": "subscribe", "channel": "watchOrders"})
            dropped = await asyncio.to_thread(dropped_count, fresh_sim)
            with pytest.raises(websockets.ConnectionClosedError) as info:
                await asyncio.wait_for(ws.recv(), 5)
            return dropped, info.value

    dropped, exc = asyncio.run(run())
    assert dropped == 1
    assert exc.rcvd is None  # no close frame came from the server


def test_bus_mailbox_is_released_when_the_client_leaves(fresh_sim: Simulator) -> None:
    token = signin(fresh_sim)
    bus = fresh_sim.state.bus if fresh_sim.state is not None else None
    assert bus is not None

    async def run() -> int:
        async with websockets.connect(f"{fresh_sim.ws_url}/?token={token}") as ws:
            await call(ws, {"action": "subscribe", "channel": "watchOrders"})
            return bus.connections

    assert asyncio.run(run()) == 1
    # detaching happens on the server after the close handshake; poll with a deadline
    deadline = time.monotonic() + 5
    while bus.connections and time.monotonic() < deadline:
        time.sleep(0.02)
    assert bus.connections == 0


def test_nothing_published_while_disconnected_arrives_after_reconnecting(
    fresh_sim: Simulator,
) -> None:
    token = signin(fresh_sim)
    url = f"{fresh_sim.ws_url}/?token={token}"

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with websockets.connect(url) as ws:
            await call(ws, {"action": "subscribe", "channel": "watchOrders"})
            await asyncio.to_thread(dropped_count, fresh_sim)
            with pytest.raises(websockets.ConnectionClosedError):
                await asyncio.wait_for(ws.recv(), 5)
        # published while no connection is open: best effort, nobody gets it later
        missed = fresh_sim.control.market_order(symbol="BTC/BRL", side="buy", quoteAmount="500.00")
        async with websockets.connect(url) as ws:
            await call(ws, {"action": "subscribe", "channel": "watchOrders"})
            sentinel = fresh_sim.control.market_order(
                symbol="ETH/BRL", side="buy", quoteAmount="500.00"
            )
            first = await recv(ws)
            return {"missed": missed["id"], "sentinel": sentinel["id"]}, first

    ids, first = asyncio.run(run())
    assert first["channel"] == "watchorders"
    assert first["message"]["id"] == ids["sentinel"] != ids["missed"]
