"""Connection keeping for ``StreamSession``: open a connection (errors translated, a token
refused by HTTP status or by close code), read it, keep it alive with the profile's
keep-alive action, serialise the actions sent on it, drain it, rotate it before the max
duration, reconnect with backoff. The policy (intervals, limits, codes) comes from
``toolkit.stream._keepalive``."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Sized
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from toolkit._aio import wait_for
from toolkit.errors import AuthenticationError, ToolkitError, TransportError, redact_url
from toolkit.profile import ServiceProfile
from toolkit.stream._channels import Backoff, Confirmation, PendingRequest, classify_reply
from toolkit.stream._decode import NOT_TAKEN, decoder_for
from toolkit.stream._events import Event, SessionKind, event_from_message
from toolkit.stream._failures import CallbackFailures
from toolkit.stream._frame_queue import TEXT, queued_frames
from toolkit.stream._keepalive import (
    REFUSAL_GRACE_S,
    TOO_BIG_REPEATS,
    ConfirmationTimeout,
    Connection,
    ConnectionPolicy,
    NoRedirectConnect,
    Refused,
    SlotBusy,
    _describe_end,
    _RedactingLogger,
    act,
    drain,
    dropped_too_big,
    keep_alive,
    refusal_code,
    refusal_error,
    status_error,
    too_big_error,
    watch_overlap,
)
from toolkit.stream._ports import TokenSource
from toolkit.stream._queues import items_of

_log = logging.getLogger("toolkit.stream")
#: the session and tests know a connection by its private name
_Connection = Connection

#: ``fn(text, received_at_ns, connection_id, seq)``: one data message as the server sent it
RawCallback = Callable[[str, int, str, int], Any]
#: how every data message of the service starts (compact JSON, ``channel`` first): such a
#: message has a top-level ``channel``, so it is never a reply (``classify_reply``) and the
#: raw path can hand it on without decoding it. Anything else takes the decoding path.
_DATA_PREFIX = '{"channel":'


class _ConnectionKeeping:
    """The connection side of ``StreamSession`` (a mixin): everything that opens, reads,
    keeps alive, drains, rotates and replaces its ``Connection``. The session owns the
    state declared here and the subscription book and dispatch this side calls back into."""

    # state owned by StreamSession (set in its __init__)
    _client: TokenSource
    _profile: ServiceProfile
    _policy: ConnectionPolicy
    _reconnect: bool
    _ping_timeout: float
    _confirm_timeout: float
    _open_timeout: float
    _backoff: Backoff
    _retry_on: Callable[[BaseException], bool]
    _max_attempts: int | None
    _sleep: Callable[[float], Awaitable[Any]]
    _ws_url: str
    _conn: Connection | None
    _connections: int
    #: consecutive connections refused by a close (reset by one that answers)
    _refusals: int
    #: consecutive connections we closed for a message over max_message_bytes
    _too_big: int
    _desired: dict[str, tuple[str, dict[str, Any]]]
    _user_lock: asyncio.Lock
    _raw_callbacks: list[RawCallback]
    _typed_channels: frozenset[str]
    _typed_all: bool
    _received: int
    _malformed: int
    _failures: CallbackFailures
    _announce: PendingRequest | None
    _logger: _RedactingLogger
    # what the reader's inlined dispatch of fast-path events reads (see _dispatch)
    _main: asyncio.Queue[Any] | None
    _queues: dict[str, list[asyncio.Queue[Event]]]
    _callback_tuple: tuple[tuple[Callable[[Event], Any], frozenset[str] | None], ...]
    _dropped: int

    if TYPE_CHECKING:  # pragma: no cover - defined by StreamSession

        def _emit_session(
            self,
            conn: Connection,
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

        def _offer(self, q: asyncio.Queue[Event], event: Event) -> None: ...

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

    async def _open(self, force_token: bool = False) -> Connection:
        """One connection attempt, its reader started; raises the low-level error (for
        ``retry_on``), except InvalidURI whose text would carry the token, and Refused
        when the service closes it at once with a refusal code (checked right away when
        the profile says the service refuses that way, or after a refusal was seen)."""
        token = await self._token(force_token)
        try:
            ws = await NoRedirectConnect(
                self._url(token),
                open_timeout=self._open_timeout,
                logger=self._logger,
                max_size=self._policy.max_message_bytes,
                max_queue=64,
                ping_interval=self._policy.ws_ping_interval,
            )
        except InvalidURI:
            raise ToolkitError(f"invalid WebSocket URL {redact_url(self._url('x'))}") from None
        self._connections += 1
        conn = Connection(ws, f"c{self._connections}-{secrets.token_hex(3)}", 0.0)
        conn.opened_at = asyncio.get_running_loop().time()
        conn.reader = asyncio.create_task(self._read(conn), name=f"toolkit-stream-read-{conn.id}")
        if self._policy.probe_on_open or self._refusals:
            try:
                await self._probe(conn)
            except BaseException:
                await self._shutdown(conn, graceful=False)
                raise
        return conn

    async def _probe(self, conn: Connection) -> None:
        """Tell a refused token from an accepted one right after the upgrade: a refusing
        service closes with a refusal code before answering anything. With a keep-alive
        action the answer to one proves acceptance; without, a short grace is waited."""
        reader = conn.reader
        assert reader is not None
        if self._policy.keepalive is not None:
            request = PendingRequest("keepalive", profile=self._profile)
            try:
                await act(conn, request, self._ping_timeout, cut_on_timeout=True)
            except TimeoutError:
                raise TimeoutError(
                    f"no answer to the keep-alive {self._policy.keepalive} within "
                    f"{self._ping_timeout} s (profile stream.keepalive_action, "
                    "stream.keepalive_reply_field, stream.keepalive_reply_value)"
                ) from None
            except ConnectionClosed as exc:
                self._raise_if_refused(conn, exc)
                raise
            self._refusals = 0
            return
        await asyncio.wait((reader,), timeout=REFUSAL_GRACE_S)
        if reader.done() and not reader.cancelled():
            ended = reader.exception()
            if ended is not None:
                self._raise_if_refused(conn, ended)
                raise ended

    def _raise_if_refused(self, conn: Connection, exc: BaseException) -> None:
        code = refusal_code(exc, conn.answered, self._policy)
        if code is not None:
            raise Refused(code) from None

    async def _open_translated(self) -> Connection:
        """``_open`` with the errors a caller sees: AuthenticationError on a refused token
        (after one forced signin), TransportError for the network."""
        shown = redact_url(self._url("x"))
        force = False
        while True:
            try:
                return await self._open(force)
            except InvalidStatus as exc:
                if self._refused_status(exc) and not force:
                    force = True
                    continue
                raise self._status_error(exc) from None
            except Refused as exc:
                self._refusals += 1
                if not force:
                    force = True
                    continue
                raise self._refusal_error(exc.code) from None
            except (OSError, TimeoutError, EOFError, InvalidHandshake, ConnectionClosed) as exc:
                end = _describe_end(exc, self._policy.max_message_bytes)
                raise TransportError(
                    f"could not open the WebSocket connection to {shown}: {end}"
                ) from exc

    def _refused_status(self, exc: InvalidStatus) -> bool:
        return exc.response.status_code in self._profile.stream.refusal_http_statuses

    def _status_error(self, exc: InvalidStatus) -> ToolkitError:
        return status_error(exc, self._url("x"), refused=self._refused_status(exc))

    def _refusal_error(self, code: int) -> AuthenticationError:
        return refusal_error(code, self._url("x"))

    def _raise_if_too_big(self, exc: BaseException | None) -> None:
        """End the session once ``TOO_BIG_REPEATS`` connections in a row were closed by
        us for a message over max_message_bytes (the same message comes again)."""
        if self._too_big >= TOO_BIG_REPEATS:
            raise too_big_error(self._too_big, exc, self._policy.max_message_bytes)

    async def _exchange(self, conn: Connection, request: PendingRequest, timeout: float) -> str:
        """Send one subscribe/unsubscribe on ``conn`` and wait for its confirmation, the
        only action outstanding there. Without an answer in time the connection is cut (a
        late answer could be taken for the next action's) and replaced."""
        try:
            reply = await act(conn, request, timeout, cut_on_timeout=True)
        except SlotBusy:
            raise ConfirmationTimeout(
                f"no confirmation of {request.action} {request.key} within "
                f"{self._confirm_timeout} s (another action was still unanswered)"
            ) from None
        except TimeoutError:
            raise ConfirmationTimeout(
                f"no confirmation of {request.action} {request.key} within "
                f"{self._confirm_timeout} s"
            ) from None
        if not reply.success:
            raise request.error(reply)
        return request.key

    async def _restore(self, conn: Connection) -> None:
        """Subscribe ``conn`` to everything the session holds, each confirmed."""
        for name, data in list(self._desired.values()):
            request = PendingRequest("subscribe", name, data, self._profile)
            await self._exchange(conn, request, self._confirm_timeout)

    def _install(self, conn: Connection) -> None:
        """Make ``conn`` the session's connection and keep it alive."""
        self._conn = conn
        if self._policy.keepalive_every and self._policy.keepalive and conn.pinger is None:
            conn.pinger = asyncio.create_task(
                keep_alive(conn, self._policy, self._profile, self._ping_timeout),
                name=f"toolkit-stream-ping-{conn.id}",
            )

    async def _shutdown(self, conn: Connection, graceful: bool) -> None:
        conn.closed_by_us = True
        tasks = [t for t in (conn.pinger, conn.reader) if t is not None]
        if graceful:
            with contextlib.suppress(Exception):
                await wait_for(conn.ws.close(), 2.0)
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

    async def _read(self, conn: Connection) -> None:
        """Read every message of ``conn`` until it ends (the ConnectionClosed is the
        task's exception, for the supervisor); a pending waiter fails with it."""
        end: BaseException = ConnectionClosed(None, None)
        recv = conn.ws.recv
        conn_id = conn.id
        clock = time.time_ns
        profile = self._profile
        fast_event = decoder_for(profile).fast
        # the fast path dispatches inline (StreamSession._dispatch without its call), and
        # the main queue's full() (qsize() >= maxsize, two calls) is the length of the
        # deque the asyncio.Queue keeps its items in (its maxsize is never 0 here)
        main = self._main
        main_items: Sized = () if main is None else items_of(main)
        main_size = 0 if main is None else main.maxsize
        # a whole text frame already received is taken from the head of the queue as
        # recv() would take it, without its machinery (_frame_queue); anything else: recv()
        queued = queued_frames(conn.ws)
        frames: collections.deque[Any] = collections.deque() if queued is None else queued.frames
        assembler: Any = None if queued is None else queued.assembler
        try:
            while True:
                if frames and not assembler.get_in_progress:
                    head = frames[0]
                    if head.fin and head.opcode is TEXT:
                        try:
                            text = head.data.decode()
                        except (UnicodeDecodeError, AttributeError):
                            # not UTF-8 (recv() fails the connection: 1007), or data
                            # without decode() (a memoryview: recv() joins it)
                            text = await recv()
                        else:
                            frames.popleft()
                            assembler.maybe_resume()
                    else:
                        text = await recv()
                else:
                    text = await recv()
                received = clock()
                conn.answered = True
                if text.__class__ is str and text.startswith(_DATA_PREFIX):
                    typed_all = self._typed_all
                    if not typed_all and not self._typed_channels:
                        # the raw path: a data message nobody wants typed is not decoded
                        conn.seq += 1
                        if conn.tap is not None:
                            conn.tap(text)
                        self._received += 1
                        for raw_fn in self._raw_callbacks:
                            try:
                                raw_fn(text, received, conn_id, conn.seq)
                            except Exception:
                                self._failures.report("a raw stream callback failed", raw_fn)
                        continue
                    # the typed fast path: a data message (never a reply) decoded into its
                    # event (TypedDecoder.fast); one it does not take goes the general way
                    seq = conn.seq + 1
                    try:
                        event = fast_event(text, received, conn_id, seq)
                    except (ValueError, TypeError, RecursionError):
                        event = None  # a time that is not one: the general way says so too
                    if event is not NOT_TAKEN:
                        conn.seq = seq
                        self._received += 1
                        if conn.tap is not None:
                            conn.tap(text)
                        if self._raw_callbacks:
                            self._dispatch_raw(text, received, conn_id, seq)
                        if event is None:  # the general way says what is wrong
                            event = self._general_event(text, received, conn_id, seq)
                            if event is None:
                                continue
                        if not typed_all and event.channel not in self._typed_channels:
                            continue
                        if main is not None:
                            if len(main_items) >= main_size:  # main.full()
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
                        continue
                try:
                    msg = json.loads(text)
                except (ValueError, RecursionError):  # nested past the parser's depth too
                    self._malformed += 1
                    _log.warning("ignored a message that is not JSON on %s", conn_id)
                    continue
                if not isinstance(msg, dict):
                    self._malformed += 1
                    what = type(msg).__name__ if msg is not None else "null"
                    _log.warning("ignored a JSON %s that is not an object on %s", what, conn_id)
                    continue
                reply = classify_reply(msg, profile)
                if reply is not None:
                    self._on_reply(conn, reply)
                    continue
                seq = conn.next_seq()
                if "channel" not in msg:
                    self._malformed += 1
                    _log.warning("ignored a data message without a channel on %s", conn_id)
                    continue
                self._received += 1
                if conn.tap is not None:
                    conn.tap(text)
                if self._raw_callbacks:
                    self._dispatch_raw(text, received, conn_id, seq)
                if not self._typed_all and (
                    str(msg["channel"]).lower() not in self._typed_channels
                ):
                    continue
                try:
                    event = event_from_message(
                        msg,
                        received_at_ns=received,
                        connection_id=conn_id,
                        seq=seq,
                        profile=profile,
                    )
                except (ValueError, TypeError) as err:
                    self._malformed += 1
                    _log.warning("ignored a malformed data message on %s: %s", conn_id, err)
                    continue
                self._dispatch(event)
        except ConnectionClosed as err:
            end = err
            big = dropped_too_big(err, conn_id, self._policy.max_message_bytes)
            self._malformed += big  # a message we could not take, as one not JSON
            self._too_big = self._too_big + 1 if big else 0
            raise
        finally:
            conn.ended_ns = time.time_ns()
            fut = conn.waiter
            if fut is not None and not fut.done():
                fut.set_exception(end)
                fut.exception()  # retrieved here: the waiter may have given up

    def _general_event(self, text: str, received: int, conn_id: str, seq: int) -> Event | None:
        """The event of a data message the fast path took but gave back (an empty symbol)
        or could not build (a time that is not one), built from its dict; what is wrong
        is logged as the general path says it."""
        try:
            msg = json.loads(text)
            return event_from_message(
                msg, received_at_ns=received, connection_id=conn_id, seq=seq, profile=self._profile
            )
        except (ValueError, TypeError, RecursionError) as err:
            self._malformed += 1
            _log.warning("ignored a malformed data message on %s: %s", conn_id, err)
            return None

    def _on_reply(self, conn: Connection, reply: Confirmation) -> None:
        """Hand ``reply`` to the action outstanding on ``conn`` if it answers it (see
        ``PendingRequest.matches``); anything else is a late or stray reply, ignored (a
        refusal that answers nothing is said as a warning: the service refused something
        on its own, e.g. revoked a subscription)."""
        pending, waiter = conn.pending, conn.waiter
        if pending is None or waiter is None or waiter.done() or not pending.matches(reply):
            _log.log(
                logging.DEBUG if reply.success else logging.WARNING,
                "ignored a %s reply on %s that answers nothing outstanding: %r",
                reply.kind if reply.success else "failure",
                conn.id,
                reply.message[:200],
            )
            return
        # recorded here, in the reader, so a drop right after the confirmation cannot slip
        # between it and the restore of the next connection; announced here, so the event
        # comes before the data that followed the confirmation
        if reply.success and pending.action == "subscribe":
            self._desired[pending.key] = (pending.channel, pending.data)
            if pending is self._announce:
                self._emit_session(conn, "subscribed", pending.key)
        elif reply.success and pending.action == "unsubscribe":
            self._desired.pop(pending.key, None)
            if pending is self._announce:
                self._emit_session(conn, "unsubscribed", pending.key)
        waiter.set_result(reply)

    async def _rotate(self, old: Connection) -> None:
        """Make-before-break: a new connection with every subscription confirmed takes
        over, the old one is drained (``_drain``) and only then closed, so nothing is
        missed (duplicates may occur); when the old one ends first, the gap is reported.
        Holds the user lock so no subscribe lands on the old connection meanwhile."""
        async with self._user_lock:
            caught_up = asyncio.Event()
            try:
                new = await self._open_translated()
                watch_overlap(old, new, caught_up)
                try:
                    await self._restore(new)
                except BaseException:
                    old.tap = None
                    await self._shutdown(new, graceful=False)
                    raise
            except (ToolkitError, ConnectionClosed, OSError, TimeoutError) as exc:
                _log.warning("rotation failed (%s); keeping the current connection", exc)
                # try again in a few seconds rather than spinning
                rotate = self._policy.rotate_after or 0.0
                old.opened_at = asyncio.get_running_loop().time() - rotate + 5
                return
            self._install(new)
            # break only once the old connection delivered what the new one cannot have
            try:
                not_drained = await drain(old, caught_up, self._policy, self._profile)
            finally:
                old.tap = new.tap = None
        self._emit_session(new, "connected", f"rotated from {old.id}")
        if not_drained is None:
            await self._shutdown(old, graceful=True)
            return
        # the old connection ended (or kept sending) before it delivered everything
        # published before the new one took over: data may be missing
        noticed = time.time_ns()
        # set by the reader, in the step that ends it, when the connection ended by itself
        ended_ns = old.ended_ns
        reader = old.reader
        await self._shutdown(old, graceful=False)
        if ended_ns is not None and reader is not None and reader.done():
            ended = None if reader.cancelled() else reader.exception()
            reason = _describe_end(ended, self._policy.max_message_bytes)
            gap_start = ended_ns
        else:
            reason = not_drained
            gap_start = noticed
        self._emit_session(old, "disconnected", reason)
        self._emit_session(new, "resubscribed", ",".join(self._desired))
        self._emit_session(new, "gap", reason, gap_start_ns=gap_start, gap_end_ns=time.time_ns())

    async def _reconnect_loop(self, forced: bool = False) -> Connection:
        """Connect again, with backoff, until a connection has every subscription back.
        ``forced``: the last connection was refused, start with a fresh token. A refusal
        (HTTP status or close code) after a fresh token raises AuthenticationError."""
        backoff = self._backoff  # not reset: see Backoff.connection_lost
        attempts = 0
        while True:
            await self._sleep(backoff.next_delay())
            attempts += 1
            conn: Connection | None = None
            try:
                conn = await self._open(force_token=forced)
                try:
                    await self._restore(conn)
                except ConnectionClosed as exc:
                    self._raise_if_refused(conn, exc)
                    raise
                return conn
            except InvalidStatus as exc:
                if self._refused_status(exc):
                    if forced:
                        raise self._status_error(exc) from None
                    forced = True  # a new signin, then straight back
                    backoff.reset()
                    continue
                if not self._retry_on(exc):
                    raise self._status_error(exc) from None
                last: BaseException = exc
            except Refused as exc:
                self._refusals += 1
                if conn is not None:
                    await self._shutdown(conn, graceful=False)
                if forced:
                    raise self._refusal_error(exc.code) from None
                forced = True
                backoff.reset()
                continue
            except BaseException as exc:
                if conn is not None:
                    await self._shutdown(conn, graceful=False)
                if isinstance(exc, asyncio.CancelledError) or not self._retry_on(exc):
                    raise
                self._raise_if_too_big(exc)
                last = exc
            _log.info("reconnect attempt %d failed: %s: %s", attempts, type(last).__name__, last)
            if self._max_attempts is not None and attempts >= self._max_attempts:
                raise TransportError(
                    f"could not reconnect after {attempts} attempts "
                    f"(last error: {type(last).__name__})"
                ) from None
