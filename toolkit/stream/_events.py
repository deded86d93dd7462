"""Typed events of the WebSocket channels and of the stream session itself, and
``event_from_message`` that builds them from data messages (live or replayed).

Where the fields of the ticker and balance payloads are is the profile's ``payloads``
section (dotted paths); Unix times become milliseconds by the profile's
``orders.timestamp_unit`` (``auto``: seconds vs milliseconds by magnitude, per value).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from toolkit.errors import InvalidResponse
from toolkit.profile import DEFAULT_PROFILE, EACH, ID_CANDIDATES, ServiceProfile, keyed_container
from toolkit.protocol import order_id_problem, to_epoch_ms
from toolkit.stream._event_types import (
    FINAL_STATUSES,
    BalanceEvent,
    Event,
    OrderEvent,
    RawEvent,
    SessionEvent,
    SessionKind,
    TickerEvent,
    TickersEvent,
)
from toolkit.stream._ids import id_value, order_id_of, with_id

__all__ = [
    "FINAL_STATUSES",
    "BalanceEvent",
    "Event",
    "OrderEvent",
    "PayloadMismatch",
    "RawEvent",
    "SessionEvent",
    "SessionKind",
    "TickerEvent",
    "TickersEvent",
    "canonical_status",
    "event_from_message",
    "order_event",
    "order_id_of",
]


_log = logging.getLogger("toolkit.stream")
_MISSING: Any = object()


class PayloadMismatch(ValueError):
    """A payload lacks a field the profile maps or the spec requires, or is not of the
    type it must be: ``setting`` is the profile setting that names it (e.g.
    ``payloads.ticker_symbol``), or ``<channel>.<field>`` for a field the spec fixes
    (e.g. ``watchorders.updatedAt``, ``watchorders.message`` for the payload itself)."""

    def __init__(self, message: str, *, channel: str, setting: str) -> None:
        super().__init__(message)
        self.channel = channel
        self.setting = setting


def canonical_status(status: Any) -> str:
    """One case for every status (``closed`` and ``CLOSED`` are the same state)."""
    return str(status or "").strip().upper()


def _float(value: Any) -> float:
    if value is None or value == "":
        return float("nan")
    if value.__class__ is bool:  # float(True) is 1.0: a price it is not
        raise ValueError(f"not a number: {value!r}")
    return float(value)


#: below this a Unix time is in seconds (as ``toolkit.protocol.to_epoch_ms`` decides)
_SECONDS_BELOW = 100_000_000_000


def _epoch_ms(value: Any, unit: str) -> int:
    """Unix milliseconds of a time field (0 when empty); ValueError when not a time."""
    if value.__class__ is int:  # the usual case, without the float round trip
        if unit == "s" or (unit == "auto" and -_SECONDS_BELOW < value < _SECONDS_BELOW):
            return value * 1000  # type: ignore[no-any-return]
        return value  # type: ignore[no-any-return]
    try:
        ms = to_epoch_ms(value, unit)
    except (InvalidResponse, OverflowError) as exc:
        raise ValueError(f"not a Unix timestamp: {value!r}") from exc
    return ms or 0


#: a path compiled once: a key (no dot), the steps of a dotted one, or None (the payload)
Path = str | tuple[str, ...] | None


def _compile(path: str) -> Path:
    if not path:
        return None
    return tuple(path.split(".")) if "." in path else path


#: a list setting compiled: (as written, compiled path of the list or of the keyed
#: object, whether the items are the values of an object keyed by symbol or asset)
ListPath = tuple[str, Path, bool]


def _compile_list(path: str) -> ListPath:
    container = keyed_container(path)
    if container is None:
        return (path, _compile(path), False)
    return (path, _compile(container), True)


def _get(payload: Any, path: Path) -> Any:
    """The value at a compiled path, or ``_MISSING``."""
    if path is None:
        return payload
    if path.__class__ is str:
        if payload.__class__ is dict or isinstance(payload, Mapping):
            return payload.get(path, _MISSING)
        return _MISSING
    value = payload
    for step in path:
        if not (value.__class__ is dict or isinstance(value, Mapping)):
            return _MISSING
        value = value.get(step, _MISSING)
        if value is _MISSING:
            return _MISSING
    return value


def _kind(value: Any) -> str:
    """``null``, ``a list``, ``an int``: what a JSON value is, for an error."""
    if value is None:
        return "null"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _present(payload: Any) -> str:
    if isinstance(payload, Mapping):
        return ", ".join(map(str, payload)) or "none"
    return f"none (the payload is {_kind(payload)})"


def _mismatch(what: str, payload: Any, path: str, setting: str, channel: str) -> PayloadMismatch:
    return PayloadMismatch(
        f"{what} has no {path!r} (profile {setting}); fields present: {_present(payload)}",
        channel=channel,
        setting=setting,
    )


#: (profile name, setting) already reported: a wrong mapping is logged once, not per message
_reported: set[tuple[str, str]] = set()


def _report_once(profile: ServiceProfile, setting: str, text: str) -> None:
    key = (profile.name, setting)
    if key not in _reported:
        _reported.add(key)
        _log.warning("%s (profile %r; reported once)", text, profile.name)


class _Mapping:
    """A profile's payload paths, compiled once (event building runs per message)."""

    __slots__ = (
        "balance",
        "balance_list",
        "balance_time",
        "flat_ticker",
        "profile",
        "ticker",
        "ticker_time",
        "tickers_list",
        "unit",
    )

    def __init__(self, profile: ServiceProfile) -> None:
        p = profile.payloads
        self.profile = profile
        self.unit = profile.orders.timestamp_unit
        #: (path as written, compiled path, setting) of symbol, bid, ask, last
        self.ticker = tuple(
            (path, _compile(path), f"payloads.ticker_{name}")
            for name, path in (
                ("symbol", p.ticker_symbol),
                ("bid", p.ticker_bid),
                ("ask", p.ticker_ask),
                ("last", p.ticker_last),
            )
        )
        self.ticker_time = (p.ticker_time, _compile(p.ticker_time))
        #: the four keys when every ticker field is a plain key of the payload (fast path)
        keys = [c for _, c, _ in self.ticker]
        flat = all(k.__class__ is str for k in keys) and p.ticker_symbol != EACH
        self.flat_ticker = tuple(keys) if flat else None
        self.tickers_list = _compile_list(p.tickers_list)
        self.balance_list = _compile_list(p.balance_list)
        self.balance = tuple(
            (canonical, path, _compile(path), f"payloads.balance_{canonical}")
            for canonical, path in (
                ("asset", p.balance_asset),
                ("free", p.balance_free),
                ("locked", p.balance_locked),
                ("total", p.balance_total),
            )
        )
        self.balance_time = (p.balance_time, _compile(p.balance_time))


