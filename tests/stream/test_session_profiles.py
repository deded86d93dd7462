"""The stream session under service profiles, fed the cases our simulator never produces:
a small in-process WebSocket server per test plays a service that refuses a token with a
close code, answers keep-alives late, with a failure or not at all, sends stray replies,
or has no keep-alive action. No simulator, no REST: a duck-typed token source."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from toolkit.errors import AuthenticationError
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.stream._channels import Backoff
from toolkit.stream._events import Event, SessionEvent, TickerEvent
from toolkit.stream._session import ConfirmationTimeout, StreamSession

pytestmark = pytest.mark.anyio

FAST: dict[str, Any] = {"backoff": Backoff(initial=0.01, maximum=0.05)}
ALT = DEFAULT_PROFILE.replace(
    {
        "stream.refusal_kind": "close",
        "stream.refusal_close_codes": [4401],
        "stream.keepalive_action": "heartbeat",
        "stream.keepalive_reply_field": "type",
        "stream.keepalive_reply_value": "heartbeat_ack",
        "stream.subscribed_text_no_symbol": "Successfully subscribed to channel: {channel}#",
    }
)
GOOD, STALE = "tok_fresh-0123456789", "tok_stale-0123456789"

Handler = Callable[["Service", ServerConnection, dict[str, Any]], Awaitable[None]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Tokens:
    """A duck-typed token source: hands out ``tokens`` in turn, one more per
    ``auth.invalidate()`` (what the session calls after a refusal)."""

    def __init__(self, ws_url: str, profile: ServiceProfile, *tokens: str) -> None:
        self.settings = SimpleNamespace(ws_url=ws_url)
        self.profile = profile
        self.auth = self
        self.tokens = list(tokens)
        self.issued: list[str] = []
        self.invalidations = 0

    def invalidate(self) -> None:
        self.invalidations += 1

    async def atoken(self) -> str:
        token = self.tokens[min(self.invalidations, len(self.tokens) - 1)]
        self.issued.append(token)
        return token


def confirm(msg: dict[str, Any], profile: ServiceProfile) -> dict[str, Any]:
    channel = str(msg.get("channel", "")).lower()
    symbol = str((msg.get("data") or {}).get("symbol", "")).replace("/", "").lower()
    s = profile.stream
    if msg["action"] == "subscribe":
        text = s.subscribed_text if symbol else s.subscribed_text_no_symbol
    else:
        text = s.unsubscribed_text if symbol else s.unsubscribed_text_no_symbol
    return {"success": True, "message": text.format(channel=channel, symbol=symbol)}


@dataclass
class Service:
    """A crafted service: refuses tokens not in ``accepted`` with a close code right
    after the upgrade, hands every other message to ``handler``; records what it got and
    whether a message arrived while an earlier one was still unanswered."""

    profile: ServiceProfile
    handler: Handler | None = None
    accepted: frozenset[str] = frozenset({GOOD})
    refusal_code: int = 4401
    connections: int = 0
    received: list[dict[str, Any]] = field(default_factory=list)
    overlaps: int = 0
    open_: set[ServerConnection] = field(default_factory=set)
    #: connections still unanswered (one outstanding action each)
    unanswered: set[ServerConnection] = field(default_factory=set)
    got: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def serve(self, ws: ServerConnection) -> None:
        self.connections += 1
        query = parse_qs(urlsplit(ws.request.path if ws.request else "").query)
        if query.get("token", [""])[0] not in self.accepted:
            await ws.close(self.refusal_code, "unauthorized")
            return
        self.open_.add(ws)
        try:
            async for text in ws:
                msg = json.loads(text)
                if ws in self.unanswered:
                    self.overlaps += 1
                self.unanswered.add(ws)
                async with self.got:
                    self.received.append(msg)
                    self.got.notify_all()
                if self.handler is not None:
                    await self.handler(self, ws, msg)
                else:
                    await self.answer(ws, msg)
        except ConnectionClosed:
            pass
        finally:
            self.open_.discard(ws)
            self.unanswered.discard(ws)

    async def answer(self, ws: ServerConnection, msg: dict[str, Any], reply: Any = None) -> None:
        """Answer ``msg`` as the profile says (or with ``reply``)."""
        if reply is None:
            if msg.get("action") == self.profile.stream.keepalive_action:
                field_, value = (
                    self.profile.stream.keepalive_reply_field,
                    self.profile.stream.keepalive_reply_value,
                )
                reply = {field_: value, "subscriptions": []}
            else:
                reply = confirm(msg, self.profile)
        self.unanswered.discard(ws)
        await ws.send(json.dumps(reply))

    async def wait_for(self, pred: Callable[[list[dict[str, Any]]], bool]) -> None:
        async with self.got:
            await asyncio.wait_for(self.got.wait_for(lambda: pred(self.received)), 10)

    def actions(self) -> list[str]:
        return [str(m.get("action")) for m in self.received]


@pytest.fixture
async def running() -> AsyncIterator[Callable[[Service], Awaitable[str]]]:
    servers: list[Any] = []

    async def start(service: Service) -> str:
        server = await serve(service.serve, "127.0.0.1", 0).__aenter__()
        servers.append(server)
        port = next(iter(server.sockets)).getsockname()[1]
        return f"ws://127.0.0.1:{port}"

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


def kinds(events: list[Event]) -> list[str]:
    return [e.kind for e in events if isinstance(e, SessionEvent)]


# -- refusal by a close code after the upgrade ------------------------------------------------


async def test_close_refusal_surfaces_as_authentication_error_not_a_timeout(
    running: Callable[[Service], Awaitable[str]], caplog: pytest.LogCaptureFixture
) -> None:
    # the default profile expects an HTTP refusal; the service closes with 4401 instead
    caplog.set_level(logging.DEBUG)
    service = Service(DEFAULT_PROFILE, accepted=frozenset())
    tokens = Tokens(await running(service), DEFAULT_PROFILE, STALE, "tok_other-0123456789")
    session = StreamSession(tokens, confirm_timeout=60.0, **FAST)
    async with session:
        with pytest.raises(AuthenticationError, match="close code 4401") as info:
            # far below confirm_timeout: the refusal ends it, not a timeout
            await asyncio.wait_for(session.subscribe("watchOrders"), 5)
    assert service.connections == 2  # one retry with a fresh token, no endless loop
    assert tokens.invalidations == 1
    assert isinstance(session.error, AuthenticationError)
    # what the client logged (the test server's own request log is not ours)
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("toolkit")]
    assert any("token=***" in line for line in logged)
    text = str(info.value) + repr(info.value) + repr(session) + "\n".join(logged)
    assert "token=***" in str(info.value)
    for token in tokens.issued:
        assert token not in text


async def test_close_refusal_is_raised_at_open_when_the_profile_says_so(
    running: Callable[[Service], Awaitable[str]],
) -> None:
    service = Service(ALT, accepted=frozenset())
    tokens = Tokens(await running(service), ALT, STALE)
    with pytest.raises(AuthenticationError, match="4401"):
        async with StreamSession(tokens, **FAST):
            pass
    assert service.connections == 2 and tokens.invalidations == 1


async def test_a_fresh_token_after_a_close_refusal_is_used(
    running: Callable[[Service], Awaitable[str]],
) -> None:
    service = Service(ALT)
    tokens = Tokens(await running(service), ALT, STALE, GOOD)
    async with StreamSession(tokens, **FAST) as s:
        assert await s.subscribe("watchOrders") == "watchorders"
    assert service.connections == 2 and tokens.issued == [STALE, GOOD]


async def test_a_refusal_code_after_an_answer_is_an_ordinary_close(
    running: Callable[[Service], Awaitable[str]],
) -> None:
    closed_once = False

    async def handler(service: Service, ws: ServerConnection, msg: dict[str, Any]) -> None:
        nonlocal closed_once
        await service.answer(ws, msg)
        if msg.get("action") == "subscribe" and not closed_once:
            closed_once = True
            await ws.close(4401, "session expired")

    service = Service(DEFAULT_PROFILE, handler)
    tokens = Tokens(await running(service), DEFAULT_PROFILE, GOOD)
    async with StreamSession(tokens, ping_interval=None, **FAST) as s:
        gap = asyncio.Event()
        s.add_callback(lambda e: gap.set(), channels=["_session"])
        await s.subscribe("watchOrders")
        await s.wait_connected(5)
        await service.wait_for(
            lambda got: got.count({"action": "subscribe", "channel": "watchorders"}) == 2
        )
        await asyncio.wait_for(gap.wait(), 5)
        await s.wait_connected(5)
        assert s.error is None and s.subscriptions == ("watchorders",)
        assert s.stats.reconnects == 1


# -- keep-alive and one action at a time ------------------------------------------------------


async def test_keepalive_is_the_profile_action_answered_by_the_profile_reply(
    running: Callable[[Service], Awaitable[str]],
) -> None:
    service = Service(ALT)
    tokens = Tokens(await running(service), ALT, GOOD)
    async with StreamSession(tokens, ping_interval=0.02, **FAST) as s:
        conn = s.stats.connection_id
        await service.wait_for(lambda got: len(got) >= 4)
        assert s.stats.connection_id == conn and s.connected
    assert set(service.actions()) == {"heartbeat"}
    assert all(m == {"action": "heartbeat"} for m in service.received)
    assert service.overlaps == 0


async def test_a_keepalive_failure_never_answers_a_subscribe(
    running: Callable[[Service], Awaitable[str]],
) -> None:
    release = asyncio.Event()

    async def handler(service: Service, ws: ServerConnection, msg: dict[str, Any]) -> None:
        if msg["action"] == "heartbeat":
            # the service does not know the action: answered late, with a failure
            await release.wait()
            await service.answer(ws, msg, {"success": False, "message": "Unknown action"})
        else:
            await service.answer(ws, msg)

    profile = ALT.replace({"stream.refusal_kind": "http"})  # no probe at open
    service = Service(profile, handler)
    tokens = Tokens(await running(service), profile, GOOD)
    async with StreamSession(tokens, ping_interval=0.01, **FAST) as s:
        await service.wait_for(lambda got: got[:1] == [{"action": "heartbeat"}])
        subscribing = asyncio.ensure_future(s.subscribe("watchBalance"))
        await asyncio.sleep(0)  # the subscribe now waits for the keep-alive's answer
        assert not subscribing.done()
        release.set()
        assert await asyncio.wait_for(subscribing, 5) == "watchbalance"
        assert s.subscriptions == ("watchbalance",) and s.connected
    assert service.overlaps == 0  # never two actions outstanding on the connection


async def test_stray_replies_never_answer_a_subscribe(
    running: Callable[[Service], Awaitable[str]],
) -> None:
    async def handler(service: Service, ws: ServerConnection, msg: dict[str, Any]) -> None:
        if msg["action"] == "subscribe" and msg["channel"] == "watchticker":
            # a keep-alive reply, another channel's confirmation and an unsubscribe text
            # of this channel come first: none of them answers this subscribe
            await ws.send(json.dumps({"type": "heartbeat_ack"}))
            await ws.send(json.dumps(confirm({**msg, "channel": "watchtickers", "data": {}}, ALT)))
            await ws.send(json.dumps(confirm({**msg, "action": "unsubscribe"}, ALT)))
        await service.answer(ws, msg)

    service = Service(ALT, handler)
    tokens = Tokens(await running(service), ALT, GOOD)
    async with StreamSession(tokens, ping_interval=None, **FAST) as s:
        assert await s.subscribe("watchTicker", symbol="BTC/BRL") == "watchticker#btcbrl"
        assert s.subscriptions == ("watchticker#btcbrl",)


async def test_an_unanswered_subscribe_times_out_and_its_late_answer_is_no_one_elses(
    running: Callable[[Service], Awaitable[str]],
) -> None:
    async def handler(service: Service, ws: ServerConnection, msg: dict[str, Any]) -> None:
        if msg["action"] == "subscribe" and msg["channel"] == "watchorders":
            return  # never answered on this connection
        await service.answer(ws, msg)

    service = Service(DEFAULT_PROFILE, handler)
    tokens = Tokens(await running(service), DEFAULT_PROFILE, GOOD)
    async with StreamSession(tokens, ping_interval=None, confirm_timeout=0.2, **FAST) as s:
        first = s.stats.connection_id
        with pytest.raises(ConfirmationTimeout):
            await s.subscribe("watchOrders")
        # the connection that may still answer it was cut: the next request is on another
        await s.wait_connected(5)
        assert await s.subscribe("watchBalance") == "watchbalance"
        assert s.stats.connection_id != first
        assert s.subscriptions == ("watchbalance",)


async def test_without_a_keepalive_action_nothing_is_sent_or_awaited(
    running: Callable[[Service], Awaitable[str]],
) -> None:
    profile = DEFAULT_PROFILE.replace({"stream.keepalive_action": ""})
    service = Service(profile)
    tokens = Tokens(await running(service), profile, GOOD)
    seen: list[Event] = []
    rotated = asyncio.Event()

    def on_session(event: Event) -> None:
        seen.append(event)
        if isinstance(event, SessionEvent) and event.detail.startswith("rotated from"):
            rotated.set()

    async with StreamSession(tokens, ping_interval=0.01, rotate_after=0.1, **FAST) as s:
        s.add_callback(on_session, channels=["_session"])
        await s.subscribe("watchOrders")
        await asyncio.wait_for(rotated.wait(), 5)
    assert set(service.actions()) == {"subscribe"}  # no keep-alive, on either connection
    assert "gap" not in kinds(seen) and "disconnected" in kinds(seen)[-1:]


# -- rotation judged from the data, not from a missing keep-alive reply -----------------------


async def test_rotation_without_keepalive_replies_reports_no_gap(
    running: Callable[[Service], Awaitable[str]],
) -> None:
    """The service never answers the keep-alive and keeps publishing: every rotation must
    still finish quickly, with nothing missed and no gap reported."""
    publishing = asyncio.Event()

    async def handler(service: Service, ws: ServerConnection, msg: dict[str, Any]) -> None:
        if msg["action"] == "ping":
            service.unanswered.discard(ws)  # never answered, by design
            return
        await service.answer(ws, msg)
        publishing.set()

    service = Service(DEFAULT_PROFILE, handler)
    tokens = Tokens(await running(service), DEFAULT_PROFILE, GOOD)

    async def publish() -> None:
        await publishing.wait()
        n = 0
        while True:
            n += 1
            ticker = {"symbol": "BTC/BRL", "bid": n, "ask": n, "last": n, "timestamp": n}
            text = json.dumps({"channel": "watchticker", "message": ticker})
            for ws in list(service.open_):
                with contextlib.suppress(ConnectionClosed):
                    await ws.send(text)
            await asyncio.sleep(0.005)

    publisher = asyncio.create_task(publish())
    seen: list[Event] = []
    rotations = asyncio.Event()
    try:
        async with StreamSession(tokens, ping_interval=None, rotate_after=0.2, **FAST) as s:

            def on_event(event: Event) -> None:
                seen.append(event)
                if kinds(seen).count("connected") >= 3:
                    rotations.set()

            s.add_callback(on_event)
            await s.subscribe("watchTicker", symbol="BTC/BRL")
            # ping_timeout is 10 s: two rotations in far less show the drain did not wait
            # for a keep-alive answer that never comes
            await asyncio.wait_for(rotations.wait(), 5)
    finally:
        publisher.cancel()
    assert "gap" not in kinds(seen)
    lasts = sorted({int(e.last) for e in seen if isinstance(e, TickerEvent)})
    assert lasts and lasts == list(range(lasts[0], lasts[-1] + 1))  # nothing missed
