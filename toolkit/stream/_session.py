"""The WebSocket stream session behind ``client.stream()``: subscriptions that wait for
their confirmation, typed events, and a connection that stays up (ping, rotation, reconnect).

The channel rules live in ``toolkit.stream._channels`` (sans-I/O); this module only moves messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from types import TracebackType
from typing import Any
from urllib.parse import quote

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    InvalidHandshake,
    InvalidMessage,
    InvalidStatus,
    InvalidURI,
)

from toolkit.errors import (
    AuthenticationError,
    ToolkitError,
    TransportError,
    redact_url,
)
from toolkit.stream._channels import (
    Action,
    Backoff,
    Confirmation,
    PendingRequest,
    classify_reply,
    subscription_request,
    validate_subscription,
)
from toolkit.stream._events import Event, SessionEvent, SessionKind, event_from_message
from toolkit.stream._ports import TokenSource

__all__ = [
    "ConfirmationTimeout",
    "RawCallback",
    "StreamClosed",
    "StreamSession",
    "StreamStats",
    "default_retry",
]

_log = logging.getLogger("toolkit.stream")
_TOKEN_IN_TEXT = re.compile(r"(token=)[^&\s\"']*", re.IGNORECASE)

#: the service closes a connection after 2 h (PRODUCT.md); we rotate this long before
DEFAULT_ROTATE_AFTER_S = 2 * 3600 - 5 * 60
#: the idle limit is 10 min; a ping every minute keeps well clear of it
DEFAULT_PING_INTERVAL_S = 60.0

#: ``fn(text, received_at_ns, connection_id, seq)``: one data message as the server sent it
RawCallback = Callable[[str, int, str, int], Any]
#: how every data message of the service starts (compact JSON, ``channel`` first): such a
#: message has a top-level ``channel``, so it is never a reply (``classify_reply``) and the
#: raw path can hand it on without decoding it. Anything else takes the decoding path.
_DATA_PREFIX = '{"channel":'
#: put in the main queue when the session closes, to wake a waiting ``async for``
_WAKE: Any = object()


class ConfirmationTimeout(TransportError, TimeoutError):
    """The service did not confirm a subscribe/unsubscribe (or answer a ping) in time."""


class StreamClosed(ToolkitError):
    """The session is closed (by the caller, or after an error that is not retried)."""


class _State(Enum):
    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


def default_retry(exc: BaseException) -> bool:
    """Whether a lost or failed connection is worth another attempt (the default
    ``retry_on``): drops, network errors, timeouts and 429/5xx refusals are; a 401 is
    handled apart (one forced signin), and anything else, e.g. a permission refused on
    resubscribe, is not."""
    if isinstance(exc, (ConnectionClosed, OSError, EOFError, TimeoutError, InvalidMessage)):
        return True
    if isinstance(exc, InvalidStatus):
        return exc.response.status_code in (429, 500, 502, 503, 504)
    return isinstance(exc, TransportError)


@dataclass(frozen=True, slots=True)
class StreamStats:
    """Counters of a session: data messages received, events dropped by full queues,
    reconnects done, and the id of the current connection."""

    received: int
    dropped: int
    reconnects: int
    connection_id: str


class _RedactingLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """websockets logs the request line ``GET /?token=...``; the token must never reach
    a log record, so messages are formatted and scrubbed before they are handed on."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if not self.isEnabledFor(level):
            return
        text = str(msg) % args if args else str(msg)
        kwargs.setdefault("stacklevel", 2)
        self.logger.log(level, _TOKEN_IN_TEXT.sub(r"\1***", text), **kwargs)


@dataclass(eq=False)
class _Connection:
    ws: ClientConnection
    id: str
    opened_at: float  # loop time
    seq: int = 0
    pending: PendingRequest | None = None
    waiter: asyncio.Future[Confirmation] | None = None
    #: one future per ping sent and not answered yet, oldest first: the service answers
    #: the messages of a connection in order, so each pong resolves the oldest
    pings: deque[asyncio.Future[Confirmation]] = field(default_factory=deque)
    #: serializes subscribe/unsubscribe on this connection: confirmations carry no id
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    reader: asyncio.Task[None] | None = None
    pinger: asyncio.Task[None] | None = None
    closed_by_us: bool = False
    #: when the reader saw the connection end (ns, UTC)
    ended_ns: int | None = None

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq


