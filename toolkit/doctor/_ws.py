"""The WebSocket probes of the doctor: how a wrong token is refused (HTTP status before the
upgrade, or a close code after), the confirmation texts and first payload of each channel,
the type ``onlyPriority`` takes, and the keep-alive action and its reply. Connections take
messages up to the client's streams' size (``max_message_bytes``) and never follow a
redirect."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.protocol import State

from toolkit._aio import wait_for
from toolkit.doctor import _shapes as sh
from toolkit.doctor._probe import LimitExceeded, Probe
from toolkit.doctor._rest import observe_orders
from toolkit.doctor._ws_conn import _Conn
from toolkit.errors import ToolkitError
from toolkit.profile import get_path
from toolkit.stream._keepalive import NoRedirectConnect, redirect_error, too_big
from toolkit.stream._limits import read_limits

CHANNELS = ("watchOrders", "watchTicker", "watchTickers", "watchBalance")
KEEPALIVE_ACTIONS = ("ping", "heartbeat", "keepalive", "keep_alive")
FALLBACK_SYMBOL = "BTC/BRL"
_LOGGER = logging.getLogger("toolkit.doctor.ws")  # websockets logs the URL (the token) at DEBUG
_LOGGER.setLevel(logging.WARNING)


def _url(pr: Probe, token: str) -> str:
    return f"{pr.ws_url.rstrip('/')}/?token={quote(token, safe='')}"


async def _open(pr: Probe, token: str) -> ClientConnection:
    """A connection as the client's streams open one: no redirect followed (a 3xx is a
    TransportError saying where it pointed), messages up to ``pr.max_message_bytes``."""
    url = _url(pr, token)
    try:
        return await NoRedirectConnect(
            url,
            open_timeout=pr.timeout,
            close_timeout=pr.timeout,
            logger=_LOGGER,
            ping_interval=None,
            max_size=pr.max_message_bytes,
        )
    except InvalidStatus as exc:
        redirected = redirect_error(exc, url)
        if redirected is None:
            raise
        raise redirected from None


def _too_large(limit: int) -> LimitExceeded:
    """A connection we closed (code 1009) for a message over ``limit``."""
    return LimitExceeded(
        f"a WebSocket message larger than max_message_bytes={limit} (the client's "
        "max_response_bytes) arrived: the doctor closed the connection (code 1009)",
        "too large",
    )


async def probe_refusal(pr: Probe) -> None:
    """Connect with a deliberately wrong token: an HTTP status or a close code?"""
    f, st = pr.findings, pr.assumed.stream
    wrong = "doctor-wrong-token-" + (pr.token or "x")[:8][::-1]
    pr.redact.add(wrong)
    try:
        ws = await _open(pr, wrong)
    except InvalidStatus as exc:
        status = exc.response.status_code
        f.set("stream.refusal_kind", "http", note=f"HTTP {status} before the upgrade")
        known = status in st.refusal_http_statuses
        f.set(
            "stream.refusal_http_statuses",
            (status,),
            value=st.refusal_http_statuses if known else (status, *st.refusal_http_statuses),
        )
        return
    code = None
    try:
        await wait_for(ws.recv(), pr.timeout)
    except ConnectionClosed as exc:
        if too_big(exc) is not None:  # our own close 1009 is no refusal
            raise _too_large(pr.max_message_bytes) from None
        code = exc.rcvd.code if exc.rcvd else None
    except TimeoutError:
        pass
    finally:
        await ws.close()
    if code is None:
        f.check("wrong token", "differs", "accepted", "a wrong token was not refused")
        return
    f.set("stream.refusal_kind", "close", note=f"upgraded, then closed with {code}")
    known = code in st.refusal_close_codes
    f.set(
        "stream.refusal_close_codes",
        (code,),
        value=st.refusal_close_codes if known else (code, *st.refusal_close_codes),
    )


async def probe_stream(pr: Probe) -> None:
    """Subscribe to every channel, read the confirmations and the first payloads, then
    unsubscribe; then onlyPriority's type and the keep-alive."""
    if not pr.token:
        raise RuntimeError("no token (sign-in failed)")
    symbol = pr.symbol if pr.symbol and sh.is_pair(pr.symbol) else FALLBACK_SYMBOL
    plain = sh.plain_symbol(symbol)
    token = pr.token

    def not_ours(exc: ConnectionClosed) -> None:
        if too_big(exc) is not None:  # our own close 1009: no close by the service
            raise _too_large(pr.max_message_bytes) from None

    conn = _Conn(
        await _open(pr, token), pr.timeout, reopen=lambda: _open(pr, token), on_close=not_ours
    )
    try:
        subscribed: list[str] = []
        texts: dict[tuple[str, bool], str] = {}
        for channel in CHANNELS:
            data = {"symbol": symbol} if channel == "watchTicker" else None
            msg = {"action": "subscribe", "channel": channel}
            reply = await conn.ask({**msg, "data": data} if data else msg)
            if reply and reply.get("success") is True:
                subscribed.append(channel)
                texts[(channel, True)] = str(reply.get("message", ""))
            else:
                pr.findings.check(
                    f"subscribe {channel}", "unknown", _text(reply), "subscribe refused"
                )
        # the keep-alive action first, so that a close while we wait can be answered by
        # keeping the next connection alive (and tells the idle limit)
        await _keepalive(pr, conn)
        lows = [c.lower() for c in subscribed]
        waited_until = asyncio.get_running_loop().time() + pr.payload_timeout
        await conn.wait_data(lows, pr.payload_timeout)
        await _stay_silent(conn, waited_until)
        await _confirm_idle(conn)
        for channel in subscribed:
            data = {"symbol": symbol} if channel == "watchTicker" else None
            msg = {"action": "unsubscribe", "channel": channel}
            reply = await conn.ask({**msg, "data": data} if data else msg)
            if reply and reply.get("success") is True:
                texts[(channel, False)] = str(reply.get("message", ""))
        if "watchTickers" in subscribed:
            await _only_priority(pr, conn)
    except ConnectionClosed as exc:
        not_ours(exc)
        raise
    finally:
        # what was seen is kept, also when the step ends early
        _texts(pr, texts, plain)
        _payloads(pr, conn.first, subscribed)
        _limits(pr, conn)
        await conn.ws.close()


