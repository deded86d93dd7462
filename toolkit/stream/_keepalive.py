"""Keeping one connection: the policy (sans-I/O: how often to send the keep-alive action,
when to rotate, how long to drain, what counts as a refusal of the token, the largest
message taken, all from the service profile's ``stream`` section and the session's
explicit overrides), and the actions on a connection that apply it: one outstanding
action at a time (``act``), the keep-alive loop, and the drain of a connection being
rotated out; how a connection is opened (no redirect followed) and how its end is told.

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
from urllib.parse import urljoin, urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus

from toolkit._aio import wait_for
from toolkit.errors import (
    AuthenticationError,
    InvalidRequest,
    ToolkitError,
    TransportError,
    redact_url,
)
from toolkit.profile import ServiceProfile
from toolkit.stream._channels import Confirmation, PendingRequest

__all__ = [
    "UNSET",
    "ConfirmationTimeout",
    "Connection",
    "ConnectionPolicy",
    "NoRedirectConnect",
    "Refused",
    "SlotBusy",
    "Unset",
    "act",
    "default_retry",
    "drain",
    "dropped_too_big",
    "keep_alive",
    "redirect_error",
    "refusal_code",
    "refusal_error",
    "status_error",
    "too_big_error",
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
#: the largest message taken when neither the session nor the client says (the client's
#: own default ``max_response_bytes``: one bound for an answer, by REST or WebSocket)
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: connections in a row closed by us for a message over ``max_message_bytes`` before the
#: session ends: the message comes again on every new connection (a snapshot sent after
#: each subscribe), so reconnecting again would lose it, and what follows it, for ever
TOO_BIG_REPEATS = 2


@dataclass(frozen=True)
class ConnectionPolicy:
    """What the connection side does, resolved once per session.

    ``keepalive``: the keep-alive action as sent (None: the service has none; data and
    WebSocket-level pings keep the connection, and nothing waits for a reply);
    ``keepalive_every``: seconds between keep-alives (None: not sent), always below the
    idle limit; ``ws_ping_interval``: websockets' protocol ping interval; ``rotate_after``:
    seconds before a make-before-break rotation (None: never); ``drain_timeout``: bound of
    the wait for the old connection while rotating; ``probe_on_open``: check right after
    the upgrade that the service did not refuse the token with a close;
    ``max_message_bytes``: the largest message taken (websockets' ``max_size``), a larger
    one makes us close the connection with code 1009."""

    keepalive: dict[str, Any] | None
    keepalive_every: float | None
    ws_ping_interval: float | None
    rotate_after: float | None
    drain_timeout: float
    refusal_close_codes: frozenset[int]
    probe_on_open: bool
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    #: the keep-alive interval and the rotation come from the profile (not given by the
    #: user), so what the service's closes show may shorten them (``_limits``)
    learn_keepalive: bool = False
    learn_rotation: bool = False

    @classmethod
    def resolve(
        cls,
        profile: ServiceProfile,
        *,
        ping_interval: float | Unset | None = UNSET,
        rotate_after: float | Unset | None = UNSET,
        ping_timeout: float = 10.0,
        max_message_bytes: int | None = None,
        max_response_bytes: int | None = None,
    ) -> ConnectionPolicy:
        """The policy for ``profile``; ``ping_interval``/``rotate_after`` given explicitly
        override the profile (None turns them off). ``max_message_bytes`` defaults to the
        client's ``max_response_bytes`` (else 64 MiB); InvalidRequest unless an int >= 1."""
        max_bytes = max_message_bytes
        if max_bytes is None:
            max_bytes = max_response_bytes or DEFAULT_MAX_MESSAGE_BYTES
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise InvalidRequest(f"max_message_bytes must be an int >= 1, not {max_bytes!r}")
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
            max_message_bytes=max_bytes,
            learn_keepalive=isinstance(ping_interval, Unset),
            learn_rotation=isinstance(rotate_after, Unset),
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


def status_error(exc: InvalidStatus, url: str, *, refused: bool) -> ToolkitError:
    """The error for an upgrade of ``url`` answered ``exc.response.status_code``:
    ``refused`` (one of ``stream.refusal_http_statuses``, after a fresh signin) is an
    AuthenticationError, a redirect says where it pointed, anything else a refusal."""
    shown = redact_url(url)
    status = exc.response.status_code
    if refused:
        return AuthenticationError(
            f"the gateway refused the WebSocket connection to {shown} (HTTP {status}): "
            "the operational token was missing or invalid, even after a fresh signin",
            status=status,
        )
    redirected = redirect_error(exc, url)
    if redirected is not None:
        return redirected
    return TransportError(
        f"the gateway refused the WebSocket connection to {shown} (HTTP {status})",
        status=status,
    )


def refusal_error(code: int, url: str) -> AuthenticationError:
    """The error for a token the service refused again by closing with ``code``."""
    return AuthenticationError(
        f"the service closed the WebSocket connection to {redact_url(url)} right after "
        f"the upgrade (close code {code}, one of stream.refusal_close_codes): the "
        "operational token was missing or invalid, even after a fresh signin",
        status=code,
    )


@dataclass(eq=False)
class Connection:
    ws: ClientConnection
    id: str
    opened_at: float  # loop time
    seq: int = 0
    #: loop time of our last action sent on it (0: none; the open counts then)
    last_sent: float = 0.0
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
        conn.last_sent = loop.time()
        try:
            return await wait_for(asyncio.shield(fut), max(deadline - loop.time(), 0.0))
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


class NoRedirectConnect(connect):
    """websockets' ``connect`` without following redirects (REST refuses them too): a
    3xx on the upgrade stays the InvalidStatus it is (``redirect_error``), so nothing is
    sent to the host a gateway, a captive portal or a proxy points at."""

    def process_redirect(self, exc: Exception) -> Exception | str:
        return exc


def redirect_error(exc: InvalidStatus, url: str) -> TransportError | None:
    """The error for an upgrade of ``url`` answered with a redirect (None for any other
    status). The target is shown without user info, query or fragment: a login page
    often carries where it came from (``?next=`` our URL, the token in it) there."""
    status = exc.response.status_code
    if not 300 <= status < 400:
        return None
    location = exc.response.headers.get("Location")
    if location is None:
        target = "nowhere (no Location)"
    else:
        try:
            parts = urlsplit(urljoin(url, location))
            bare = redact_url(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")))
        except ValueError:
            bare, parts = "<unparseable url>", None
        target = bare if len(bare) <= 300 else bare[:300] + "..."
        if parts is not None and (parts.query or parts.fragment):
            target += " (its query not shown)"
    return TransportError(
        f"the gateway redirected the WebSocket upgrade to {target} (HTTP {status}): a "
        f"login page or proxy is in the way (redirects are not followed; ws_url is "
        f"{redact_url(url)})",
        status=status,
    )


#: websockets' reason for a frame over ``max_size``: ``frame with N bytes [after reading
#: M bytes] exceeds limit of L bytes`` (no sizes for a compressed one)
_TOO_BIG_SIZE = re.compile(r"frame with (\d+) bytes(?: after reading (\d+) bytes)?")
_MESSAGE_TOO_BIG = 1009


def too_big(exc: BaseException | None) -> str | None:
    """websockets' reason when ``exc`` (how a connection ended) is our own close 1009 (a
    message over ``max_message_bytes`` arrived, and was dropped); None otherwise."""
    if not isinstance(exc, ConnectionClosed):
        return None
    sent = exc.sent
    if sent is None or sent.code != _MESSAGE_TOO_BIG or exc.rcvd_then_sent:
        return None
    return sent.reason


def _too_big_text(reason: str, limit: int | None) -> str:
    found = _TOO_BIG_SIZE.search(reason)
    if found is None:  # compressed: the size is not known, only that it is over
        size = ""
    elif found[2] is not None:  # fragmented: the frames read so far and this one
        size = f" of more than {int(found[1]) + int(found[2])} bytes,"
    else:
        size = f" of {found[1]} bytes,"
    setting = "max_message_bytes" if limit is None else f"max_message_bytes={limit}"
    return f"closed by us (code 1009, message too big): a message{size} over {setting} was dropped"


def dropped_too_big(exc: ConnectionClosed, conn_id: str, limit: int) -> bool:
    """Whether ``exc``, the end of connection ``conn_id``, is our close 1009; if so, it
    is logged as a warning naming the setting."""
    reason = too_big(exc)
    if reason is None:
        return False
    _log.warning(
        "stream connection %s %s: raise the session's max_message_bytes",
        conn_id,
        _too_big_text(reason, limit),
    )
    return True


def too_big_error(count: int, exc: BaseException | None, limit: int) -> TransportError:
    """The end of a session whose last ``count`` connections were closed by us for a
    message over ``limit`` (``TOO_BIG_REPEATS``)."""
    return TransportError(
        f"the last {count} connections were each {_describe_end(exc, limit)}: "
        "reconnecting would lose that message again; raise max_message_bytes "
        "(client.stream(max_message_bytes=...), Recorder(stream_options=...), toolkit "
        "record --max-message-bytes; default: the client's max_response_bytes)"
    )


def _describe_end(exc: BaseException | None, max_message_bytes: int | None = None) -> str:
    reason = too_big(exc)
    if reason is not None:
        return _too_big_text(reason, max_message_bytes)
    if isinstance(exc, ConnectionClosed):
        rcvd = exc.rcvd
        if rcvd is not None:
            return f"closed by the server (code {rcvd.code}, {rcvd.reason or 'no reason'})"
        return "connection lost without a close frame"
    if exc is not None:
        return f"{type(exc).__name__}: {exc}"
    return "connection ended"
