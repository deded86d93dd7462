"""The doctor's WebSocket connection that outlives a close: requests in order (each
answered by the next non-data message), first payloads kept by channel, a close by the
service recorded (code, reason, age, our silence before it) and followed by a new
connection with the same subscriptions, so what was seen before a close is never lost;
keep-alives while it waits once the action is known; and what the closes tell of the
service's idle limit and maximum duration (spec 8: values not shown; read with
``toolkit.stream._limits.read_limits``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from toolkit._aio import wait_for
from toolkit.stream._limits import MIN_SILENCE_S, Close

#: new connections after closes by the service, at most, in one doctor run
MAX_REOPENS = 4


class _Conn:
    """One doctor connection, replaced after a close by the service (at most
    ``MAX_REOPENS`` times) with its subscriptions sent again."""

    def __init__(
        self,
        ws: ClientConnection,
        timeout: float,
        reopen: Callable[[], Awaitable[ClientConnection]] | None = None,
        on_close: Callable[[ConnectionClosed], None] | None = None,
    ) -> None:
        self.ws, self.timeout = ws, timeout
        self._reopen_ws, self._on_close = reopen, on_close
        self.first: dict[str, Any] = {}
        self.data: list[dict[str, Any]] = []
        self.closes: list[Close] = []
        self.subscriptions: dict[str, dict[str, Any]] = {}
        self.keepalive: dict[str, Any] | None = None
        self.keepalive_every: float | None = None
        loop = asyncio.get_running_loop()
        self.opened_at = self.last_sent = loop.time()

    # -- the wire ----------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))
        self.last_sent = asyncio.get_running_loop().time()
        action, channel = message.get("action"), message.get("channel")
        if action == "subscribe" and isinstance(channel, str):
            self.subscriptions[channel.lower()] = message
        elif action == "unsubscribe" and isinstance(channel, str):
            self.subscriptions.pop(channel.lower(), None)

    async def _next(self, timeout: float) -> dict[str, Any] | None:
        try:
            raw = await wait_for(self.ws.recv(), timeout)
        except TimeoutError:
            return None
        try:
            msg = json.loads(raw)
        except ValueError:
            return {"_text": str(raw)[:200]}
        return msg if isinstance(msg, dict) else {"_value": msg}

    def _keep(self, msg: dict[str, Any]) -> bool:
        if "channel" in msg and "message" in msg and "success" not in msg:
            self.first.setdefault(str(msg["channel"]).lower(), msg["message"])
            self.data.append(msg)
            return True
        return False

    async def _closed(self, exc: ConnectionClosed) -> None:
        """Record the service's close and carry on on a new connection with the same
        subscriptions; re-raise when it cannot (our own close, too many closes)."""
        if self._on_close is not None:
            self._on_close(exc)  # raises for what is no close by the service
        if self._reopen_ws is None or len(self.closes) >= MAX_REOPENS:
            raise exc
        now = asyncio.get_running_loop().time()
        self.closes.append(
            Close(
                exc.rcvd.code if exc.rcvd else None,
                exc.rcvd.reason if exc.rcvd else "",
                now - self.opened_at,
                now - self.last_sent,
                self.keepalive_every is not None,
            )
        )
        last = self.closes[-1]
        if self.keepalive is not None and not last.kept_alive and last.silence >= MIN_SILENCE_S:
            # closed while we were silent: keep the next one alive well inside that silence
            self.keepalive_every = max(last.silence / 2, 0.2)
        self.ws = await self._reopen_ws()
        self.opened_at = self.last_sent = asyncio.get_running_loop().time()
        for message in list(self.subscriptions.values()):
            await self._ask_once(message)

    # -- requests and waits --------------------------------------------------------------

    async def _ask_once(self, request: dict[str, Any]) -> dict[str, Any] | None:
        await self._send(request)
        loop = asyncio.get_running_loop()
        end = loop.time() + self.timeout
        while (left := end - loop.time()) > 0:
            msg = await self._next(left)
            if msg is None:
                return None
            if not self._keep(msg):
                return msg
        return None

    async def ask(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Send ``request`` and return the next message that is not data (None: none
        within the timeout). A close by the service on the way: a new connection, and
        the request sent once more on it."""
        for _ in range(2):
            try:
                return await self._ask_once(request)
            except ConnectionClosed as exc:
                await self._closed(exc)
        return None

    async def wait_data(self, channels: list[str], timeout: float) -> None:
        """Until a payload of every one of ``channels`` arrived or ``timeout`` passed,
        sending the keep-alive when one is due; a close: a new connection, and on."""
        await self.hold(timeout, until=lambda: all(c in self.first for c in channels))

    async def hold(self, timeout: float, until: Callable[[], bool] = lambda: False) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while not until() and (left := end - loop.time()) > 0:
            every = self.keepalive_every if self.keepalive else None
            due = self.last_sent + every if every else end
            try:
                if loop.time() >= due and self.keepalive is not None:
                    await self._send(self.keepalive)  # its reply is read as a non-data message
                    continue
                msg = await self._next(max(min(left, due - loop.time()), 0.0))
                if msg is not None:
                    self._keep(msg)
            except ConnectionClosed as exc:
                await self._closed(exc)