async def _stay_silent(conn: _Conn, until: float) -> None:
    """The rest of the wait without a word of ours, when every payload came early and no
    close was seen yet: a service with an idle limit shorter than the wait closes the
    connection now, which shows the limit (payloads do not keep a connection alive
    everywhere: the simulator counts only what the client sends)."""
    if conn.closes:
        return
    left = until - asyncio.get_running_loop().time()
    await conn.hold(left, until=lambda: bool(conn.closes))


#: the longest the doctor holds a kept-alive connection to confirm an idle limit
CONFIRM_MAX_S = 15.0


async def _confirm_idle(conn: _Conn) -> None:
    """After a close that looked like the idle limit, keep the new connection alive past
    that silence (at most ``CONFIRM_MAX_S``): still open, the limit was idleness."""
    idle = [c for c in conn.closes if not c.kept_alive]
    if not idle or conn.keepalive_every is None:
        return
    age = asyncio.get_running_loop().time() - conn.opened_at
    await conn.hold(min(max(c.silence for c in idle) * 1.5, CONFIRM_MAX_S) - age)


def _limits(pr: Probe, conn: _Conn) -> None:
    """The idle limit and maximum duration the service's closes showed (spec 8: values
    not shown), and a keep-alive interval well inside the idle limit."""
    if not conn.closes:
        return
    f, st = pr.findings, pr.assumed.stream
    # the connection open now was kept alive since it opened: its age confirms
    alive = conn.keepalive_every is not None and conn.ws.state is State.OPEN
    survived = asyncio.get_running_loop().time() - conn.opened_at if alive else None
    limits = read_limits(conn.closes, survived)
    seen = "; ".join(c.said() for c in conn.closes)
    if limits.idle_s is not None and limits.idle_close is not None:
        idle = round(limits.idle_s, 1)
        sure = (
            "a connection kept alive outlived it"
            if limits.idle_confirmed
            else "not confirmed: no connection kept alive outlived it within the wait"
        )
        f.set(
            "stream.idle_limit_s",
            idle,
            note=f"closed by the service after {idle} s of our silence "
            f"({limits.idle_close.said()}); {sure}",
        )
        if st.keepalive_action or conn.keepalive is not None:
            every = round(idle / 2, 1)
            if st.keepalive_interval_s >= idle:
                f.set(
                    "stream.keepalive_interval_s",
                    every,
                    note=f"half the idle limit seen ({idle} s)",
                )
    if limits.max_duration_s is not None and limits.duration_close is not None:
        f.set(
            "stream.max_duration_s",
            round(limits.max_duration_s, 1),
            note=f"closed by the service at that age although kept alive ({seen})",
        )


