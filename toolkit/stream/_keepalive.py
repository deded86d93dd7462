"""Keeping one connection: the policy (sans-I/O: how often to send the keep-alive action,
when to rotate, how long to drain, what counts as a refusal of the token, all from the
service profile's ``stream`` section and the session's explicit overrides), and the
actions on a connection that apply it: one outstanding action at a time (``act``), the
keep-alive loop, and the drain of a connection being rotated out.

``toolkit.stream._connection`` opens, reads, rotates and replaces connections with these.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus

from toolkit.errors import TransportError
from toolkit.profile import ServiceProfile
from toolkit.stream._channels import Confirmation, PendingRequest

__all__ = [
    "UNSET",
    "ConfirmationTimeout",
    "Connection",
    "ConnectionPolicy",
    "Refused",
    "SlotBusy",
    "Unset",
    "act",
    "default_retry",
    "drain",
    "keep_alive",
    "refusal_code",
    "watch_overlap",
]

_log = logging.getLogger("toolkit.stream")


class Unset(Enum):
    """Marks a keyword left to the profile (``None`` already means "off")."""

    UNSET = "unset"


UNSET: Final = Unset.UNSET

#: a keep-alive is sent at most this fraction into the idle limit
_IDLE_SHARE = 0.8
#: rotation happens this long before the max duration (at most a tenth of it)
_ROTATE_MARGIN_S = 300.0
#: websockets' own protocol-level ping interval (its default), kept below the idle limit
_WS_PING_S = 20.0
#: a connection whose service may refuse by a close, probed at most this long when the
#: service has no keep-alive action to probe it with
REFUSAL_GRACE_S = 0.5
#: while draining without an answer, the old connection counts as drained once it has
#: sent no data for this long
QUIET_S = 0.25


@dataclass(frozen=True)
class ConnectionPolicy:
    """What the connection side does, resolved once per session.

    ``keepalive``: the keep-alive action as sent (None: the service has none; data and
    WebSocket-level pings keep the connection, and nothing waits for a reply);
    ``keepalive_every``: seconds between keep-alives (None: not sent), always below the
    idle limit; ``ws_ping_interval``: websockets' protocol ping interval; ``rotate_after``:
    seconds before a make-before-break rotation (None: never); ``drain_timeout``: bound of
    the wait for the old connection while rotating; ``probe_on_open``: check right after
    the upgrade that the service did not refuse the token with a close."""

    keepalive: dict[str, Any] | None
    keepalive_every: float | None
    ws_ping_interval: float | None
    rotate_after: float | None
    drain_timeout: float
    refusal_close_codes: frozenset[int]
    probe_on_open: bool

    @classmethod
    def resolve(
        cls,
        profile: ServiceProfile,
        *,
        ping_interval: float | Unset | None = UNSET,
        rotate_after: float | Unset | None = UNSET,
        ping_timeout: float = 10.0,
    ) -> ConnectionPolicy:
        """The policy for ``profile``; ``ping_interval``/``rotate_after`` given explicitly
        override the profile (None turns them off)."""
        s = profile.stream
        action = {"action": s.keepalive_action} if s.keepalive_action else None
        cap = s.idle_limit_s * _IDLE_SHARE if s.idle_limit_s > 0 else None
        every: float | None
        if isinstance(ping_interval, Unset):
            every = s.keepalive_interval_s if s.keepalive_interval_s > 0 else cap
        else:
            every = ping_interval
        if every is not None and cap is not None:
            every = min(every, cap)
        if every is not None and every <= 0:
            every = None
        ws_ping: float | None = _WS_PING_S
        if action is None:
            # no keep-alive action: WebSocket pings (and data) are what keep us inside
            # the idle limit, so they must come often enough
            every_ws = every if every is not None else cap
            if every_ws is not None:
                ws_ping = min(_WS_PING_S, every_ws)
            every = None
        rotate: float | None
        if isinstance(rotate_after, Unset):
            limit = s.max_duration_s
            rotate = limit - min(_ROTATE_MARGIN_S, limit * 0.1) if limit > 0 else None
        else:
            rotate = rotate_after
        return cls(
            keepalive=action,
            keepalive_every=every,
            ws_ping_interval=ws_ping,
            rotate_after=rotate,
            drain_timeout=ping_timeout,
            refusal_close_codes=frozenset(s.refusal_close_codes),
            probe_on_open=s.refusal_kind == "close",
        )


def refusal_code(exc: BaseException | None, answered: bool, policy: ConnectionPolicy) -> int | None:
    """The close code when ``exc`` (how a connection ended) is the service refusing the
    token: a close with one of the profile's refusal codes before any reply or data on
    that connection. None otherwise (a later close with the same code is an ordinary
    end of a connection that was accepted)."""
    if answered or not isinstance(exc, ConnectionClosed):
        return None
    rcvd = exc.rcvd
    if rcvd is None or rcvd.code not in policy.refusal_close_codes:
        return None
    return int(rcvd.code)


@dataclass(eq=False)
class Connection:
    ws: ClientConnection
    id: str
    opened_at: float  # loop time
    seq: int = 0
    #: the one action outstanding on this connection (subscribe, unsubscribe or
    #: keep-alive) and the future its answer resolves: replies carry no request id
    pending: PendingRequest | None = None
    waiter: asyncio.Future[Confirmation] | None = None
    #: held from sending an action until its answer (or its timeout): one at a time
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    reader: asyncio.Task[None] | None = None
    pinger: asyncio.Task[None] | None = None
    closed_by_us: bool = False
    #: when the reader saw the connection end (ns, UTC)
    ended_ns: int | None = None
    #: the service sent something (a reply or data): it accepted the token
    answered: bool = False
    #: while rotating: called with the text of every data message (overlap detection)
    tap: Callable[[str | bytes], None] | None = None

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq


class SlotBusy(TimeoutError):
    """Another action stayed outstanding on the connection until the deadline: nothing
    was sent."""


class Refused(Exception):
    """The service closed a fresh connection with a refusal code (the token)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"closed with code {code} right after the upgrade")
        self.code = code


