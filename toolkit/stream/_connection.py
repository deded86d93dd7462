"""Connection keeping for ``StreamSession``: open a connection (errors translated), read it,
keep it alive with pings, drain it, rotate it before the max duration, reconnect with backoff."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
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
    Backoff,
    Confirmation,
    PendingRequest,
    classify_reply,
)
from toolkit.stream._events import Event, SessionKind, event_from_message
from toolkit.stream._ports import TokenSource

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


class _ConnectionKeeping:
    """The connection side of ``StreamSession`` (a mixin): everything that opens, reads,
    pings, drains, rotates and replaces its ``_Connection``. The session owns the state
    declared here and the subscription book and dispatch this side calls back into."""

    # state owned by StreamSession (set in its __init__)
    _client: TokenSource
    _ping_interval: float | None
    _ping_timeout: float
    _rotate_after: float | None
    _open_timeout: float
    _backoff: Backoff
    _retry_on: Callable[[BaseException], bool]
    _max_attempts: int | None
    _sleep: Callable[[float], Awaitable[Any]]
    _ws_url: str
    _conn: _Connection | None
    _connections: int
    _desired: dict[str, tuple[str, dict[str, Any]]]
    _user_lock: asyncio.Lock
    _raw_callbacks: list[RawCallback]
    _typed_channels: frozenset[str]
    _typed_all: bool
    _received: int
    _logger: _RedactingLogger

    if TYPE_CHECKING:  # pragma: no cover - defined by StreamSession

        def _emit_session(
            self,
            conn: _Connection,
            kind: SessionKind,
            detail: str,
            *,
            gap_start_ns: int | None = None,
            gap_end_ns: int | None = None,
        ) -> None: ...

        def _dispatch_raw(
            self, text: str | bytes, received: int, conn_id: str, seq: int
        ) -> None: ...

        def _dispatch(self, event: Event) -> None: ...

        async def _restore(self, conn: _Connection) -> None: ...

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


def _describe_end(exc: BaseException | None) -> str:
    if isinstance(exc, ConnectionClosed):
        rcvd = exc.rcvd
        if rcvd is not None:
            return f"closed by the server (code {rcvd.code}, {rcvd.reason or 'no reason'})"
        return "connection lost without a close frame"
    if exc is not None:
        return f"{type(exc).__name__}: {exc}"
    return "connection ended"