_mappings: dict[int, _Mapping] = {}


def _mapping(profile: ServiceProfile) -> _Mapping:
    if profile is DEFAULT_PROFILE:
        return _DEFAULT_MAPPING
    found = _mappings.get(id(profile))
    if found is None or found.profile is not profile:
        if len(_mappings) > 64:
            _mappings.clear()
        found = _mappings[id(profile)] = _Mapping(profile)
    return found


_DEFAULT_MAPPING = _Mapping(DEFAULT_PROFILE)


def _time(m: _Mapping, payload: Any, path: tuple[str, Path], setting: str, what: str) -> int:
    value = _get(payload, path[1])
    if value is _MISSING:
        # not a reason to lose the prices: the time stays unknown (0), said once
        text = f"{what} has no {path[0]!r} (profile {setting}); time left unknown"
        _report_once(m.profile, setting, text)
        return 0
    return _epoch_ms(value, m.unit)


def _ticker(
    message: Any,
    m: _Mapping,
    channel: str,
    received_at_ns: int,
    connection_id: str,
    seq: int,
    raw: dict[str, Any] | None,
    what: str,
    key: str | None = None,
) -> TickerEvent:
    flat = m.flat_ticker
    if flat is not None and message.__class__ is dict:
        get = message.get
        symbol, bid, ask, last = (
            get(flat[0]),
            get(flat[1], _MISSING),
            get(flat[2], _MISSING),
            get(flat[3], _MISSING),
        )
        stamp = get(m.ticker_time[0], _MISSING) if m.ticker_time[1].__class__ is str else _MISSING
        if (
            symbol
            and bid is not _MISSING
            and ask is not _MISSING
            and last is not _MISSING
            and stamp is not _MISSING
        ):
            return TickerEvent(
                channel,
                received_at_ns,
                connection_id,
                seq,
                raw,
                str(symbol),
                _float(bid),
                _float(ask),
                _float(last),
                _epoch_ms(stamp, m.unit),
            )
    # the general way: nested paths, and a field missing named by its setting
    (sym_path, sym_compiled, sym_setting), *prices = m.ticker
    symbol = key if sym_path == EACH else _get(message, sym_compiled)
    if symbol is _MISSING and key is not None:
        symbol = key  # an element keyed by its pair, without the field
    if symbol is _MISSING or symbol is None or symbol == "":
        raise _mismatch(what, message, sym_path, sym_setting, channel)
    values = []
    for path, compiled, setting in prices:
        value = _get(message, compiled)
        if value is _MISSING:
            raise _mismatch(what, message, path, setting, channel)
        values.append(_float(value))  # "" or null: the service has no price (NaN)
    bid, ask, last = values
    return TickerEvent(
        channel=channel,
        received_at_ns=received_at_ns,
        connection_id=connection_id,
        seq=seq,
        raw=raw,
        symbol=str(symbol),
        bid=bid,
        ask=ask,
        last=last,
        timestamp=_time(m, message, m.ticker_time, "payloads.ticker_time", what),
    )


