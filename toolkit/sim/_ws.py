"""The simulator's WebSocket endpoint (spec 2.1-2.3, 4.1, 5-8): token refusal (HTTP before
the upgrade, or a close code after it, per the profile), subscribe/unsubscribe/keep-alive with
confirmations, bus fan-out, connection limits."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from toolkit.profile import Stream, set_path
from toolkit.sim._accounts import CHANNEL_PERMISSION, ApiKey, Principal
from toolkit.sim._bus import Subscriber, Topic
from toolkit.sim._shape import Shape

__all__ = ["ChannelState", "Subscription", "ws_endpoint"]

#: forwarded from the bus in one go before yielding to the loop again; bounds the latency
#: a flood of data adds to a client's subscribe
_BATCH = 256
_COMPACT = (",", ":")


@dataclass(frozen=True)
class Subscription:
    """One subscription of a connection: its key (``watchticker#btcbrl``), the bus topic
    it selects, the ``onlyPriority`` filter of ``watchtickers``, and the symbol of the
    confirmation texts (lowercase, no slash; empty for channels without one)."""

    key: str
    channel: str
    topic: Topic
    only_priority: bool = False
    symbol: str = ""


@dataclass
class ChannelState:
    """Sans-I/O rules of one connection: takes the client's raw messages, returns the
    replies, and decides which bus messages the client gets (and in which shape)."""

    #: the key, not the Principal, so the state never holds the token; hidden from repr
    #: because ApiKey's own repr shows its secret
    api_key: ApiKey = field(repr=False)
    symbols: tuple[str, ...]
    priority_symbols: frozenset[str]
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    #: the profile's shapes: keep-alive, confirmation texts, onlyPriority, ticker payloads
    shape: Shape = field(default_factory=Shape, repr=False)

    def handle(self, raw: str | bytes) -> dict[str, Any]:
        """The reply to one client message; never raises on bad input."""
        try:
            msg = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return _fail("Invalid JSON")
        if not isinstance(msg, dict):
            return _fail("Invalid JSON")
        action = msg.get("action")
        stream = self.shape.profile.stream
        if stream.keepalive_action and action == stream.keepalive_action:
            reply: dict[str, Any] = {"success": True}
            set_path(reply, stream.keepalive_reply_field, stream.keepalive_reply_value)
            reply["subscriptions"] = list(self.subscriptions)
            return reply
        if action not in ("subscribe", "unsubscribe"):
            return _fail(f"Unknown action: {_text(action)}")
        parsed = self._parse(msg)
        if isinstance(parsed, str):
            return _fail(parsed)
        if action == "subscribe":
            self.subscriptions[parsed.key] = parsed
            return {"success": True, "message": self._confirmation(parsed, subscribed=True)}
        if self.subscriptions.pop(parsed.key, None) is None:
            return _fail(f"Not subscribed to channel: {parsed.key}")
        return {"success": True, "message": self._confirmation(parsed, subscribed=False)}

    def _confirmation(self, sub: Subscription, *, subscribed: bool) -> str:
        """The profile's ``stream.(un)subscribed_text[_no_symbol]`` for ``sub``."""
        stream = self.shape.profile.stream
        if sub.symbol:
            text = stream.subscribed_text if subscribed else stream.unsubscribed_text
        elif subscribed:
            text = stream.subscribed_text_no_symbol
        else:
            text = stream.unsubscribed_text_no_symbol
        return text.replace("{channel}", sub.channel).replace("{symbol}", sub.symbol)

    def _parse(self, msg: dict[str, Any]) -> Subscription | str:
        """The subscription a subscribe/unsubscribe names, or the failure text."""
        given = msg.get("channel")
        channel = given.lower() if isinstance(given, str) else ""
        if channel not in CHANNEL_PERMISSION:
            return f"Unknown channel: {_text(given)}"
        # checked before the payload so a key without the permission learns nothing more
        if not self.api_key.allows(CHANNEL_PERMISSION[channel]):
            return "Permission denied for this channel"
        data = msg.get("data")
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return "Invalid field: data"
        if channel == "watchticker":
            symbol = data.get("symbol")
            if symbol is None or symbol == "":
                return "Missing required field: symbol"
            if not isinstance(symbol, str) or symbol.upper() not in self.symbols:
                return f"Invalid symbol: {_text(symbol)}"
            symbol = symbol.upper()
            plain = symbol.replace("/", "").lower()
            return Subscription(f"watchticker#{plain}", channel, (channel, symbol), symbol=plain)
        if channel == "watchtickers":
            only = only_priority(data.get("onlyPriority"), self.shape.profile.stream)
            if only is None:
                return "Invalid field: onlyPriority"
            return Subscription(channel, channel, (channel, None), only_priority=only)
        return Subscription(channel, channel, (channel, self.api_key.account))

    def outgoing(self, topic: Topic, message: Any) -> dict[str, Any] | None:
        """The data message for a bus message, or None when nothing subscribed selects it."""
        channel = topic[0]
        for sub in self.subscriptions.values():
            if sub.topic != topic:
                continue
            if sub.only_priority:
                message = self.shape.only(message, self.priority_symbols)
            return {"channel": channel, "message": message}
        return None


_TRUE_TEXTS = frozenset({"true", "1", "yes", "on"})
_FALSE_TEXTS = frozenset({"false", "0", "no", "off", ""})


def only_priority(value: Any, stream: Stream) -> bool | None:
    """``onlyPriority`` read as ``stream.only_priority_type`` says (absent or null: off);
    None when the value has another type or is not a truthy/falsy form of it."""
    if value is None:
        return False
    kind = stream.only_priority_type
    if kind == "bool":
        return value if isinstance(value, bool) else None
    if kind == "int":
        return value != 0 if isinstance(value, int) and not isinstance(value, bool) else None
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    return True if text in _TRUE_TEXTS else False if text in _FALSE_TEXTS else None


def _fail(text: str) -> dict[str, Any]:
    return {"success": False, "message": text}


def _text(value: object) -> str:
    # echo what the client sent, bounded, so a failure text cannot balloon
    text = "" if value is None else str(value)
    return text if len(text) <= 64 else text[:61] + "..."


_TOKEN_IN_TEXT = re.compile(r"(token=)[^&\s\"']*", re.IGNORECASE)


#: set in the task of a connection refused with 401, which uvicorn (websockets-sansio)
#: then wrongly reports as "returned without completing handshake"
_refused: contextvars.ContextVar[bool] = contextvars.ContextVar("refused", default=False)


class _RedactTokens(logging.Filter):
    """Uvicorn logs the WebSocket path with its query string, i.e. with the token."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _refused.get() and record.msg == "ASGI callable returned without completing handshake.":
            return False
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(
                _TOKEN_IN_TEXT.sub(r"\1***", a) if isinstance(a, str) else a for a in record.args
            )
        if isinstance(record.msg, str) and "token=" in record.msg.lower():
            record.msg = _TOKEN_IN_TEXT.sub(r"\1***", record.msg)
        return True


def _install_redaction() -> None:
    for name in ("uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RedactTokens) for f in logger.filters):
            logger.addFilter(_RedactTokens())


# at import, because uvicorn logs the request line before any endpoint runs
_install_redaction()


def _find_transport(callables: Iterable[object], depth: int = 4) -> asyncio.BaseTransport | None:
    """The TCP transport behind the ASGI ``receive``/``send`` callables.

    ASGI offers no way to drop a connection without a close handshake, but every uvicorn
    WebSocket implementation (websockets, websockets-sansio, wsproto) passes bound methods
    of its protocol object, which holds the transport; middleware may wrap them in
    closures, so those are searched too."""
    seen: set[int] = set()
    todo = [(c, 0) for c in callables]
    while todo:
        obj, level = todo.pop()
        if id(obj) in seen or level > depth:
            continue
        seen.add(id(obj))
        owner = getattr(obj, "__self__", None)
        transport = getattr(owner, "transport", None)
        if isinstance(transport, asyncio.BaseTransport):
            return transport
        for attr in ("__wrapped__", "__func__"):
            inner = getattr(obj, attr, None)
            if inner is not None:
                todo.append((inner, level + 1))
        for cell in getattr(obj, "__closure__", None) or ():
            with contextlib.suppress(ValueError):  # empty cell
                if callable(cell.cell_contents):
                    todo.append((cell.cell_contents, level + 1))
    return None


def _abort(websocket: WebSocket) -> None:
    transport = _find_transport((websocket._receive, websocket._send))
    if transport is None:
        # without the transport the only abrupt exit left is an error out of the app,
        # which uvicorn answers by closing the socket
        raise RuntimeError("forced disconnect: transport not reachable")
    abort: Callable[[], None] | None = getattr(transport, "abort", None)
    if abort is not None:
        abort()
    else:  # pragma: no cover - every asyncio socket transport has abort()
        transport.close()


async def ws_endpoint(websocket: WebSocket) -> None:
    """Serve one WebSocket connection of the simulator (``WebSocketRoute("/", ...)``).

    Refuses a missing, unknown or expired ``?token=`` per ``stream.refusal_kind``: HTTP
    ``refusal_http_statuses[0]`` before the upgrade, or an accepted upgrade closed at once
    with ``refusal_close_codes[0]``. Then answers client messages one at a time, in order,
    and forwards the bus messages of the subscribed topics. Closes with
    ``ws_limit_close_code`` (1000) "max duration reached" / "idle timeout" per the knobs
    read at connect time; on ``Bus.drop_all`` cuts the TCP connection without a close
    frame. Always detaches from the bus."""
    _install_redaction()
    sim = websocket.app.state.sim
    principal: Principal | None = sim.tokens.resolve(websocket.query_params.get("token"))
    if principal is None:
        await _refuse(websocket, sim.shape)
        return
    max_duration_s = float(sim.knobs.ws_max_duration_s)
    idle_limit_s = float(sim.knobs.ws_idle_limit_s)
    close_code = int(sim.knobs.ws_limit_close_code)
    state = ChannelState(
        principal.api_key, tuple(sim.symbols), frozenset(sim.priority_symbols), shape=sim.shape
    )
    sub: Subscriber = sim.bus.attach(principal.account)
    try:
        await websocket.accept()
        await _serve(websocket, state, sub, max_duration_s, idle_limit_s, close_code)
    except (WebSocketDisconnect, OSError):
        pass  # the client went away: nothing to tell anyone
    finally:
        sim.bus.detach(sub)


async def _refuse(websocket: WebSocket, shape: Shape) -> None:
    text = "missing or invalid token"
    stream = shape.profile.stream
    if stream.refusal_kind == "close":
        code = stream.refusal_close_codes[0] if stream.refusal_close_codes else 1008
        with contextlib.suppress(WebSocketDisconnect, OSError, RuntimeError):
            await websocket.accept()
            await websocket.close(code=code, reason=text)
        return
    _refused.set(True)
    status = stream.refusal_http_statuses[0] if stream.refusal_http_statuses else 401
    await websocket.send_denial_response(JSONResponse(shape.error(text), status_code=status))


async def _serve(
    websocket: WebSocket,
    state: ChannelState,
    sub: Subscriber,
    max_duration_s: float,
    idle_limit_s: float,
    close_code: int = 1000,
) -> None:
    loop = asyncio.get_running_loop()
    end_at = loop.time() + max_duration_s
    idle_at = loop.time() + idle_limit_s
    dropped = asyncio.ensure_future(sub.dropped.wait())
    receiving: asyncio.Future[Any] | None = None
    bus_get: asyncio.Future[tuple[Topic, Any]] | None = None
    try:
        while True:
            if receiving is None:
                receiving = asyncio.ensure_future(websocket.receive())
            if bus_get is None:
                bus_get = asyncio.ensure_future(sub.queue.get())
            timeout = max(0.0, min(end_at, idle_at) - loop.time())
            done, _ = await asyncio.wait(
                (dropped, receiving, bus_get), timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if dropped in done:
                _abort(websocket)
                return
            if bus_get in done:
                await _forward(websocket, state, sub, bus_get.result())
                bus_get = None
            if receiving in done:
                message = receiving.result()
                receiving = None
                if message["type"] == "websocket.disconnect":
                    return
                raw = message.get("text")
                if raw is None:
                    raw = message.get("bytes") or b""
                idle_at = loop.time() + idle_limit_s
                # what was published before this message is judged by the subscriptions
                # as they stood, so an unsubscribe really stops the data
                await _forward(websocket, state, sub, None, limit=None)
                await websocket.send_text(json.dumps(state.handle(raw), separators=_COMPACT))
            now = loop.time()
            if now >= end_at:
                await websocket.close(code=close_code, reason="max duration reached")
                return
            if now >= idle_at:
                await websocket.close(code=close_code, reason="idle timeout")
                return
    finally:
        for fut in (dropped, receiving, bus_get):
            if fut is not None and not fut.done():
                fut.cancel()


async def _forward(
    websocket: WebSocket,
    state: ChannelState,
    sub: Subscriber,
    first: tuple[Topic, Any] | None,
    limit: int | None = _BATCH,
) -> None:
    """Send ``first`` and whatever else is already queued (up to ``limit``; all when
    None), each only if a subscription selects it."""
    item = first
    sent = 0
    while limit is None or sent < limit:
        sent += 1
        if item is None:
            try:
                item = sub.queue.get_nowait()
            except asyncio.QueueEmpty:
                return
        if sub.dropped.is_set():
            return
        out = state.outgoing(*item)
        item = None
        if out is not None:
            await websocket.send_text(json.dumps(out, separators=_COMPACT))
