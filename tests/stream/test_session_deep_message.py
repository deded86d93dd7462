"""A WebSocket message nested deeper than Python's parser recurses (a WAF's page, a
broken gateway) is one malformed message, logged and counted; the session goes on with
the next one instead of dying on a RecursionError. A tiny server of our own on 127.0.0.1
sends it on the typed fast path (a data message's prefix) and on the general path."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from test_session_message_size import FakeClient, _no_wait, _until_bid, ticker
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from toolkit.stream._channels import Backoff
from toolkit.stream._session import StreamSession

DEPTH = 100_000
DEEP = {
    "data prefix": '{"channel":"watchticker","message":' + "[" * DEPTH + "]" * DEPTH + "}",
    "array": "[" * DEPTH + "]" * DEPTH,
    "object value": '{"x":' + "[" * DEPTH + "]" * DEPTH + "}",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _handler(deep: str) -> Callable[..., Any]:
    async def handler(ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for text in ws:
                if json.loads(text).get("action") == "ping":
                    continue
                confirmed = "Successfully subscribed to channel: watchticker#btcbrl"
                await ws.send(json.dumps({"success": True, "message": confirmed}))
                await ws.send(ticker(1))
                await ws.send(deep)
                await ws.send(ticker(3))

    return handler


async def _url(deep: str) -> AsyncIterator[str]:
    async with serve(_handler(deep), "127.0.0.1", 0, max_size=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}"


@pytest.mark.anyio
@pytest.mark.parametrize("kind", list(DEEP))
async def test_a_deeply_nested_message_is_one_malformed_message(kind: str) -> None:
    async for url in _url(DEEP[kind]):
        got, three, take = _until_bid(3)
        session = StreamSession(
            FakeClient(url),  # type: ignore[arg-type]
            ping_interval=None,
            sleep=_no_wait,
            backoff=Backoff(initial=0.0, maximum=0.0),
        )
        async with session:
            session.add_callback(take, ["watchTicker"])
            await session.subscribe("watchTicker", symbol="BTC/BRL")
            await asyncio.wait_for(three.wait(), 10.0)
            assert session.stats.malformed == 1 and session.stats.reconnects == 0
            assert session.error is None
        assert [e.bid for e in got if getattr(e, "bid", None) is not None] == [1, 3]