async def act(
    conn: Connection, request: PendingRequest, timeout: float, *, cut_on_timeout: bool
) -> Confirmation:
    """Send ``request`` on ``conn`` once no other action is outstanding there, and
    wait for its answer; ``timeout`` covers both waits.

    Raises SlotBusy (nothing sent) when another action stays outstanding, TimeoutError
    when the answer does not come (with ``cut_on_timeout`` the connection is then cut:
    a late answer could be taken for the next action's), ConnectionClosed when the
    connection ends first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout, 0.0)
    try:
        async with asyncio.timeout_at(deadline):
            await conn.lock.acquire()
    except TimeoutError:
        raise SlotBusy(f"another action was outstanding on {conn.id}") from None
    try:
        fut: asyncio.Future[Confirmation] = loop.create_future()
        conn.pending = request
        conn.waiter = fut
        await conn.ws.send(json.dumps(request.message()))
        try:
            return await asyncio.wait_for(asyncio.shield(fut), max(deadline - loop.time(), 0.0))
        except TimeoutError:
            if cut_on_timeout:
                _log.warning(
                    "no answer to %s on %s within %s s: cutting the connection",
                    request.key,
                    conn.id,
                    timeout,
                )
                conn.ws.transport.abort()
            raise
    finally:
        conn.pending = None
        conn.waiter = None
        conn.lock.release()


async def keep_alive(
    conn: Connection, policy: ConnectionPolicy, profile: ServiceProfile, timeout: float
) -> None:
    """Keep ``conn`` inside the idle limit with the profile's keep-alive action; no
    answer within ``timeout`` means a dead connection (cut, then replaced)."""
    every = policy.keepalive_every
    assert every
    refused_logged = False
    while True:
        await asyncio.sleep(every)
        request = PendingRequest("keepalive", profile=profile)
        try:
            reply = await act(conn, request, timeout, cut_on_timeout=True)
        except SlotBusy:
            continue  # a subscribe in flight is itself traffic that keeps us alive
        except TimeoutError:
            return
        except ConnectionClosed:
            return
        if not reply.success and not refused_logged:
            refused_logged = True
            _log.warning(
                "the service refused the keep-alive %s on %s (%r): check the profile's "
                "stream.keepalive_action",
                policy.keepalive,
                conn.id,
                reply.message[:200],
            )


async def drain(
    old: Connection, caught_up: asyncio.Event, policy: ConnectionPolicy, profile: ServiceProfile
) -> str | None:
    """Wait, at most ``drain_timeout``, until everything the service published on
    ``old`` before the new connection took over has been read; None when it has, else
    why not.

    Rotation needs it: the new connection only gets what is published after its
    subscriptions are confirmed, and closing the old one at once would lose what the
    service published just before and had not sent on the old one yet. Drained means:
    the keep-alive sent on ``old`` was answered (the service answers a connection's
    messages in order, data first), or ``old`` delivered a message the new connection
    also delivered (``caught_up``: it reached the point where the new one started),
    or ``old`` stayed quiet (its sequence unchanged) for a short while. A missing
    keep-alive answer alone is no gap: the service may not send one."""
    reader = old.reader
    if reader is None or reader.done():
        return "connection ended"
    loop = asyncio.get_running_loop()
    bound = policy.drain_timeout
    deadline = loop.time() + bound
    caught = asyncio.ensure_future(caught_up.wait())
    answer: asyncio.Task[Confirmation] | None = None
    if policy.keepalive is not None:
        request = PendingRequest("keepalive", profile=profile)
        answer = asyncio.ensure_future(act(old, request, bound, cut_on_timeout=False))
    last_seq, quiet_since = old.seq, loop.time()
    try:
        while True:
            if answer is not None and answer.done():
                if not answer.cancelled() and answer.exception() is None:
                    return None
                answer = None  # unanswered: judged from the data alone
            if caught_up.is_set():
                return None
            if reader.done():
                return "connection ended"
            now = loop.time()
            if old.seq != last_seq:
                last_seq, quiet_since = old.seq, now
            # a keep-alive on its way may still flush data held for it: wait longer
            quiet = QUIET_S * (4 if answer is not None else 1)
            if now - quiet_since >= quiet:
                return None  # quiet: nothing more was on its way
            remaining = deadline - now
            if remaining <= 0:
                return (
                    f"the old connection kept sending for {bound} s without catching "
                    "up with the new one"
                )
            waits: set[asyncio.Future[Any]] = {reader, caught}
            if answer is not None:
                waits.add(answer)
            await asyncio.wait(
                waits, timeout=min(QUIET_S, remaining), return_when=asyncio.FIRST_COMPLETED
            )
    finally:
        caught.cancel()
        if answer is not None and not answer.done():
            answer.cancel()
            await asyncio.wait((answer,))


def watch_overlap(old: Connection, new: Connection, caught_up: asyncio.Event) -> None:
    """Record the data texts of both connections while rotating; ``caught_up`` is set
    once one text arrived on both (the old connection reached what the new one has)."""
    seen_old: set[str | bytes] = set()
    seen_new: set[str | bytes] = set()

    def tap(own: set[str | bytes], other: set[str | bytes]) -> Callable[[str | bytes], None]:
        def record(text: str | bytes) -> None:
            if text in other:
                caught_up.set()
            own.add(text)

        return record

    old.tap = tap(seen_old, seen_new)
    new.tap = tap(seen_new, seen_old)


# ------------------------------------------------ retries, logs and ends of a connection

_TOKEN_IN_TEXT = re.compile(r"(token=)[^&\s\"']*", re.IGNORECASE)


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


class ConfirmationTimeout(TransportError, TimeoutError):
    """The service did not confirm a subscribe/unsubscribe (or answer a ping) in time."""


def _describe_end(exc: BaseException | None) -> str:
    if isinstance(exc, ConnectionClosed):
        rcvd = exc.rcvd
        if rcvd is not None:
            return f"closed by the server (code {rcvd.code}, {rcvd.reason or 'no reason'})"
        return "connection lost without a close frame"
    if exc is not None:
        return f"{type(exc).__name__}: {exc}"
    return "connection ended"
