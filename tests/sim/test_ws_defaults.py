"""Default WebSocket connection limits (spec 8, PRODUCT.md "connection limits"): max duration
2 h and idle limit 10 min, in seconds, applied to a connection opened with the defaults."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
import websockets
from _helpers import call, signin
from websockets.protocol import State

import toolkit.sim._ws as sim_ws
from toolkit.sim import Knobs, Simulator

if TYPE_CHECKING:
    from collections.abc import Awaitable

MAX_DURATION_S = 2 * 60 * 60
IDLE_LIMIT_S = 10 * 60


def test_knob_defaults_are_the_products() -> None:
    knobs = Knobs()
    assert knobs.ws_max_duration_s == MAX_DURATION_S == 7200
    assert knobs.ws_idle_limit_s == IDLE_LIMIT_S == 600
    # a Simulator built without those knobs keeps them
    sim = Simulator(seed=3)
    assert (sim.knobs.ws_max_duration_s, sim.knobs.ws_idle_limit_s) == (7200, 600)


def test_running_simulator_reports_the_defaults(sim: Simulator) -> None:
    knobs = sim.control.knobs()
    assert (knobs["ws_max_duration_s"], knobs["ws_idle_limit_s"]) == (7200, 600)


def test_connection_with_defaults_uses_them_and_stays_open(
    sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    used: list[tuple[float, float]] = []
    serve = sim_ws._serve

    def spy(
        websocket: Any,
        state: Any,
        sub: Any,
        max_duration_s: float,
        idle_limit_s: float,
        close_code: int = 1000,
    ) -> Awaitable[None]:
        used.append((max_duration_s, idle_limit_s))
        return serve(websocket, state, sub, max_duration_s, idle_limit_s, close_code)

    # the server thread looks ``_serve`` up at each connection: the spy sees the limits
    monkeypatch.setattr(sim_ws, "_serve", spy)

    async def run() -> list[dict[str, Any]]:
        async with websockets.connect(f"{sim.ws_url}/?token={signin(sim)}") as ws:
            pongs = [await call(ws, {"action": "ping"}) for _ in range(3)]
            # silent for longer than a limit mistaken for milliseconds (0.6 s) would last
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(ws.recv(), 1.0)
            assert ws.state is State.OPEN
            pongs.append(await call(ws, {"action": "ping"}))
            assert ws.state is State.OPEN
            return pongs

    pongs = asyncio.run(run())
    assert pongs == [{"success": True, "message": "pong", "subscriptions": []}] * 4
    assert used == [(7200.0, 600.0)]