class StreamSession:
    """An ``async with`` WebSocket session on the service's channels.

    ``subscribe``/``unsubscribe`` validate the channel before sending, then wait for the
    service's confirmation (``confirm_timeout`` seconds, else ConfirmationTimeout); a
    refusal raises PermissionDenied (naming the permission the channel needs) or
    InvalidRequest. Events arrive in order through ``async for event in session``,
    through callbacks (``add_callback``) and through bounded per-channel queues
    (``queue``); a full queue drops the newest event and counts it in ``stats.dropped``.
    ``queue_size=0`` means no main queue (``async for`` raises; nothing is counted as
    dropped), for consumers that only use callbacks or per-channel queues.

    The raw path (``add_raw_callback``) hands on every data message as the text the
    server sent, before any typed event is built; typed events are only built when
    something reads them (the main queue, an unfiltered callback, or a callback or queue
    of that channel), so a session fed only to raw callbacks does not decode messages
    that start like the service's data messages (``{"channel":``).

    The connection stays up: a ``{"action":"ping"}`` every ``ping_interval`` seconds
    (no pong within ``ping_timeout`` cuts the connection), a make-before-break rotation
    after ``rotate_after`` seconds, and, when ``reconnect`` is true, reconnection with
    capped exponential backoff and jitter after a drop, a server close or a network
    error, each attempt with a token from ``client.atoken()`` (a 401 forces one new
    signin). Every subscription is restored and confirmed, then SessionEvents
    ``resubscribed`` and ``gap`` (from when the drop was noticed to when the
    subscriptions were back) are emitted. ``retry_on(exc)`` decides which errors are
    retried (default: ``default_retry``); one that is not ends the session, and
    ``async for`` raises it. ``sleep`` is how backoff waits (tests pass a fast one).

    The first connection is made by ``__aenter__``; its failure raises at once
    (AuthenticationError on a 401 refusal, TransportError otherwise). Closing the session
    cancels the background tasks and ends ``async for``; a closed session cannot reopen.
    """

    def __init__(
        self,
        client: TokenSource,
        *,
        reconnect: bool = True,
        queue_size: int = 10_000,
        ping_interval: float | None = DEFAULT_PING_INTERVAL_S,
        ping_timeout: float = 10.0,
        rotate_after: float | None = DEFAULT_ROTATE_AFTER_S,
        confirm_timeout: float = 10.0,
        open_timeout: float = 10.0,
        backoff: Backoff | None = None,
        retry_on: Callable[[BaseException], bool] | None = None,
        max_attempts: int | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        ws_url: str | None = None,
    ) -> None:
        if queue_size < 0:
            raise ValueError("queue_size must be >= 0 (0: no main queue)")
        self._client = client
        self._reconnect = reconnect
        self._ping_interval = ping_interval
        self._ping_timeout = ping_timeout
        self._rotate_after = rotate_after
        self._confirm_timeout = confirm_timeout
        self._open_timeout = open_timeout
        self._backoff = backoff or Backoff()
        self._retry_on = retry_on or default_retry
        self._max_attempts = max_attempts
        self._sleep = sleep or asyncio.sleep
        self._ws_url = (ws_url or client.settings.ws_url).rstrip("/")
        self._state = _State.UNOPENED
        self._conn: _Connection | None = None
        self._connections = 0
        self._desired: dict[str, tuple[str, dict[str, Any]]] = {}
        self._user_lock = asyncio.Lock()
        self._ready = asyncio.Event()
        self._closed = asyncio.Event()
        self._error: BaseException | None = None
        # Any: the events, and _WAKE once closed
        self._main: asyncio.Queue[Any] | None = asyncio.Queue(queue_size) if queue_size else None
        self._queues: dict[str, list[asyncio.Queue[Event]]] = {}
        self._callbacks: list[tuple[Callable[[Event], Any], frozenset[str] | None]] = []
        self._raw_callbacks: list[RawCallback] = []
        #: data channels with a typed consumer of their own (queue or filtered callback)
        self._typed_channels: frozenset[str] = frozenset()
        #: every data message needs its typed event (main queue or unfiltered callback)
        self._typed_all = self._main is not None
        self._supervisor: asyncio.Task[None] | None = None
        self._received = 0
        self._dropped = 0
        self._reconnects = 0
        self._logger = _RedactingLogger(logging.getLogger("toolkit.stream.ws"), {})

    # -- public surface ----------------------------------------------------------------

    def __repr__(self) -> str:
        return (
            f"<StreamSession {self._state.value} url={redact_url(self._ws_url)!r} "
            f"subscriptions={list(self._desired)!r}>"
        )

    @property
    def subscriptions(self) -> tuple[str, ...]:
        """Confirmed subscriptions as the service names them (``watchticker#btcbrl``)."""
        return tuple(self._desired)

    @property
    def stats(self) -> StreamStats:
        conn_id = self._conn.id if self._conn else ""
        return StreamStats(self._received, self._dropped, self._reconnects, conn_id)

    @property
    def closed(self) -> bool:
        return self._state is _State.CLOSED

    @property
    def connected(self) -> bool:
        """True while a connection is up with every subscription restored."""
        return self._ready.is_set() and not self.closed

    @property
    def error(self) -> BaseException | None:
        """The error that ended the session, if one did."""
        return self._error

    async def __aenter__(self) -> StreamSession:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Make the first connection and start the background tasks."""
        if self._state is not _State.UNOPENED:
            raise StreamClosed("a stream session cannot be reopened; create a new one")
        self._state = _State.OPEN
        try:
            conn = await self._open_translated()
        except BaseException:
            self._state = _State.CLOSED
            self._closed.set()
            raise
        self._install(conn)
        self._ready.set()
        self._emit_session(conn, "connected", f"connected to {redact_url(self._url('x'))}")
        self._supervisor = asyncio.create_task(self._supervise(), name="toolkit-stream")

    async def aclose(self) -> None:
        """Close the connection and stop every background task; idempotent."""
        if self._state is _State.CLOSED:
            return
        self._state = _State.CLOSED
        self._ready.clear()
        supervisor = self._supervisor
        while supervisor is not None and not supervisor.done():
            # again if a cancel was swallowed on the way (asyncio.wait_for in 3.11 can)
            supervisor.cancel()
            await asyncio.wait((supervisor,), timeout=1.0)
        if supervisor is not None and not supervisor.cancelled():
            supervisor.exception()  # retrieved: _fail already recorded it
        if self._conn is not None:
            await self._shutdown(self._conn, graceful=True)
            # tells consumers fed by callbacks (e.g. OrderBook.run) that nothing follows
            self._emit_session(self._conn, "disconnected", "session closed by the caller")
        self._set_closed()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Wait until a connection is up with its subscriptions restored."""
        await asyncio.wait_for(self._ready.wait(), timeout)

    async def subscribe(self, channel: str, **data: Any) -> str:
        """Subscribe to ``channel`` and wait for the confirmation; returns its key.

        Validated before sending (InvalidRequest, nothing sent). Raises PermissionDenied
        when the API key lacks the channel's permission, ConfirmationTimeout when no
        confirmation arrives in ``confirm_timeout`` seconds.
        """
        name, clean = validate_subscription(channel, data)
        key = await self._request("subscribe", name, clean)
        if self._conn is not None:
            self._emit_session(self._conn, "subscribed", key)
        return key

    async def unsubscribe(self, channel: str, **data: Any) -> str:
        """Unsubscribe and wait for the confirmation; returns the key."""
        name, clean = validate_subscription(channel, data)
        key = await self._request("unsubscribe", name, clean)
        if self._conn is not None:
            self._emit_session(self._conn, "unsubscribed", key)
        return key

    def add_callback(
        self, fn: Callable[[Event], Any], channels: Iterable[str] | None = None
    ) -> Callable[[], None]:
        """Call ``fn(event)`` for every event (or only for the events of ``channels``,
        any case, ``"_session"`` for session events), in order, on the event loop; returns
        a function that removes it. An exception in ``fn`` is logged, never propagated."""
        chans = None if channels is None else frozenset(c.strip().lower() for c in channels)
        entry = (fn, chans)
        self._callbacks.append(entry)
        self._update_consumers()

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(entry)
            self._update_consumers()

        return remove

    def add_raw_callback(self, fn: RawCallback) -> Callable[[], None]:
        """Call ``fn(text, received_at_ns, connection_id, seq)`` for every data message,
        with the text exactly as the server sent it (a binary frame is decoded as UTF-8),
        in order, on the event loop, before the typed event (if any) is dispatched. Session
        events do not go through it (use ``add_callback(fn, channels=["_session"])``).
        Messages starting with ``{"channel":`` reach it undecoded: one that is not valid
        JSON is passed on too. Returns a function that removes it; an exception in ``fn``
        is logged, never propagated."""
        self._raw_callbacks.append(fn)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._raw_callbacks.remove(fn)

        return remove

    def queue(self, channel: str, maxsize: int = 10_000) -> asyncio.Queue[Event]:
        """A bounded queue fed with the events of ``channel`` (any case; ``"_session"``
        for session events). When it is full, new events are dropped and counted."""
        name = channel.strip().lower()
        q: asyncio.Queue[Event] = asyncio.Queue(maxsize)
        self._queues.setdefault(name, []).append(q)
        self._update_consumers()
        return q

    def _update_consumers(self) -> None:
        """Which data messages need a typed event (the raw path skips the others)."""
        named = set(self._queues)
        for _fn, chans in self._callbacks:
            if chans is not None:
                named |= chans
        named.discard("_session")
        self._typed_channels = frozenset(named)
        self._typed_all = self._main is not None or any(c is None for _f, c in self._callbacks)

    def __aiter__(self) -> StreamSession:
        if self._main is None:
            raise RuntimeError(
                "this stream session has no main queue (queue_size=0): read it with "
                "add_callback(), add_raw_callback() or queue(channel)"
            )
        return self

    async def __anext__(self) -> Event:
        main = self._main
        if main is None:
            self.__aiter__()  # raises the explanation
            raise AssertionError  # pragma: no cover
        while True:
            try:
                item = main.get_nowait()
            except asyncio.QueueEmpty:
                if self._closed.is_set() or self._state is _State.CLOSED:
                    self._end_iteration()
                # one future per wait: closing the session puts _WAKE in the queue
                item = await main.get()
            if item is _WAKE:
                if self._closed.is_set():
                    # pass it on, so every consumer waiting on the queue wakes up too
                    with contextlib.suppress(asyncio.QueueFull):
                        main.put_nowait(_WAKE)
                    self._end_iteration()
                continue
            return item  # type: ignore[no-any-return]

    def _end_iteration(self) -> None:
        if self._error is not None:
            raise self._error
        raise StopAsyncIteration

    def _set_closed(self) -> None:
        """Mark the session closed and wake a consumer waiting in ``async for``."""
        self._closed.set()
        if self._main is not None:
            with contextlib.suppress(asyncio.QueueFull):
                self._main.put_nowait(_WAKE)

    # -- requests ----------------------------------------------------------------------

    async def _request(self, action: Action, channel: str, data: dict[str, Any]) -> str:
        if self._state is not _State.OPEN:
            raise StreamClosed(f"cannot {action}: the stream session is {self._state.value}")
        deadline = asyncio.get_running_loop().time() + self._confirm_timeout
        async with self._user_lock:
            while True:
                remaining = deadline - asyncio.get_running_loop().time()
                try:
                    if not self._ready.is_set():
                        await asyncio.wait_for(self._wait_ready(), max(remaining, 0.0))
                except TimeoutError:
                    raise ConfirmationTimeout(
                        f"{action} {channel}: no connection within {self._confirm_timeout} s"
                    ) from None
                conn = self._conn
                assert conn is not None
                try:
                    return await self._exchange(
                        conn, PendingRequest(action, channel, data), remaining
                    )
                except ConnectionClosed as exc:
                    # the connection went away mid-request; the next one gets it again
                    if not self._reconnect:
                        raise TransportError(
                            f"{action} {channel}: the connection closed before the "
                            f"confirmation ({_describe_end(exc)})"
                        ) from exc
                    self._ready.clear()

    async def _wait_ready(self) -> None:
        while not self._ready.is_set():
            if self._state is not _State.OPEN:
                raise StreamClosed("the stream session is closed") from self._error
            waiter = asyncio.ensure_future(self._ready.wait())
            closer = asyncio.ensure_future(self._closed.wait())
            try:
                await asyncio.wait((waiter, closer), return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                closer.cancel()

    async def _exchange(self, conn: _Connection, request: PendingRequest, timeout: float) -> str:
        """Send one subscribe/unsubscribe on ``conn`` and wait for its confirmation."""
        async with conn.lock:
            loop = asyncio.get_running_loop()
            conn.pending = request
            conn.waiter = loop.create_future()
            try:
                await conn.ws.send(
                    json.dumps(subscription_request(request.action, request.channel, request.data))
                )
                try:
                    reply = await asyncio.wait_for(asyncio.shield(conn.waiter), max(timeout, 0.0))
                except TimeoutError:
                    raise ConfirmationTimeout(
                        f"no confirmation of {request.action} {request.key} within "
                        f"{self._confirm_timeout} s"
                    ) from None
            finally:
                conn.pending = None
                conn.waiter = None
            if not reply.success:
                raise request.error(reply)
            return request.key

    # -- connection lifecycle ----------------------------------------------------------

    def _url(self, token: str) -> str:
        return f"{self._ws_url}/?token={quote(token, safe='')}"

    async def _token(self, force: bool) -> str:
        if force:
            # the client keeps a token until it expires; one the gateway refused must go
            auth = getattr(self._client, "auth", None)
            invalidate = getattr(auth, "invalidate", None)
            if callable(invalidate):
                invalidate()
        return await self._client.atoken()

    async def _open(self, force_token: bool = False) -> _Connection:
        """One connection attempt, its reader started; raises the low-level error (for
        ``retry_on``), except InvalidURI whose text would carry the token."""
        token = await self._token(force_token)
        try:
            ws = await connect(
                self._url(token),
                open_timeout=self._open_timeout,
                logger=self._logger,
                max_queue=64,
            )
        except InvalidURI:
            raise ToolkitError(f"invalid WebSocket URL {redact_url(self._url('x'))}") from None
        self._connections += 1
        conn = _Connection(ws, f"c{self._connections}-{secrets.token_hex(3)}", 0.0)
        conn.opened_at = asyncio.get_running_loop().time()
        conn.reader = asyncio.create_task(self._read(conn), name=f"toolkit-stream-read-{conn.id}")
        return conn

    async def _open_translated(self) -> _Connection:
        """``_open`` with the errors a caller sees: AuthenticationError on a refused token
        (after one forced signin), TransportError for the network."""
        shown = redact_url(self._url("x"))
        force = False
        while True:
            try:
                return await self._open(force)
            except InvalidStatus as exc:
                if exc.response.status_code == 401 and not force:
                    force = True
                    continue
                raise self._status_error(exc) from None
            except (OSError, TimeoutError, EOFError, InvalidHandshake) as exc:
                raise TransportError(
                    f"could not open the WebSocket connection to {shown}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc

    def _status_error(self, exc: InvalidStatus) -> ToolkitError:
        shown = redact_url(self._url("x"))
        status = exc.response.status_code
        if status == 401:
            return AuthenticationError(
                f"the gateway refused the WebSocket connection to {shown} (HTTP 401): the "
                "operational token was missing or invalid, even after a fresh signin",
                status=401,
            )
        return TransportError(
            f"the gateway refused the WebSocket connection to {shown} (HTTP {status})",
            status=status,
        )

    def _install(self, conn: _Connection) -> None:
        """Make ``conn`` the session's connection and keep it alive with pings."""
        self._conn = conn
        if self._ping_interval and conn.pinger is None:
            conn.pinger = asyncio.create_task(
                self._ping(conn), name=f"toolkit-stream-ping-{conn.id}"
            )

    async def _shutdown(self, conn: _Connection, graceful: bool) -> None:
        conn.closed_by_us = True
        tasks = [t for t in (conn.pinger, conn.reader) if t is not None]
        if graceful:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.ws.close(), 2.0)
        else:
            conn.ws.transport.abort()
        current = asyncio.current_task()
        for task in tasks:
            if task is not current:
                task.cancel()
                # a cancel of ours that arrives during the await must go on (else a
                # supervisor cancelled mid-rotation would keep running); one that was
                # already being handled must not stop the cleanup, as when the task that
                # owns the session is cancelled and ``async with`` closes it
                requests = current.cancelling() if current is not None else 0
                try:
                    await task
                except asyncio.CancelledError:
                    if current is not None and current.cancelling() > requests:
                        raise
                except Exception:
                    pass  # the connection's end: what it was is reported elsewhere

    async def _restore(self, conn: _Connection) -> None:
        """Subscribe ``conn`` to everything the session holds, each confirmed."""
        for name, data in list(self._desired.values()):
            request = PendingRequest("subscribe", name, data)
            await self._exchange(conn, request, self._confirm_timeout)

    async def _read(self, conn: _Connection) -> None:
        """Read every message of ``conn`` until it ends (the ConnectionClosed is the
        task's exception, for the supervisor); pending waiters fail with it."""
        end: BaseException = ConnectionClosed(None, None)
        recv = conn.ws.recv
        conn_id = conn.id
        clock = time.time_ns
        try:
            while True:
                text = await recv()
                received = clock()
                if (
                    not self._typed_all
                    and not self._typed_channels
                    and text.__class__ is str
                    and text.startswith(_DATA_PREFIX)
                ):
                    # the raw path: a data message nobody wants typed is not decoded here
                    conn.seq += 1
                    self._received += 1
                    for raw_fn in self._raw_callbacks:
                        try:
                            raw_fn(text, received, conn_id, conn.seq)
                        except Exception:
                            _log.exception("a raw stream callback failed")
                    continue
                try:
                    msg = json.loads(text)
                except ValueError:
                    _log.warning("ignored a message that is not JSON on %s", conn_id)
                    continue
                if not isinstance(msg, dict):
                    continue
                reply = classify_reply(msg)
                if reply is not None:
                    self._on_reply(conn, reply)
                    continue
                seq = conn.next_seq()
                if "channel" not in msg:
                    _log.warning("ignored a data message without a channel on %s", conn_id)
                    continue
                self._received += 1
                if self._raw_callbacks:
                    self._dispatch_raw(text, received, conn_id, seq)
                if not self._typed_all and (
                    str(msg["channel"]).lower() not in self._typed_channels
                ):
                    continue
                try:
                    event = event_from_message(
                        msg, received_at_ns=received, connection_id=conn_id, seq=seq
                    )
                except (ValueError, TypeError) as err:
                    _log.warning("ignored a malformed data message on %s: %s", conn_id, err)
                    continue
                self._dispatch(event)
        except ConnectionClosed as err:
            end = err
            raise
        finally:
            conn.ended_ns = time.time_ns()
            for fut in (conn.waiter, *conn.pings):
                if fut is not None and not fut.done():
                    fut.set_exception(end)
                    fut.exception()  # retrieved here: the waiter may have given up

    def _on_reply(self, conn: _Connection, reply: Confirmation) -> None:
        if reply.kind == "pong":
            if conn.pings:
                fut = conn.pings.popleft()
                if not fut.done():
                    fut.set_result(reply)
            return
        pending, waiter = conn.pending, conn.waiter
        if (
            pending is not None
            and waiter is not None
            and not waiter.done()
            and pending.matches(reply)
        ):
            if reply.success:
                # recorded here, in the reader, so a drop right after the confirmation
                # cannot slip between it and the restore of the next connection
                if pending.action == "subscribe":
                    self._desired[pending.key] = (pending.channel, pending.data)
                else:
                    self._desired.pop(pending.key, None)
            waiter.set_result(reply)
            return
        # e.g. the late answer to a request that already timed out
        _log.debug("ignored an unmatched confirmation on %s: %s", conn.id, reply.message)

    async def _ping_once(self, conn: _Connection) -> None:
        """Send one ping on ``conn`` and wait (``ping_timeout``) for its pong. The service
        answers a connection's messages in order and sends what it published before a
        message ahead of the answer, so once the pong is read, so is every data message
        published before the ping arrived. Raises TimeoutError or ConnectionClosed."""
        fut: asyncio.Future[Confirmation] = asyncio.get_running_loop().create_future()
        # queued in the same step as the write (``send`` writes before its first await),
        # so the futures stay in the order of the pings on the wire
        conn.pings.append(fut)
        await conn.ws.send(json.dumps({"action": "ping"}))
        await asyncio.wait_for(asyncio.shield(fut), self._ping_timeout)

    async def _ping(self, conn: _Connection) -> None:
        """Keep ``conn`` inside the idle limit; a missing pong means a dead connection."""
        assert self._ping_interval
        while True:
            await asyncio.sleep(self._ping_interval)
            try:
                await self._ping_once(conn)
            except TimeoutError:
                _log.warning(
                    "no pong on %s within %s s: cutting the connection", conn.id, self._ping_timeout
                )
                conn.ws.transport.abort()
                return
            except ConnectionClosed:
                return

    async def _drain(self, conn: _Connection) -> str | None:
        """Wait until everything the service published on ``conn`` before now has been
        read (a ping answered: see ``_ping_once``); None when it has, else why not.

        Rotation needs it: the new connection only gets what is published after its
        subscriptions are confirmed, and closing the old one at once would lose what the
        service published just before and had not sent on the old one yet."""
        reader = conn.reader
        if reader is None or reader.done():
            return "connection ended"
        try:
            await self._ping_once(conn)
        except TimeoutError:
            return f"no answer to a ping within {self._ping_timeout} s"
        except ConnectionClosed:
            return "connection ended"
        return None

    async def _supervise(self) -> None:
        """Watch the current connection: rotate it before the max duration, replace it
        when it ends; end the session on an error ``retry_on`` refuses."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                conn = self._conn
                assert conn is not None and conn.reader is not None
                timeout = None
                if self._rotate_after is not None:
                    timeout = max(0.0, conn.opened_at + self._rotate_after - loop.time())
                done, _ = await asyncio.wait((conn.reader,), timeout=timeout)
                if not done:
                    await self._rotate(conn)
                    continue
                exc = conn.reader.exception() if not conn.reader.cancelled() else None
                noticed = time.time_ns()
                reason = _describe_end(exc)
                self._ready.clear()
                await self._shutdown(conn, graceful=False)
                self._emit_session(conn, "disconnected", reason)
                _log.info("stream connection %s ended: %s", conn.id, reason)
                if not self._reconnect or not self._retry_on(exc or ConnectionClosed(None, None)):
                    raise exc or StreamClosed(f"the connection ended ({reason})")
                new = await self._reconnect_loop()
                self._reconnects += 1
                self._install(new)
                end = time.time_ns()
                self._ready.set()
                self._emit_session(new, "connected", f"reconnected after: {reason}")
                self._emit_session(new, "resubscribed", ",".join(self._desired))
                self._emit_session(new, "gap", reason, gap_start_ns=noticed, gap_end_ns=end)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self._fail(exc)

    async def _rotate(self, old: _Connection) -> None:
        """Make-before-break: a new connection with every subscription confirmed takes
        over, the old one is drained (a ping answered) and only then closed, so nothing is
        missed (duplicates may occur); when the old one ends or goes silent first, the gap
        is reported. Holds the user lock so no subscribe lands on the old connection
        meanwhile."""
        async with self._user_lock:
            try:
                new = await self._open_translated()
                try:
                    await self._restore(new)
                except BaseException:
                    await self._shutdown(new, graceful=False)
                    raise
            except (ToolkitError, ConnectionClosed, OSError) as exc:
                _log.warning("rotation failed (%s); keeping the current connection", exc)
                # try again in a few seconds rather than spinning
                old.opened_at = asyncio.get_running_loop().time() - (self._rotate_after or 0) + 5
                return
            self._install(new)
            # break only once the old connection delivered what the new one cannot have
            not_drained = await self._drain(old)
        self._emit_session(new, "connected", f"rotated from {old.id}")
        if not_drained is None:
            await self._shutdown(old, graceful=True)
            return
        # the old connection ended (or went silent) before it delivered everything
        # published before the new one took over: data may be missing
        noticed = time.time_ns()
        # set by the reader, in the step that ends it, when the connection ended by itself
        ended_ns = old.ended_ns
        reader = old.reader
        await self._shutdown(old, graceful=False)
        if ended_ns is not None and reader is not None and reader.done():
            reason = _describe_end(None if reader.cancelled() else reader.exception())
            gap_start = ended_ns
        else:
            reason = not_drained
            gap_start = noticed
        self._emit_session(old, "disconnected", reason)
        self._emit_session(new, "resubscribed", ",".join(self._desired))
        self._emit_session(new, "gap", reason, gap_start_ns=gap_start, gap_end_ns=time.time_ns())

    async def _reconnect_loop(self) -> _Connection:
        """Connect again, with backoff, until a connection has every subscription back."""
        backoff = self._backoff
        backoff.reset()
        attempts = 0
        forced = False
        while True:
            await self._sleep(backoff.next_delay())
            attempts += 1
            conn: _Connection | None = None
            try:
                conn = await self._open(force_token=forced)
                await self._restore(conn)
                return conn
            except InvalidStatus as exc:
                if exc.response.status_code == 401:
                    if forced:
                        raise self._status_error(exc) from None
                    forced = True  # a new signin, then straight back
                    backoff.reset()
                    continue
                if not self._retry_on(exc):
                    raise self._status_error(exc) from None
                last: BaseException = exc
            except BaseException as exc:
                if conn is not None:
                    await self._shutdown(conn, graceful=False)
                if isinstance(exc, asyncio.CancelledError) or not self._retry_on(exc):
                    raise
                last = exc
            _log.info("reconnect attempt %d failed: %s: %s", attempts, type(last).__name__, last)
            if self._max_attempts is not None and attempts >= self._max_attempts:
                raise TransportError(
                    f"could not reconnect after {attempts} attempts "
                    f"(last error: {type(last).__name__})"
                ) from None

    def _fail(self, exc: BaseException) -> None:
        if not isinstance(exc, ToolkitError):
            cause = exc
            exc = TransportError(f"the stream session ended: {_describe_end(cause)}")
            exc.__cause__ = cause
        _log.warning("stream session ended: %s", exc)
        self._error = exc
        self._state = _State.CLOSED
        self._ready.clear()
        conn = self._conn
        if conn is not None:
            self._emit_session(conn, "disconnected", f"closed: {exc}")
        self._set_closed()

    # -- events ------------------------------------------------------------------------

    def _emit_session(
        self,
        conn: _Connection,
        kind: SessionKind,
        detail: str,
        *,
        gap_start_ns: int | None = None,
        gap_end_ns: int | None = None,
    ) -> None:
        event = SessionEvent(
            channel="_session",
            received_at_ns=time.time_ns(),
            connection_id=conn.id,
            seq=conn.next_seq(),
            raw=None,
            kind=kind,
            detail=detail,
            gap_start_ns=gap_start_ns,
            gap_end_ns=gap_end_ns,
        )
        self._dispatch(event)

    def _dispatch_raw(self, text: str | bytes, received: int, conn_id: str, seq: int) -> None:
        if not isinstance(text, str):
            text = bytes(text).decode("utf-8", "replace")
        for fn in list(self._raw_callbacks):
            try:
                fn(text, received, conn_id, seq)
            except Exception:
                _log.exception("a raw stream callback failed")

    def _dispatch(self, event: Event) -> None:
        if self._main is not None:
            self._offer(self._main, event)
        for q in self._queues.get(event.channel, ()):
            self._offer(q, event)
        for fn, chans in list(self._callbacks):
            if chans is not None and event.channel not in chans:
                continue
            try:
                fn(event)
            except Exception:
                _log.exception("a stream callback failed")

    def _offer(self, q: asyncio.Queue[Event], event: Event) -> None:
        try:
            q.put_nowait(event)
        except asyncio.QueueFull:
            self._dropped += 1


def _describe_end(exc: BaseException | None) -> str:
    if isinstance(exc, ConnectionClosed):
        rcvd = exc.rcvd
        if rcvd is not None:
            return f"closed by the server (code {rcvd.code}, {rcvd.reason or 'no reason'})"
        return "connection lost without a close frame"
    if exc is not None:
        return f"{type(exc).__name__}: {exc}"
    return "connection ended"