def _text(reply: dict[str, Any] | None) -> str:
    return "no answer" if reply is None else str(reply.get("message", reply))[:120]


def _texts(pr: Probe, texts: dict[tuple[str, bool], str], plain: str) -> None:
    f = pr.findings
    for subscribed, with_symbol, setting in (
        (True, True, "stream.subscribed_text"),
        (True, False, "stream.subscribed_text_no_symbol"),
        (False, True, "stream.unsubscribed_text"),
        (False, False, "stream.unsubscribed_text_no_symbol"),
    ):
        channels = (
            ["watchTicker"] if with_symbol else ["watchOrders", "watchTickers", "watchBalance"]
        )
        found = {
            c: sh.template(texts[(c, subscribed)], c.lower(), plain if with_symbol else "")
            for c in channels
            if (c, subscribed) in texts
        }
        if not found:
            f.unknown(setting, "no confirmation seen")
            continue
        distinct = sorted(set(found.values()))
        note = "" if len(distinct) == 1 else "channels differ: " + " | ".join(distinct)
        f.set(setting, next(iter(found.values())), note=note)


def _payloads(pr: Probe, first: dict[str, Any], subscribed: list[str]) -> None:
    f, pl = pr.findings, pr.assumed.payloads
    missing = "no payload within the wait (nothing happened on the channel)"
    tickers = first.get("watchtickers")
    listed: str | None = None
    if tickers is not None:
        assumed = pl.tickers_list
        good = sh.list_at(tickers, assumed) if assumed or isinstance(tickers, list) else []
        listed = assumed if good else sh.find_items(tickers)
        f.set(
            "payloads.tickers_list",
            listed,
            note=""
            if listed is not None
            else f"a payload arrived (fields: {_fields(tickers)[:300]}) but holds no list of "
            "objects nor an object keyed by symbol",
        )
    else:
        f.unknown("payloads.tickers_list", missing)
    keyed = sh.keyed_items(tickers, listed) if listed and listed.endswith("*") else []
    ticker = first.get("watchticker")
    if not isinstance(ticker, dict) and keyed:
        ticker = dict(keyed[0][1])  # a keyed watchTickers item shows a ticker's fields
    names = ("symbol", "bid", "ask", "last", "time")
    if isinstance(ticker, dict):
        mapped = _prefer(
            ticker, sh.map_ticker(ticker), {n: getattr(pl, f"ticker_{n}") for n in names}
        )
        if keyed:  # keyed by symbol: the field holding the key, else the key itself
            mapped["symbol"] = sh.key_field(keyed, mapped.get("symbol"))
        for n in names:
            f.set(f"payloads.ticker_{n}", mapped.get(n), note=f"fields: {_fields(ticker)}")
    else:
        for n in names:
            f.unknown(f"payloads.ticker_{n}", missing)
    balance = first.get("watchbalance")
    bnames = ("list", "asset", "free", "locked", "total", "time")
    if isinstance(balance, dict | list):
        mapped = sh.map_balance(balance)
        items = sh.list_at(balance, mapped.get("list"))
        for n in bnames:
            assumed = getattr(pl, f"balance_{n}")
            where = items[0] if n in ("asset", "free", "locked", "total") and items else balance
            keep = n != "list" and sh.leaves(where).get(assumed) is not None
            seen = assumed if keep else mapped.get(n)
            # a payload arrived: when nothing in it maps, say what it held
            f.set(
                f"payloads.balance_{n}",
                seen,
                note=""
                if seen is not None
                else f"a payload arrived (fields: {_fields(balance)[:300]}) but none of "
                "them fits this setting",
            )
    else:
        for n in bnames:
            f.unknown(f"payloads.balance_{n}", missing)
    orders = first.get("watchorders")
    if isinstance(orders, dict):
        pr.notifications.append(orders)
        observe_orders(pr)


