"""A gateway that redirects the WebSocket upgrade (a captive portal, a login page, a proxy),
with tiny servers of our own on 127.0.0.1: the redirect is never followed (REST refuses
them too), nothing reaches the host it points at, and the error says where it pointed
(redacted), at the first connection and on a reconnect; the message built without I/O."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.http11 import Request, Response

from toolkit.errors import AuthenticationError, TransportError
from toolkit.profile import DEFAULT_PROFILE
from toolkit.stream._channels import Backoff
from toolkit.stream._keepalive import redirect_error, status_error
from toolkit.stream._session import StreamSession

TOKEN = "T0KEN-s3cr3t"


class FakeClient:
    """What a session needs of a client: settings, a profile and tokens."""

    def __init__(self, url: str) -> None:
        self.settings = SimpleNamespace(ws_url=url)
        self.profile = DEFAULT_PROFILE

    async def atoken(self) -> str:
        return TOKEN


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _redirect(status: int, location: str | None) -> Response:
    headers = Headers({"Content-Length": "0"})
    if location is not None:
        headers["Location"] = location
    return Response(status, "Redirect", headers, b"")


async def _confirm_then_close(ws: ServerConnection) -> None:
    """Confirms the subscribe, then goes away (the session reconnects)."""
    with contextlib.suppress(ConnectionClosed):
        async for text in ws:
            channel = json.loads(text)["channel"].lower()
            confirmed = f"Successfully subscribed to channel: {channel}"
            await ws.send(json.dumps({"success": True, "message": confirmed}))
            await ws.close(1001, "going away")


class Gateway:
    """A WebSocket server that answers the upgrades from ``redirect_from`` on (counted
    from 1) with ``status`` and ``location``; ``other`` counts what reached the target."""

    def __init__(self, status: int, location: str | None, redirect_from: int = 1) -> None:
        self.status, self.location, self.redirect_from = status, location, redirect_from
        self.upgrades = 0
        self.url = ""
        self.other_url = ""
        self.other_hits = 0

    def _process(self, conn: ServerConnection, request: Request) -> Response | None:
        self.upgrades += 1
        if self.upgrades < self.redirect_from:
            return None
        location = self.location
        if location is not None:
            location = location.replace("{other}", self.other_url)
        return _redirect(self.status, location)

    def _count(self, conn: ServerConnection, request: Request) -> Response | None:
        self.other_hits += 1
        return None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        async with (
            serve(_confirm_then_close, "127.0.0.1", 0, process_request=self._process) as main,
            serve(_confirm_then_close, "127.0.0.1", 0, process_request=self._count) as other,
        ):
            self.url = f"ws://127.0.0.1:{next(iter(main.sockets)).getsockname()[1]}"
            self.other_url = f"ws://127.0.0.1:{next(iter(other.sockets)).getsockname()[1]}"
            yield self


async def _until_it_ends(session: StreamSession) -> None:
    """Read the session until it ends (its error raised); a bounded wait, so a session
    that would reconnect for ever fails the test."""
    async with asyncio.timeout(20):
        async for _ in session:
            pass


async def _open(url: str, **options: Any) -> StreamSession:
    session = StreamSession(FakeClient(url), ping_interval=None, **options)  # type: ignore[arg-type]
    await session.open()
    return session


@pytest.mark.anyio
async def test_a_redirect_to_another_host_is_refused_and_nothing_reaches_it() -> None:
    async with Gateway(302, "{other}/stream").running() as gw:
        with pytest.raises(TransportError) as raised:
            await _open(gw.url)
    assert str(raised.value).startswith(
        f"the gateway redirected the WebSocket upgrade to {gw.other_url}/stream (HTTP 302): "
        "a login page or proxy is in the way"
    )
    assert raised.value.status == 302
    assert gw.other_hits == 0 and gw.upgrades == 1


@pytest.mark.anyio
async def test_a_captive_portal_is_not_blamed_on_the_configured_url() -> None:
    # a portal that says where the user came from: our URL, the token in it, quoted
    portal = f"http://portal.example/login?next={quote(f'ws://gw/?token={TOKEN}', safe='')}"
    async with Gateway(307, portal).running() as gw:
        with pytest.raises(TransportError) as raised:
            await _open(gw.url)
    text = str(raised.value)
    assert "invalid WebSocket URL" not in text
    assert text.startswith(
        "the gateway redirected the WebSocket upgrade to http://portal.example/login (its "
        "query not shown) (HTTP 307): a login page or proxy is in the way"
    )
    assert "s3cr3t" not in text


@pytest.mark.anyio
async def test_a_relative_redirect_keeping_the_token_is_refused_and_redacted() -> None:
    async with Gateway(301, f"/?token={TOKEN}&again=1").running() as gw:
        with pytest.raises(TransportError) as raised:
            await _open(gw.url)
    text = str(raised.value)
    assert f"upgrade to {gw.url}/ (its query not shown) (HTTP 301)" in text
    assert TOKEN not in text and gw.upgrades == 1


@pytest.mark.anyio
async def test_a_redirect_on_reconnect_ends_the_session_with_the_same_error() -> None:
    async with Gateway(302, "http://portal.example/login", redirect_from=2).running() as gw:
        backoff = Backoff(initial=0.0, maximum=0.0)
        async with StreamSession(FakeClient(gw.url), ping_interval=None, backoff=backoff) as s:  # type: ignore[arg-type]
            await s.subscribe("watchOrders")
            with pytest.raises(TransportError) as raised:
                await _until_it_ends(s)
    assert "redirected the WebSocket upgrade to http://portal.example/login" in str(raised.value)
    assert gw.upgrades == 2  # not retried: the portal stays in the way


# --------------------------------------------------------------- the message, no I/O


def _status(status: int, location: str | None) -> InvalidStatus:
    return InvalidStatus(_redirect(status, location))


def test_a_redirect_without_location_still_says_it_is_one() -> None:
    error = redirect_error(_status(302, None), "ws://gw.example/?token=abc")
    assert error is not None
    assert str(error).startswith(
        "the gateway redirected the WebSocket upgrade to nowhere (no Location) (HTTP 302)"
    )
    assert "token=***" in str(error) and "abc" not in str(error)


def test_credentials_in_the_location_are_not_shown() -> None:
    location = "https://user:pa55@sso.example/login#token=abcd"
    error = redirect_error(_status(303, location), "wss://gw.example/?token=abcd")
    assert error is not None
    assert "to https://sso.example/login (its query not shown) (HTTP 303)" in str(error)
    assert "pa55" not in str(error) and "abcd" not in str(error)
    plain = redirect_error(_status(308, "wss://gw2.example/stream"), "wss://gw.example/")
    assert "to wss://gw2.example/stream (HTTP 308)" in str(plain)


def test_other_statuses_keep_their_meaning() -> None:
    assert redirect_error(_status(200, None), "ws://gw.example/") is None
    refused = status_error(_status(401, None), "ws://gw.example/?token=x", refused=True)
    assert isinstance(refused, AuthenticationError)
    other = status_error(_status(502, None), "ws://gw.example/?token=x", refused=False)
    shown = "ws://gw.example/?token=***"
    assert str(other) == f"the gateway refused the WebSocket connection to {shown} (HTTP 502)"


def test_a_huge_location_is_cut() -> None:
    error = redirect_error(_status(302, "http://x.example/" + "a" * 5000), "ws://gw.example/")
    assert error is not None and "a" * 400 not in str(error) and "... (HTTP 302)" in str(error)
    odd = redirect_error(_status(302, "http://[::1/login"), "ws://gw.example/")
    assert "upgrade to <unparseable url> (HTTP 302)" in str(odd)
