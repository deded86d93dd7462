"""Tests of the stream session against the real simulator on loopback: confirmations,
refusals, permissions, authentication, events, queues, and staying connected."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from websockets.asyncio.server import ServerConnection, serve

from toolkit.client._client import Client
from toolkit.errors import (
    AuthenticationError,
    InvalidRequest,
    PermissionDenied,
    TransportError,
)
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, get_path
from toolkit.sim import Simulator
from toolkit.stream._channels import Backoff, expected_confirmation
from toolkit.stream._events import Event, SessionEvent, TickerEvent
from toolkit.stream._session import ConfirmationTimeout, StreamClosed, StreamSession

pytestmark = pytest.mark.anyio

FAST: dict[str, Any] = {"backoff": Backoff(initial=0.01, maximum=0.05), "confirm_timeout": 5.0}


async def until(cond: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Poll ``cond`` until true, failing after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def next_event(
    s: StreamSession, pred: Callable[[Event], bool], timeout: float = 5.0
) -> Event:
    """The next event of the session that satisfies ``pred``."""

    async def find() -> Event:
        async for event in s:
            if pred(event):
                return event
        raise AssertionError("the session ended")

    return await asyncio.wait_for(find(), timeout)


def is_kind(kind: str) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, SessionEvent) and e.kind == kind


async def ticker_after_move(
    s: StreamSession, sim: Simulator, symbol: str = "BTC/BRL", price: float = 350_000.0
) -> TickerEvent:
    await asyncio.to_thread(sim.control.move_price, symbol, price)
    event = await next_event(s, lambda e: isinstance(e, TickerEvent) and e.symbol == symbol)
    assert isinstance(event, TickerEvent)
    return event


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(sim: Simulator) -> AsyncIterator[Client]:
    c = sim.client()
    try:
        yield c
    finally:
        await c.aclose()


# -- subscriptions and confirmations -------------------------------------------------------


async def test_subscribe_confirms_case_insensitively_and_delivers_ticker(
    sim: Simulator, client: Client
) -> None:
    async with client.stream(**FAST) as s:
        assert await s.subscribe("WATCHticker", symbol="btc/brl") == "watchticker#btcbrl"
        assert await s.subscribe("watchOrders") == "watchorders"
        assert s.subscriptions == ("watchticker#btcbrl", "watchorders")
        event = await ticker_after_move(s, sim)
        assert event.channel == "watchticker"
        assert isinstance(event.bid, float) and isinstance(event.last, float)
        assert event.bid <= event.ask
        assert event.connection_id == s.stats.connection_id and event.seq >= 1
        assert s.stats.received >= 1
        assert await s.unsubscribe("watchTicker", symbol="BTC/BRL") == "watchticker#btcbrl"
        assert s.subscriptions == ("watchorders",)


async def test_tickers_priority_and_balance(sim: Simulator, client: Client) -> None:
    async with client.stream(**FAST) as s:
        await s.subscribe("watchTickers", onlyPriority=True)
        await s.subscribe("watchBalance")
        await asyncio.to_thread(sim.control.move_price, "ETH/BRL", 20_000.0)
        event = await next_event(s, lambda e: e.channel == "watchtickers")
        symbols = {t.symbol for t in event.tickers}  # type: ignore[union-attr]
        assert symbols and symbols <= {"BTC/BRL", "ETH/BRL"}


async def test_unsubscribe_of_something_not_subscribed_is_refused(client: Client) -> None:
    async with client.stream(**FAST) as s:
        with pytest.raises(InvalidRequest, match="Not subscribed"):
            await s.unsubscribe("watchBalance")
        # the connection stays usable after a refusal
        assert await s.subscribe("watchBalance") == "watchbalance"


async def test_invalid_channel_or_data_is_refused_before_anything_is_sent(client: Client) -> None:
    s = client.stream(**FAST)  # never opened: any I/O would raise StreamClosed instead
    with pytest.raises(InvalidRequest, match="unknown channel"):
        await s.subscribe("watchTrades")
    with pytest.raises(InvalidRequest, match="requires a symbol"):
        await s.subscribe("watchTicker")
    with pytest.raises(InvalidRequest, match="onlyPriority must be a bool"):
        await s.subscribe("watchTickers", onlyPriority="yes")
    with pytest.raises(StreamClosed):
        await s.subscribe("watchOrders")


async def test_missing_confirmation_times_out_clearly(client: Client) -> None:
    async with client.stream(backoff=FAST["backoff"], confirm_timeout=0.0) as s:
        with pytest.raises(ConfirmationTimeout, match="no confirmation of subscribe watchorders"):
            await s.subscribe("watchOrders")
        assert s.subscriptions == ()


@pytest.mark.parametrize(
    "key, denied, allowed",
    [
        (
            "market-only",
            [("watchOrders", "orders:*"), ("watchBalance", "wallet:*")],
            "watchTickers",
        ),
        ("orders-only", [("watchTicker", "market:*"), ("watchTickers", "market:*")], "watchOrders"),
        (
            "wallet-only",
            [("watchOrders", "orders:*"), ("watchTickers", "market:*")],
            "watchBalance",
        ),
    ],
)
async def test_permission_denied_names_channel_and_permission(
    sim: Simulator, key: str, denied: list[tuple[str, str]], allowed: str
) -> None:
    client = sim.client(api_key=key, api_secret=f"{key}-secret")
    try:
        async with client.stream(**FAST) as s:
            for channel, permission in denied:
                data = {"symbol": "BTC/BRL"} if channel == "watchTicker" else {}
                with pytest.raises(PermissionDenied) as info:
                    await s.subscribe(channel, **data)
                assert permission in str(info.value) and channel in str(info.value)
            assert await s.subscribe(allowed) == allowed.lower()
            assert s.subscriptions == (allowed.lower(),)
    finally:
        await client.aclose()


# -- authentication ---------------------------------------------------------------------------


class FixedTokenAuth(httpx.Auth):
    """Hands out one fixed operational token (the client's custom-auth seam)."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.calls = 0

    async def async_token(self, send: Callable[[httpx.Request], Awaitable[Any]]) -> str:
        self.calls += 1
        return self.token


def refusal_text(profile: ServiceProfile) -> str:
    """How the error names the refusal of ``profile``'s service: its HTTP status before
    the upgrade, or its close code after it."""
    stream = profile.stream
    if stream.refusal_kind == "http":
        return f"HTTP {stream.refusal_http_statuses[0]}"
    return f"close code {stream.refusal_close_codes[0]}"


@pytest.mark.parametrize("token", ["", "tok_not-a-real-token-0123456789"])
async def test_refused_token_raises_authentication_error(sim: Simulator, token: str) -> None:
    auth = FixedTokenAuth(token)
    client = Client(sim.base_url, auth=auth, profile=sim.profile)
    try:
        with pytest.raises(AuthenticationError, match=refusal_text(sim.served)) as info:
            async with client.stream(**FAST):
                pass
        text = str(info.value) + repr(info.value)
        assert "token=***" in text
        if token:
            assert token not in text
        assert auth.calls == 2  # the refusal forces one fresh token, then gives up
    finally:
        await client.aclose()


async def test_bad_credentials_fail_at_signin(sim: Simulator) -> None:
    client = sim.client(api_key="demo", api_secret="wrong-secret")
    try:
        with pytest.raises(AuthenticationError):
            async with client.stream(**FAST):
                pass
    finally:
        await client.aclose()


# -- events: callbacks and queues -------------------------------------------------------------


async def test_callbacks_and_bounded_queues_count_drops(sim: Simulator, client: Client) -> None:
    async with client.stream(queue_size=1, **FAST) as s:
        seen: list[Event] = []
        remove = s.add_callback(seen.append)
        remove_bad = s.add_callback(lambda e: 1 / 0)  # a broken callback harms no one
        q = s.queue("watchTicker", maxsize=2)
        await s.subscribe("watchTicker", symbol="SOL/BRL")
        for i in range(5):
            await asyncio.to_thread(sim.control.move_price, "SOL/BRL", 900.0 + i)
        await until(lambda: sum(isinstance(e, TickerEvent) for e in seen) >= 5, what="5 tickers")
        assert q.qsize() == 2
        # main queue (size 1) and per-channel queue (size 2) both overflowed
        assert s.stats.dropped >= 3 + 3
        first = q.get_nowait()
        assert isinstance(first, TickerEvent) and first.symbol == "SOL/BRL"
        remove()
        remove_bad()
        count = len(seen)
        await asyncio.to_thread(sim.control.move_price, "SOL/BRL", 950.0)
        await until(lambda: s.stats.received >= 6, what="sixth ticker")
        assert len(seen) == count


async def test_async_for_ends_when_the_session_closes(client: Client) -> None:
    s = client.stream(**FAST)
    async with s:
        await s.subscribe("watchOrders")
    events = [e async for e in s]  # what was queued, then the end
    kinds = [e.kind for e in events if isinstance(e, SessionEvent)]
    assert kinds[:2] == ["connected", "subscribed"]
    assert s.closed
    with pytest.raises(StreamClosed):
        await s.subscribe("watchOrders")
    with pytest.raises(StreamClosed):
        await s.open()


async def test_cancelling_the_owner_closes_the_session_completely(client: Client) -> None:
    # the notebook pattern: a task holds ``async with client.stream()`` and is cancelled;
    # the close must still finish (state, last event) and leave no task unretrieved
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    s = client.stream(**FAST)
    kinds: list[str] = []
    s.add_callback(lambda e: kinds.append(e.kind), channels=["_session"])
    subscribed = asyncio.Event()

    async def owner() -> None:
        async with s:
            await s.subscribe("watchTicker", symbol="BTC/BRL")
            subscribed.set()
            await s.wait_closed()

    task = asyncio.create_task(owner())
    await asyncio.wait_for(subscribed.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert s.closed
    assert kinds[-1] == "disconnected"
    await asyncio.wait_for(s.wait_closed(), 1)
    gc.collect()  # an unretrieved task exception is reported when the task is collected
    await asyncio.sleep(0)
    assert not unhandled, unhandled


# -- staying connected -------------------------------------------------------------------------


async def test_forced_drop_reconnects_resubscribes_and_reports_the_gap(
    fresh_sim: Simulator,
) -> None:
    client = fresh_sim.client()
    try:
        async with client.stream(**FAST) as s:
            await s.subscribe("watchTicker", symbol="BTC/BRL")
            first_conn = s.stats.connection_id
            await asyncio.to_thread(fresh_sim.control.drop_connections)
            gap = await next_event(s, is_kind("gap"))
            assert isinstance(gap, SessionEvent)
            assert gap.gap_start_ns is not None and gap.gap_end_ns is not None
            assert gap.gap_start_ns <= gap.gap_end_ns
            assert "without a close frame" in gap.detail
            assert s.stats.reconnects == 1 and s.stats.connection_id != first_conn
            assert s.subscriptions == ("watchticker#btcbrl",)
            event = await ticker_after_move(s, fresh_sim, price=351_000.0)
            assert event.connection_id == s.stats.connection_id
    finally:
        await client.aclose()


async def test_idle_limit_is_kept_at_bay_by_ping(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(ws_idle_limit_s=1.0)
    client = fresh_sim.client()
    try:
        async with client.stream(ping_interval=0.3, **FAST) as s:
            await s.subscribe("watchTicker", symbol="BTC/BRL")
            loop = asyncio.get_running_loop()
            start = loop.time()
            conn = s.stats.connection_id
            price = 340_000.0
            while loop.time() - start < 2.5:  # 2.5 idle limits
                price += 10
                event = await ticker_after_move(s, fresh_sim, price=price)
                assert event.connection_id == conn
            assert s.stats.reconnects == 0
    finally:
        await client.aclose()


async def test_without_ping_the_idle_limit_closes_and_session_reconnects(
    fresh_sim: Simulator,
) -> None:
    fresh_sim.control.set_knobs(ws_idle_limit_s=0.5)
    client = fresh_sim.client()
    try:
        async with client.stream(ping_interval=None, **FAST) as s:
            await s.subscribe("watchOrders")
            gap = await next_event(s, is_kind("gap"))
            assert "idle timeout" in gap.detail  # type: ignore[union-attr]
            assert s.subscriptions == ("watchorders",)
    finally:
        await client.aclose()


async def test_max_duration_close_is_survived_by_reconnect(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(ws_max_duration_s=0.5)
    client = fresh_sim.client()
    try:
        async with client.stream(rotate_after=None, ping_interval=0.2, **FAST) as s:
            await s.subscribe("watchTicker", symbol="ETH/BRL")
            gap = await next_event(s, is_kind("gap"))
            assert "max duration reached" in gap.detail  # type: ignore[union-attr]
            code = fresh_sim.knobs.ws_limit_close_code  # 1000, or the profile's own
            assert f"code {code}" in gap.detail  # type: ignore[union-attr]
            event = await ticker_after_move(s, fresh_sim, "ETH/BRL", 21_000.0)
            assert event.connection_id == s.stats.connection_id
    finally:
        await client.aclose()


async def test_rotation_before_max_duration_leaves_no_gap(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(ws_max_duration_s=2.0)
    client = fresh_sim.client()
    try:
        async with client.stream(rotate_after=0.5, ping_interval=0.2, **FAST) as s:
            await s.subscribe("watchTicker", symbol="BTC/BRL")
            seen: list[Event] = []
            s.add_callback(seen.append)

            def rotations() -> int:
                return sum(is_kind("connected")(e) for e in seen)

            loop = asyncio.get_running_loop()
            start = loop.time()
            price = 330_000.0
            # past the max duration and across several rotations (however slow the machine),
            # the ticker of every price moved arrives (next_event fails after 5 s otherwise)
            while loop.time() - start < 2.5 or rotations() < 3:
                assert loop.time() - start < 30.0, f"only {rotations()} rotations in 30 s"
                price += 5
                await ticker_after_move(s, fresh_sim, price=price)
            kinds = [e.kind for e in seen if isinstance(e, SessionEvent)]
            assert kinds.count("connected") >= 3  # rotated several times
            assert "gap" not in kinds and "disconnected" not in kinds
            assert s.stats.reconnects == 0
    finally:
        await client.aclose()


def _put(payload: dict[str, Any], path: str, value: Any) -> None:
    """``payload[a][b] = value`` for the dotted ``path`` "a.b"."""
    *steps, last = path.split(".")
    for step in steps:
        payload = payload.setdefault(step, {})
    payload[last] = value


def _ticker(symbol: str, last: float, profile: ServiceProfile = DEFAULT_PROFILE) -> str:
    """A watchTicker data message, its fields where ``profile.payloads`` puts them."""
    p = profile.payloads
    ticker: dict[str, Any] = {}
    for path, value in (
        (p.ticker_symbol, symbol),
        (p.ticker_bid, last - 1),
        (p.ticker_ask, last + 1),
        (p.ticker_last, last),
        (p.ticker_time, 1),
    ):
        _put(ticker, path, value)
    return json.dumps({"channel": "watchticker", "message": ticker}, separators=(",", ":"))


class FlushOnMessageServer:
    """A WebSocket server that, like the service, sends what was published for a
    connection only when it handles that connection's next message (ahead of the answer),
    and loses it when the client closes first. When a second connection subscribes (a
    rotation), a ticker is published just before its subscription takes effect: only the
    old connection carries it. Keep-alives, confirmations and tickers are ``profile``'s."""

    def __init__(self, profile: ServiceProfile = DEFAULT_PROFILE) -> None:
        self.profile = profile
        self.pending: dict[ServerConnection, list[str]] = {}
        self.published: list[str] = []

    async def handler(self, ws: ServerConnection) -> None:
        self.pending[ws] = []
        try:
            async for text in ws:
                msg = json.loads(text)
                if msg.get("action") == "subscribe":
                    for other, queue in self.pending.items():
                        if other is not ws:
                            last = 1000.0 + len(self.published)
                            data = _ticker("BTC/BRL", last, self.profile)
                            self.published.append(data)
                            queue.append(data)
                for data in self.pending[ws]:
                    await ws.send(data)
                self.pending[ws].clear()
                stream = self.profile.stream
                if stream.keepalive_action and msg.get("action") == stream.keepalive_action:
                    reply: dict[str, Any] = {"success": True, "subscriptions": []}
                    _put(reply, stream.keepalive_reply_field, stream.keepalive_reply_value)
                else:
                    text = expected_confirmation(
                        "subscribe", "watchticker", {"symbol": "BTC/BRL"}, self.profile
                    )
                    reply = {"success": True, "message": text}
                await ws.send(json.dumps(reply, separators=(",", ":")))
        finally:
            del self.pending[ws]


async def test_rotation_drains_the_old_connection_before_closing_it(client: Client) -> None:
    server = FlushOnMessageServer(client.profile)
    async with serve(server.handler, "127.0.0.1", 0) as ws_server:
        port = next(iter(ws_server.sockets)).getsockname()[1]
        url = f"ws://127.0.0.1:{port}"
        async with client.stream(ws_url=url, rotate_after=0.2, ping_interval=None, **FAST) as s:
            seen: list[Event] = []
            s.add_callback(seen.append)
            await s.subscribe("watchTicker", symbol="BTC/BRL")

            def rotated() -> bool:
                return any(
                    isinstance(e, SessionEvent) and e.detail.startswith("rotated from")
                    for e in seen
                )

            await until(rotated, what="the first rotation")
            # the rotation published a ticker only the old connection could deliver: it was
            # read before the rotation completed, i.e. before the old connection was closed
            assert server.published
            lasts = [e.last for e in seen if isinstance(e, TickerEvent)]
            first = json.loads(server.published[0])["message"]
            assert get_path(first, client.profile.payloads.ticker_last) in lasts
            kinds = [e.kind for e in seen if isinstance(e, SessionEvent)]
            assert "gap" not in kinds and "disconnected" not in kinds
            assert s.stats.reconnects == 0


class RevocableAuth(httpx.Auth):
    """Real signins against the simulator, but once ``revoke()`` is called it hands out a
    token the gateway refuses, as a revoked token still believed valid would be, until
    the stream calls ``invalidate()``."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.profile = sim.profile
        self.revoked = False
        self.invalidations = 0
        self.signins = 0

    def revoke(self) -> None:
        self.revoked = True

    def invalidate(self) -> None:
        self.invalidations += 1
        self.revoked = False

    async def async_token(self, send: Callable[[httpx.Request], Awaitable[Any]]) -> str:
        if self.revoked:
            return "tok_revoked-0123456789"
        signin = self.profile.signin
        request = httpx.Request(
            "POST",
            f"{self.sim.base_url}{signin.path}",
            json={signin.key_field: "demo", signin.secret_field: "demo-secret"},
        )
        response = await send(request)
        self.signins += 1
        token = get_path(response.json(), signin.token_field)
        assert token, f"no {signin.token_field!r} in the sign-in answer"
        return str(token)


async def test_reconnect_after_401_forces_a_new_signin(fresh_sim: Simulator) -> None:
    auth = RevocableAuth(fresh_sim)
    client = Client(fresh_sim.base_url, auth=auth, profile=fresh_sim.profile)
    try:
        async with client.stream(**FAST) as s:
            await s.subscribe("watchOrders")
            assert auth.signins == 1
            auth.revoke()
            await asyncio.to_thread(fresh_sim.control.drop_connections)
            await next_event(s, is_kind("gap"))
            assert auth.invalidations == 1 and auth.signins == 2
            assert s.subscriptions == ("watchorders",)
            assert s.stats.reconnects == 1
    finally:
        await client.aclose()


class HeldAuth(RevocableAuth):
    """Real signins, but a call waits while ``held`` is clear: the test decides when the
    next connection (a rotation's) gets its token."""

    def __init__(self, sim: Simulator) -> None:
        super().__init__(sim)
        self.released = asyncio.Event()
        self.released.set()
        self.waiting = 0

    async def async_token(self, send: Callable[[httpx.Request], Awaitable[Any]]) -> str:
        if not self.released.is_set():
            self.waiting += 1
            await self.released.wait()
        return await super().async_token(send)


async def test_rotation_too_late_reports_the_gap(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(ws_max_duration_s=0.5)
    auth = HeldAuth(fresh_sim)
    client = Client(fresh_sim.base_url, auth=auth, profile=fresh_sim.profile)
    try:
        async with client.stream(rotate_after=0.2, ping_interval=None, **FAST) as s:
            await s.subscribe("watchOrders")
            old = s._conn
            assert old is not None and old.reader is not None
            auth.released.clear()
            await until(lambda: auth.waiting == 1, what="the rotation to ask for a token")
            # the server's max duration ends the old connection while rotation waits
            await until(old.reader.done, what="the server to close the old connection")
            auth.released.set()
            gap = await next_event(s, is_kind("gap"))
            assert isinstance(gap, SessionEvent)
            assert "max duration reached" in gap.detail
            assert gap.gap_start_ns is not None and gap.gap_end_ns is not None
            assert gap.gap_start_ns < gap.gap_end_ns
            assert s.subscriptions == ("watchorders",)
            assert s.stats.connection_id != old.id
    finally:
        await client.aclose()


async def test_error_not_retried_ends_the_session_and_async_for_raises(
    fresh_sim: Simulator,
) -> None:
    client = fresh_sim.client()
    try:
        s = client.stream(retry_on=lambda exc: False, **FAST)
        async with s:
            await s.subscribe("watchOrders")
            await asyncio.to_thread(fresh_sim.control.drop_connections)
            with pytest.raises(TransportError, match="without a close frame"):
                async for _ in s:
                    pass
            assert s.closed and s.error is not None
    finally:
        await client.aclose()


async def test_no_token_in_logs_reprs_or_errors(
    fresh_sim: Simulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = fresh_sim.client()
    try:
        token = await client.atoken()
        async with client.stream(ping_interval=0.1, **FAST) as s:
            await s.subscribe("watchOrders")
            for _ in range(2):
                await asyncio.to_thread(fresh_sim.control.drop_connections)
                await next_event(s, is_kind("gap"))
            await asyncio.sleep(0)  # let the pinger log at least once
            text = repr(s)
        tokens = {token, await client.atoken()}
    finally:
        await client.aclose()
    bad = Client(
        fresh_sim.base_url,
        auth=FixedTokenAuth("tok_secret-value-never-logged"),
        profile=fresh_sim.profile,
    )
    try:
        with pytest.raises(AuthenticationError) as info:
            async with bad.stream(**FAST):
                pass
        tokens.add("tok_secret-value-never-logged")
        text += str(info.value) + repr(info.value)
    finally:
        await bad.aclose()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "token=***" in logged  # the request line was logged, redacted
    for t in tokens:
        assert t not in logged
        assert t not in text
