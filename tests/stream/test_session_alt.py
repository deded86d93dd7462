"""The stream session against the simulator serving ``profiles/alt.toml``, a service that
answers every unshown point otherwise: refusal by close code 4401, a ``heartbeat``
keep-alive answered by ``{"type": "heartbeat_ack"}``, other confirmation texts, an
integer ``onlyPriority``, other ticker payload fields."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.errors import AuthenticationError
from toolkit.profile import ServiceProfile, load_profile
from toolkit.sim import Simulator
from toolkit.stream._channels import Backoff
from toolkit.stream._events import Event, SessionEvent, TickerEvent
from toolkit.stream._session import StreamSession

ALT_PATH = Path(__file__).resolve().parents[2] / "profiles" / "alt.toml"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        "profile" not in inspect.signature(Simulator).parameters,
        reason="the simulator does not serve other profiles yet",
    ),
]

FAST: dict[str, Any] = {"backoff": Backoff(initial=0.01, maximum=0.05), "confirm_timeout": 5.0}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def alt() -> ServiceProfile:
    return load_profile(ALT_PATH)


@pytest.fixture(scope="module")
def alt_sim(alt: ServiceProfile) -> Iterator[Simulator]:
    with Simulator(profile=alt, engine=False, history_orders=60) as s:
        yield s


@pytest.fixture
def fresh_alt_sim(alt: ServiceProfile) -> Iterator[Simulator]:
    with Simulator(seed=13, profile=alt, engine=False, history_orders=60) as s:
        yield s


@pytest.fixture
async def client(alt_sim: Simulator) -> AsyncIterator[Client]:
    c = alt_sim.client()
    try:
        yield c
    finally:
        await c.aclose()


async def next_event(
    s: StreamSession, pred: Callable[[Event], bool], timeout: float = 5.0
) -> Event:
    async def find() -> Event:
        async for event in s:
            if pred(event):
                return event
        raise AssertionError("the session ended")

    return await asyncio.wait_for(find(), timeout)


async def ticker_after_move(s: StreamSession, sim: Simulator, price: float) -> TickerEvent:
    await asyncio.to_thread(sim.control.move_price, "BTC/BRL", price)
    event = await next_event(s, lambda e: isinstance(e, TickerEvent) and e.last == price)
    assert isinstance(event, TickerEvent)
    return event


class FixedTokenAuth(httpx.Auth):
    def __init__(self, token: str) -> None:
        self.token = token
        self.calls = 0

    async def async_token(self, send: Callable[[httpx.Request], Awaitable[Any]]) -> str:
        self.calls += 1
        return self.token


async def test_wrong_token_is_refused_by_close_code_as_authentication_error(
    alt_sim: Simulator, alt: ServiceProfile
) -> None:
    auth = FixedTokenAuth("tok_wrong-0123456789")
    client = Client(alt_sim.base_url, ws_url=alt_sim.ws_url, auth=auth, profile=alt)
    try:
        with pytest.raises(AuthenticationError, match="close code 4401") as info:
            async with asyncio.timeout(5):
                async with client.stream(**FAST):
                    pass
        assert auth.calls == 2  # one fresh token, then the refusal is final
        assert "tok_wrong-0123456789" not in str(info.value) + repr(info.value)
    finally:
        await client.aclose()


async def test_subscribe_and_unsubscribe_confirm_on_every_channel(client: Client) -> None:
    channels: list[tuple[str, dict[str, Any]]] = [
        ("watchOrders", {}),
        ("watchTicker", {"symbol": "BTC/BRL"}),
        ("watchTickers", {"onlyPriority": True}),
        ("watchBalance", {}),
    ]
    async with client.stream(**FAST) as s:
        keys = [await s.subscribe(name, **data) for name, data in channels]
        assert keys == ["watchorders", "watchticker#btcbrl", "watchtickers", "watchbalance"]
        assert s.subscriptions == tuple(keys)
        for name, data in channels:
            await s.unsubscribe(name, **data)
        assert s.subscriptions == ()


async def test_ticker_events_arrive_with_the_profile_payload(
    alt_sim: Simulator, client: Client
) -> None:
    async with client.stream(**FAST) as s:
        await s.subscribe("watchTicker", symbol="BTC/BRL")
        event = await ticker_after_move(s, alt_sim, 352_000.0)
        assert event.symbol == "BTC/BRL" and event.last == 352_000.0
        assert event.bid <= event.ask


async def test_heartbeat_keeps_the_connection_past_a_short_idle_limit(
    fresh_alt_sim: Simulator,
) -> None:
    fresh_alt_sim.control.set_knobs(ws_idle_limit_s=1.0)
    client = fresh_alt_sim.client()
    try:
        async with client.stream(ping_interval=0.3, **FAST) as s:
            await s.subscribe("watchTicker", symbol="BTC/BRL")
            conn = s.stats.connection_id
            loop = asyncio.get_running_loop()
            start = loop.time()
            price = 340_000.0
            while loop.time() - start < 2.5:  # 2.5 idle limits, each step awaited
                price += 10
                event = await ticker_after_move(s, fresh_alt_sim, price)
                assert event.connection_id == conn
            assert s.stats.reconnects == 0
    finally:
        await client.aclose()


async def test_rotation_before_a_short_max_duration_reports_no_gap(
    fresh_alt_sim: Simulator, alt: ServiceProfile
) -> None:
    fresh_alt_sim.control.set_knobs(ws_max_duration_s=3.0)
    client = fresh_alt_sim.client()
    # the session's profile says the connections last 1 s: it rotates at 0.9 s
    short = alt.replace({"stream.max_duration_s": 1.0, "stream.keepalive_interval_s": 0.3})
    try:
        async with client.stream(profile=short, **FAST) as s:
            await s.subscribe("watchTicker", symbol="BTC/BRL")
            seen: list[Event] = []
            s.add_callback(seen.append)

            def rotations() -> int:
                return sum(
                    isinstance(e, SessionEvent) and e.detail.startswith("rotated from")
                    for e in seen
                )

            loop = asyncio.get_running_loop()
            start = loop.time()
            price = 330_000.0
            while rotations() < 3:
                assert loop.time() - start < 30.0, f"only {rotations()} rotations in 30 s"
                price += 5
                await ticker_after_move(s, fresh_alt_sim, price)
            kinds = [e.kind for e in seen if isinstance(e, SessionEvent)]
            assert "gap" not in kinds and "disconnected" not in kinds
            assert s.stats.reconnects == 0
    finally:
        await client.aclose()
