"""WebSocket authentication of the simulator: refusal with 401 before the upgrade, the
channel permissions of every API key, and tokens kept out of the server's logs."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import pytest
import websockets
from _helpers import call, signin

from toolkit.sim._accounts import API_KEYS

if TYPE_CHECKING:
    from toolkit.sim import Simulator

CHANNELS: dict[str, dict[str, Any]] = {
    "watchOrders": {},
    "watchTicker": {"symbol": "BTC/BRL"},
    "watchTickers": {"onlyPriority": True},
    "watchBalance": {},
}
EXPECTED_KEY = {
    "watchOrders": "watchorders",
    "watchTicker": "watchticker#btcbrl",
    "watchTickers": "watchtickers",
    "watchBalance": "watchbalance",
}
NEEDS = {
    "watchOrders": "orders:*",
    "watchTicker": "market:*",
    "watchTickers": "market:*",
    "watchBalance": "wallet:*",
}


async def refused_status(url: str) -> int:
    with pytest.raises(websockets.InvalidStatus) as info:
        async with websockets.connect(url, open_timeout=5):
            pass
    return info.value.response.status_code


def open_connections(sim: Simulator) -> int:
    """Bus mailboxes of the running simulator: one per connection its handler serves."""
    assert sim.state is not None
    return sim.state.bus.connections


@pytest.mark.parametrize("query", ["", "?token=", "?token=tok_not-a-real-token", "?tok=x"])
def test_connection_without_valid_token_is_refused_with_401(
    fresh_sim: Simulator, query: str
) -> None:
    async def run() -> tuple[int, int, dict[str, Any]]:
        async with websockets.connect(f"{fresh_sim.ws_url}/?token={signin(fresh_sim)}") as ws:
            await call(ws, {"action": "ping"})
            status = await refused_status(f"{fresh_sim.ws_url}/{query}")
            # the handler never served the refused one: still only the first connection
            return status, open_connections(fresh_sim), await call(ws, {"action": "ping"})

    status, connections, pong = asyncio.run(run())
    assert status == 401
    assert connections == 1
    assert pong["message"] == "pong"


def test_expired_token_is_refused_with_401(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(token_ttl_s=0.0)
    expired = signin(fresh_sim)  # valid until the millisecond it was issued
    assert asyncio.run(refused_status(f"{fresh_sim.ws_url}/?token={expired}")) == 401
    fresh_sim.control.set_knobs(token_ttl_s=60.0)
    live = signin(fresh_sim)

    async def run() -> dict[str, Any]:
        async with websockets.connect(f"{fresh_sim.ws_url}/?token={live}") as ws:
            return await call(ws, {"action": "ping"})

    assert asyncio.run(run())["message"] == "pong"


def test_valid_token_connects_and_answers(sim: Simulator) -> None:
    async def run() -> dict[str, Any]:
        async with websockets.connect(f"{sim.ws_url}/?token={signin(sim)}") as ws:
            return await call(ws, {"action": "ping"})

    assert asyncio.run(run()) == {"success": True, "message": "pong", "subscriptions": []}


@pytest.mark.parametrize("key", sorted(API_KEYS))
def test_channel_permissions_of_every_api_key(sim: Simulator, key: str) -> None:
    async def run() -> dict[str, dict[str, Any]]:
        replies = {}
        async with websockets.connect(f"{sim.ws_url}/?token={signin(sim, key)}") as ws:
            for channel, data in CHANNELS.items():
                msg = {"action": "subscribe", "channel": channel, "data": data}
                replies[channel] = await call(ws, msg)
            # refusals leave the connection usable and the granted channels subscribed
            replies["ping"] = await call(ws, {"action": "ping"})
        return replies

    replies = asyncio.run(run())
    granted = []
    for channel in CHANNELS:
        if API_KEYS[key].allows(NEEDS[channel]):
            granted.append(EXPECTED_KEY[channel])
            expected = {
                "success": True,
                "message": f"Successfully subscribed to channel: {EXPECTED_KEY[channel]}",
            }
        else:
            expected = {"success": False, "message": "Permission denied for this channel"}
        assert replies[channel] == expected, channel
    assert replies["ping"]["subscriptions"] == granted
    assert granted, "every fixed key grants at least one channel"


def test_permission_matrix_is_the_products() -> None:
    # guards the parametrised test above against a silently changed key set
    allowed = {
        key: sorted(c for c in CHANNELS if API_KEYS[key].allows(NEEDS[c])) for key in API_KEYS
    }
    assert allowed == {
        "demo": sorted(CHANNELS),
        "other": sorted(CHANNELS),
        "market-only": ["watchTicker", "watchTickers"],
        "orders-only": ["watchOrders"],
        "wallet-only": ["watchBalance"],
    }


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_tokens_never_reach_the_server_logs(fresh_sim: Simulator) -> None:
    token = signin(fresh_sim)
    bogus = "tok_bogus-secret-looking-value"
    capture = _Capture()
    loggers = [logging.getLogger(n) for n in ("uvicorn.error", "uvicorn.access", "toolkit")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(capture)
        lg.setLevel(logging.DEBUG)
    try:

        async def run() -> None:
            assert await refused_status(f"{fresh_sim.ws_url}/?token={bogus}") == 401
            async with websockets.connect(f"{fresh_sim.ws_url}/?token={token}") as ws:
                assert (await call(ws, {"action": "ping"}))["success"] is True

        asyncio.run(run())
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(capture)
            lg.setLevel(level)
    text = "\n".join(capture.lines)
    # the accepted and the refused connection were both logged, with the token redacted
    assert "token=***" in text
    assert token not in text
    assert bogus not in text
    assert "without completing handshake" not in text
