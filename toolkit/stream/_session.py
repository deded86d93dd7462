"""The WebSocket stream session behind ``client.stream()``: subscriptions that wait for
their confirmation, typed events, and a connection that stays up (ping, rotation, reconnect).

The channel rules live in ``toolkit.stream._channels`` (sans-I/O); this module only moves messages.
Keeping the connection up (open, read, ping, drain, rotate, reconnect) is the mixin
``toolkit.stream._connection._ConnectionKeeping``; this module holds the session's public
surface, its subscription book, its supervision and the dispatch of events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from enum import Enum
from types import TracebackType
from typing import Any

from websockets.exceptions import ConnectionClosed

from toolkit._aio import wait_for
from toolkit.errors import InvalidRequest, ToolkitError, TransportError, redact_url
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.profile._learned import Learned
from toolkit.stream._channels import (
    Action,
    Backoff,
    PendingRequest,
    validate_subscription,
)
from toolkit.stream._connection import (
    RawCallback,
    _Connection,
    _ConnectionKeeping,
)
from toolkit.stream._events import Event, SessionEvent, SessionKind
from toolkit.stream._failures import CallbackFailures
from toolkit.stream._keepalive import (
    UNSET,
    ConfirmationTimeout,
    ConnectionPolicy,
    Unset,
    _describe_end,
    _RedactingLogger,
    default_retry,
    refusal_code,
)
from toolkit.stream._limits import LimitLearner
from toolkit.stream._ports import TokenSource
from toolkit.stream._session_types import StreamClosed, StreamStats

__all__ = [
    "ConfirmationTimeout",
    "RawCallback",
    "StreamClosed",
    "StreamSession",
    "StreamStats",
    "default_retry",
]

_log = logging.getLogger("toolkit.stream")

#: put in the main queue when the session closes, to wake a waiting ``async for``
_WAKE: Any = object()


class _State(Enum):
    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


class StreamSession(_ConnectionKeeping):
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

    Every choice the spec leaves unshown comes from the service profile: ``profile=``, else
    ``client.profile``, else the default. The connection stays up: the profile's keep-alive
    action (``stream.keepalive_action``) every ``ping_interval`` seconds (default
    ``stream.keepalive_interval_s``, always below ``stream.idle_limit_s``; None: none), its
    reply recognised by ``stream.keepalive_reply_field``/``keepalive_reply_value`` (none
    within ``ping_timeout`` cuts the connection); a profile without a keep-alive action
    relies on data and WebSocket-level pings, and nothing waits for a reply. A
    make-before-break rotation after ``rotate_after`` seconds (default: before
    ``stream.max_duration_s``). One action (subscribe, unsubscribe, keep-alive) is
    outstanding on a connection at a time, and a reply only answers the one it fits
    (``PendingRequest.matches``): a confirmation text per the profile's templates.
    When ``reconnect`` is true, reconnection with capped exponential backoff and jitter
    after a drop, a server close or a network error, each attempt with a token from
    ``client.atoken()`` (a refusal forces one new signin). The backoff keeps growing
    while connections keep dropping: it starts again from its initial delay only after
    the session stayed connected for ``backoff.healthy_after`` seconds (``Backoff``).
    Every subscription is restored and confirmed, then SessionEvents ``resubscribed``
    and ``gap`` (from when the drop was noticed to when the subscriptions were back) are
    emitted. ``retry_on(exc)`` decides which errors are retried (default:
    ``default_retry``); one that is not ends the session, and ``async for`` raises it.
    ``sleep`` is how backoff waits (tests pass a fast one).

    A message over ``max_message_bytes`` (default: the client's ``max_response_bytes``)
    is dropped as we close the connection (code 1009), counted in ``stats.malformed`` and
    said by a warning and the ``disconnected``/``gap`` details; when the next connection
    ends the same way, the session ends with a TransportError naming the setting. A
    redirect of the upgrade is not followed: a TransportError says where it pointed.

    A token refusal raises AuthenticationError after one retry with a fresh token,
    whether the service refuses it with an HTTP status before the upgrade
    (``stream.refusal_http_statuses``) or closes right after it, before any reply or
    data, with a code of ``stream.refusal_close_codes``: at once from ``__aenter__``
    when it is checked there (a service that refuses by close, ``stream.refusal_kind``),
    else from the pending ``subscribe`` and ``async for``; never as a timeout.

    The first connection is made by ``__aenter__``; its failure raises at once
    (AuthenticationError on a refusal, TransportError otherwise). Closing the session
    cancels the background tasks and ends ``async for``; a closed session cannot reopen.
    """

    def __init__(
        self,
        client: TokenSource,
        *,
        reconnect: bool = True,
        queue_size: int = 10_000,
        ping_interval: float | Unset | None = UNSET,
        ping_timeout: float = 10.0,
        rotate_after: float | Unset | None = UNSET,
        confirm_timeout: float = 10.0,
        open_timeout: float = 10.0,
        backoff: Backoff | None = None,
        retry_on: Callable[[BaseException], bool] | None = None,
        max_attempts: int | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        ws_url: str | None = None,
        profile: ServiceProfile | None = None,
        max_message_bytes: int | None = None,
    ) -> None:
        if isinstance(queue_size, bool) or not isinstance(queue_size, int) or queue_size < 0:
            raise InvalidRequest(
                f"queue_size must be an int >= 0 (0: no main queue), not {queue_size!r}"
            )
        self._client = client
        self._profile = profile or getattr(client, "profile", None) or DEFAULT_PROFILE
        if not isinstance(self._profile, ServiceProfile):
            raise InvalidRequest(
                f"profile must be a ServiceProfile, not {type(self._profile).__name__}"
            )
        self._policy = ConnectionPolicy.resolve(
            self._profile,
            ping_interval=ping_interval,
            rotate_after=rotate_after,
            ping_timeout=ping_timeout,
            max_message_bytes=max_message_bytes,
            max_response_bytes=getattr(client.settings, "max_response_bytes", None),
        )
        self._reconnect = reconnect
        self._ping_timeout = ping_timeout
        self._refusals = 0
        self._too_big = 0
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
        #: the callbacks as dispatch reads them (replaced, never changed in place)
        self._callback_tuple: tuple[tuple[Callable[[Event], Any], frozenset[str] | None], ...] = ()
        #: data channels with a typed consumer of their own (queue or filtered callback)
        self._typed_channels: frozenset[str] = frozenset()
        #: every data message needs its typed event (main queue or unfiltered callback)
        self._typed_all = self._main is not None
        self._supervisor: asyncio.Task[None] | None = None
        self._received = 0
        self._dropped = 0
        self._reconnects = 0
        learned = getattr(client, "learned", None)  # what the service's closes teach
        self._limits = LimitLearner(
            self._profile, learned if isinstance(learned, Learned) else Learned()
        )
        self._malformed = 0
        self._failures = CallbackFailures()
        self._healthy_since = 0.0  # loop time since which the session is connected
        #: the caller's subscribe/unsubscribe in flight, announced on its confirmation
        self._announce: PendingRequest | None = None
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
        counts = (self._received, self._dropped, self._reconnects)
        return StreamStats(*counts, conn_id, self._malformed, self._failures.count)

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
        self._healthy_since = asyncio.get_running_loop().time()
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
        await wait_for(self._ready.wait(), timeout)

    async def subscribe(self, channel: str, **data: Any) -> str:
        """Subscribe to ``channel`` and wait for the confirmation; returns its key.

        Validated before sending (InvalidRequest, nothing sent). Raises PermissionDenied
        when the API key lacks the channel's permission, ConfirmationTimeout when no
        confirmation arrives in ``confirm_timeout`` seconds. SessionEvent ``subscribed``
        is emitted as the confirmation is read, before any data that followed it."""
        name, clean = validate_subscription(channel, data)
        return await self._request("subscribe", name, clean)

    async def unsubscribe(self, channel: str, **data: Any) -> str:
        """Unsubscribe and wait for the confirmation; returns the key (``unsubscribed``:
        as for ``subscribed``)."""
        name, clean = validate_subscription(channel, data)
        return await self._request("unsubscribe", name, clean)

    def add_callback(
        self, fn: Callable[[Event], Any], channels: Iterable[str] | None = None
    ) -> Callable[[], None]:
        """Call ``fn(event)`` for every event (or only for the events of ``channels``,
        any case, ``"_session"`` for session events), in order, on the event loop; returns
        a function that removes it. An exception in ``fn`` is never propagated: it is
        counted in ``stats.callback_errors`` and logged with its traceback, once for
        identical ones (same exception type and text)."""
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
        is never propagated: counted and logged as in ``add_callback``."""
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
        self._callback_tuple = tuple(self._callbacks)

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
        self._failures.summarize()
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
                        await wait_for(self._wait_ready(), max(remaining, 0.0))
                except TimeoutError:
                    raise ConfirmationTimeout(
                        f"{action} {channel}: no connection within {self._confirm_timeout} s"
                    ) from None
                conn = self._conn
                assert conn is not None
                request = PendingRequest(action, channel, data, self._profile)
                self._announce = request  # the reader emits (un)subscribed on its answer
                try:
                    return await self._exchange(conn, request, remaining)
                except ConnectionClosed as exc:
                    # the connection went away mid-request; the next one gets it again
                    code = refusal_code(exc, conn.answered, self._policy)
                    if not self._reconnect:
                        if code is not None:
                            raise self._refusal_error(code) from None
                        raise TransportError(
                            f"{action} {channel}: the connection closed before the "
                            f"confirmation ({_describe_end(exc, self._policy.max_message_bytes)})"
                        ) from exc
                    self._ready.clear()
                finally:
                    self._announce = None

    async def _wait_ready(self) -> None:
        while not self._ready.is_set():
            if self._state is not _State.OPEN:
                if self._error is not None:
                    raise self._error  # e.g. the token refused on reconnect
                raise StreamClosed("the stream session is closed")
            waiter = asyncio.ensure_future(self._ready.wait())
            closer = asyncio.ensure_future(self._closed.wait())
            try:
                await asyncio.wait((waiter, closer), return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                closer.cancel()

    # -- supervision -------------------------------------------------------------------

    async def _supervise(self) -> None:
        """Watch the current connection: rotate it before the max duration, replace it
        when it ends; end the session on an error ``retry_on`` refuses, or on a token the
        service refuses again (by a close code) after a fresh signin."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                conn = self._conn
                assert conn is not None and conn.reader is not None
                timeout = None
                rotate_after = self._policy.rotate_after
                if rotate_after is not None:
                    timeout = max(0.0, conn.opened_at + rotate_after - loop.time())
                done, _ = await asyncio.wait((conn.reader,), timeout=timeout)
                if not done:
                    await self._rotate(conn)
                    continue
                exc = conn.reader.exception() if not conn.reader.cancelled() else None
                noticed = time.time_ns()
                reason = _describe_end(exc, self._policy.max_message_bytes)
                self._ready.clear()
                await self._shutdown(conn, graceful=False)
                self._emit_session(conn, "disconnected", reason)
                _log.info("stream connection %s ended: %s", conn.id, reason)
                # the backoff starts again only after a connection that stayed up a while
                self._backoff.connection_lost(loop.time() - self._healthy_since)
                refused = refusal_code(exc, conn.answered, self._policy)
                if refused is not None:
                    # closed before answering anything: the token was refused
                    self._refusals += 1
                    if not self._reconnect or self._refusals > 1:
                        raise self._refusal_error(refused)
                else:
                    self._refusals = 0
                    self._policy = self._limits.after_end(
                        self._policy, exc, conn.opened_at, loop.time(), conn.last_sent
                    )
                if not self._reconnect or (
                    refused is None and not self._retry_on(exc or ConnectionClosed(None, None))
                ):
                    raise exc or StreamClosed(f"the connection ended ({reason})")
                self._raise_if_too_big(exc)
                new = await self._reconnect_loop(forced=refused is not None)
                self._reconnects += 1
                self._install(new)
                end = time.time_ns()
                self._ready.set()
                self._healthy_since = loop.time()
                self._emit_session(new, "connected", f"reconnected after: {reason}")
                self._emit_session(new, "resubscribed", ",".join(self._desired))
                self._emit_session(new, "gap", reason, gap_start_ns=noticed, gap_end_ns=end)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        if not isinstance(exc, ToolkitError):
            cause = exc
            ended = _describe_end(cause, self._policy.max_message_bytes)
            exc = TransportError(f"the stream session ended: {ended}")
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
                self._failures.report("a raw stream callback failed", fn)

    def _dispatch(self, event: Event) -> None:
        # per message: no exception for a full queue, no copy of the callback list (a
        # tuple, replaced whenever a callback is added or removed). The reader inlines
        # these steps for the events of its fast path (_ConnectionKeeping._read): a
        # change here is a change there too
        main = self._main
        if main is not None:
            if main.full():
                self._dropped += 1
            else:
                main.put_nowait(event)
        if self._queues:
            for q in self._queues.get(event.channel, ()):
                self._offer(q, event)
        for fn, chans in self._callback_tuple:
            if chans is not None and event.channel not in chans:
                continue
            try:
                fn(event)
            except Exception:
                self._failures.report("a stream callback failed", fn)

    def _offer(self, q: asyncio.Queue[Event], event: Event) -> None:
        if q.full():
            self._dropped += 1
        else:
            q.put_nowait(event)