def _status_raw(order: Mapping[str, Any]) -> str:
    """The ``status`` of an order body as sent, as text ("" when it has none)."""
    value = order.get("status")
    return "" if value is None else str(value)


def _order_ms(value: Any, unit: str) -> int:
    """``updatedAt`` of a notification in Unix milliseconds; 0 (unknown) when missing,
    empty, 0 or not a Unix time."""
    try:
        return _epoch_ms(value, unit)
    except ValueError:
        return 0


def _order_mismatch(order: Mapping[str, Any], field: str, channel: str) -> PayloadMismatch:
    if field == "id":
        names = ", ".join(repr(n) for n in ID_CANDIDATES if n != "id")
        value = id_value(order)
        what = (
            f"no order id ('id', nor any of {names})"
            if value is None
            else f"no usable order id (its id {order_id_problem(value)}; an id is text or "
            "an integer)"
        )
    else:
        name = "'status'" if field == "status" else "'updatedAt' that is a Unix time"
        got = f" (got {order[field]!r})" if field in order else ""
        what = f"no {name}{got}"
    return PayloadMismatch(
        f"{channel} notification has {what} (spec 2.4: a base field of every order); "
        f"fields present: {_present(order)}",
        channel=channel,
        setting=f"{channel}.{field}",
    )


def order_event(
    order: Mapping[str, Any],
    *,
    received_at_ns: int,
    connection_id: str = "",
    seq: int = 0,
    raw: dict[str, Any] | None = None,
    reconciled: bool = False,
    channel: str = "watchorders",
    profile: ServiceProfile = DEFAULT_PROFILE,
    strict: bool = False,
) -> OrderEvent:
    """An OrderEvent for an order object (a notification or a fetchOrder response).

    ``updated_at_ms`` is ``updatedAt`` in milliseconds (seconds detected by magnitude
    under the profile's ``orders.timestamp_unit`` ``auto``), 0 when the body has none.

    With ``strict`` (a ``watchOrders`` notification), a body without an order id, a
    ``status`` or an ``updatedAt`` that is a Unix time (not 0) raises PayloadMismatch
    naming the field (``setting`` ``watchorders.id``, ``.status``, ``.updatedAt``).
    Without it (a REST read) the id and status are then "" and the time 0, which
    ``OrderBook.apply`` refuses to put over a known state; a time that is not one raises
    ValueError."""
    status_raw = _status_raw(order)
    status = canonical_status(status_raw)
    order_id = order_id_of(order)
    unit = profile.orders.timestamp_unit
    if strict:
        updated = _order_ms(order.get("updatedAt"), unit)
        for field, value in (("id", order_id), ("status", status), ("updatedAt", updated)):
            if not value:
                raise _order_mismatch(order, field, channel)
    else:
        updated = _epoch_ms(order.get("updatedAt"), unit)
    return OrderEvent(
        channel=channel,
        received_at_ns=received_at_ns,
        connection_id=connection_id,
        seq=seq,
        raw=raw,
        order_id=order_id,
        status=status,
        status_raw=status_raw,
        updated_at_ms=updated,
        order=with_id(order, order_id),
        reconciled=reconciled,
    )


def _list(message: Any, path: ListPath, setting: str, channel: str) -> list[tuple[str | None, Any]]:
    """The items of a list setting, each with the key it was under (None in a list)."""
    items = _get(message, path[1])
    if isinstance(items, list):
        return [(None, item) for item in items]
    if path[2] and isinstance(items, Mapping):
        return [(str(key), item) for key, item in items.items()]
    if items is None:
        return []  # the service said "no items"
    raise _mismatch(f"{channel} payload", message, path[0] or "(itself)", setting, channel)