def _prefer(
    payload: Any, mapped: dict[str, str | None], assumed: dict[str, str]
) -> dict[str, str | None]:
    """The assumed path wherever it holds a value of the right shape."""
    flat = sh.leaves(payload)
    tests: dict[str, Callable[[Any], bool]] = {
        "symbol": sh.is_pair,
        "time": lambda v: sh.time_unit(v) is not None,
    }
    out = dict(mapped)
    for name, path in assumed.items():
        test = tests.get(name, sh.is_number)
        if path in flat and test(flat[path]):
            out[name] = path
    return out


def _fields(payload: Any) -> str:
    return ", ".join(sorted(sh.leaves(payload)))


async def _only_priority(pr: Probe, conn: _Conn) -> None:
    f = pr.findings
    tried = []
    for kind, value in (("bool", True), ("int", 1), ("str", "true")):
        sub = {"action": "subscribe", "channel": "watchTickers", "data": {"onlyPriority": value}}
        reply = await conn.ask(sub)
        tried.append(f"{value!r} -> {_text(reply)}")
        if reply and reply.get("success") is True:
            await conn.ask({"action": "unsubscribe", "channel": "watchTickers"})
            f.set("stream.only_priority_type", kind, note="; ".join(tried))
            return
    f.unknown("stream.only_priority_type", "no onlyPriority value accepted: " + "; ".join(tried))


async def _keepalive(pr: Probe, conn: _Conn) -> None:
    f, st = pr.findings, pr.assumed.stream
    tried = []
    refused = True  # every action tried was refused explicitly (not merely unanswered)
    for action in dict.fromkeys([a for a in (st.keepalive_action, *KEEPALIVE_ACTIONS) if a]):
        reply = await conn.ask({"action": action})
        tried.append(f"{action} -> {_text(reply)}")
        if not reply or reply.get("success") is False:
            refused = refused and reply is not None
            continue
        field = st.keepalive_reply_field
        value = get_path(reply, field)
        if not isinstance(value, str):
            field = next(
                (k for k, v in reply.items() if isinstance(v, str) and k not in ("channel",)), ""
            )
            value = reply.get(field)
        conn.keepalive = {"action": action}
        f.set("stream.keepalive_action", action, note="; ".join(tried))
        if field:
            f.set("stream.keepalive_reply_field", field)
            f.set("stream.keepalive_reply_value", value)
        return
    # nothing worked: the assumed action, which the service was just seen to refuse (or
    # leave unanswered), is never written as if observed; empty sends none
    what = "refused every" if refused else "did not accept any"
    note = f"the service {what} keep-alive action tried ({'; '.join(tried)})"
    if st.keepalive_action:
        note += (
            f": written empty (none sent; data and WebSocket pings keep the connection) "
            f"instead of {st.keepalive_action!r}"
        )
    note += (
        "; if the service has a keep-alive, set stream.keepalive_action, "
        "keepalive_reply_field and keepalive_reply_value from its documentation, and "
        "keepalive_interval_s below its idle limit"
    )
    f.unknown("stream.keepalive_action", note, instead="")
    for name in ("reply_field", "reply_value"):
        f.unknown(
            f"stream.keepalive_{name}",
            "no keep-alive action answered; only read when stream.keepalive_action is set",
        )


async def probe_ws(pr: Probe) -> None:
    try:
        await probe_refusal(pr)
    except (OSError, WebSocketException, TimeoutError, ToolkitError, LimitExceeded) as exc:
        pr.failed("WebSocket refusal", exc)
    await probe_stream(pr)