def _objects(
    items: list[tuple[str | None, Any]], what: str, setting: str, channel: str
) -> list[tuple[str | None, Any]]:
    """``items`` when each is an object; else PayloadMismatch naming the first that is not
    (one bad element spoils the message, as one missing a field does)."""
    for i, (key, item) in enumerate(items):
        if not isinstance(item, Mapping):
            where = f"{i}" if key is None else f"{key!r}"
            raise PayloadMismatch(
                f"{channel} {what} {where} is {_kind(item)}, not an object (profile {setting})",
                channel=channel,
                setting=setting,
            )
    return items


def _balances(message: Any, m: _Mapping, channel: str) -> tuple[dict[str, Any], ...]:
    out = []
    items = _list(message, m.balance_list, "payloads.balance_list", channel)
    for key, item in _objects(items, "balance", "payloads.balance_list", channel):
        balance = dict(item)
        for canonical, path, compiled, setting in m.balance:
            value = (_MISSING if key is None else key) if path == EACH else _get(item, compiled)
            if value is _MISSING and key is not None and canonical == "asset":
                value = key  # a balance keyed by its asset, without the field
            if value is _MISSING:
                raise _mismatch(f"{channel} balance", item, path, setting, channel)
            balance[canonical] = value
        out.append(balance)
    return tuple(out)


def event_from_message(
    raw: dict[str, Any],
    *,
    received_at_ns: int,
    connection_id: str,
    seq: int,
    profile: ServiceProfile = DEFAULT_PROFILE,
    strict: bool = False,
) -> Event:
    """The typed event of one data message ``{"channel", "message"}``, its payload read
    where ``profile.payloads`` says.

    Decimal strings of tickers become floats; times become Unix milliseconds; order
    statuses get one canonical case with the original kept; balances get the canonical
    keys ``asset``/``free``/``locked``/``total`` beside the fields as sent. A channel this
    version does not know gives a RawEvent.

    A payload that lacks a field the profile maps never becomes an event with an empty
    symbol or NaN prices, nor an order notification without an id, a status or an
    ``updatedAt`` an OrderEvent, nor a payload (or list element) that is not an object
    an empty event: it gives a RawEvent whose ``error`` names the field and the profile
    setting or spec field (logged once per setting, not per message), or, with
    ``strict``, raises PayloadMismatch. Raises ValueError when ``raw`` is not a data
    message or a field cannot be converted (a price that is not a number, a boolean
    included).
    """
    if not isinstance(raw, Mapping) or "channel" not in raw:
        raise ValueError("not a data message: expected an object with 'channel' and 'message'")
    channel = str(raw["channel"]).lower()
    message = raw.get("message")
    m = _DEFAULT_MAPPING if profile is DEFAULT_PROFILE else _mapping(profile)
    try:
        if channel == "watchticker":
            what = "watchticker payload"
            return _ticker(message, m, channel, received_at_ns, connection_id, seq, raw, what)
        if channel == "watchorders":
            if not isinstance(message, Mapping):
                raise PayloadMismatch(
                    f"watchorders payload is {_kind(message)}, not an object (spec 2.4: "
                    "an order notification)",
                    channel=channel,
                    setting="watchorders.message",
                )
            return order_event(
                message,
                received_at_ns=received_at_ns,
                connection_id=connection_id,
                seq=seq,
                raw=raw,
                channel=channel,
                profile=profile,
                strict=True,
            )
        common: dict[str, Any] = {
            "channel": channel,
            "received_at_ns": received_at_ns,
            "connection_id": connection_id,
            "seq": seq,
            "raw": raw,
        }
        if channel == "watchtickers":
            what = "watchtickers element"
            items = _list(message, m.tickers_list, "payloads.tickers_list", channel)
            tickers = tuple(
                _ticker(t, m, channel, received_at_ns, connection_id, seq, None, what, key)
                for key, t in _objects(items, "element", "payloads.tickers_list", channel)
            )
            return TickersEvent(**common, tickers=tickers)
        if channel == "watchbalance":
            balances = _balances(message, m, channel)
            stamp = _time(m, message, m.balance_time, "payloads.balance_time", "watchbalance")
            return BalanceEvent(**common, balances=balances, timestamp=stamp)
    except PayloadMismatch as exc:
        if strict:
            raise
        _report_once(profile, exc.setting, str(exc))
        return RawEvent(channel, received_at_ns, connection_id, seq, raw, message, str(exc))
    return RawEvent(channel, received_at_ns, connection_id, seq, raw, message)
