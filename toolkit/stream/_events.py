"""Typed events of the WebSocket channels and of the stream session itself, and
``event_from_message`` that builds them from data messages (live or replayed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "FINAL_STATUSES",
    "BalanceEvent",
    "Event",
    "OrderEvent",
    "RawEvent",
    "SessionEvent",
    "SessionKind",
    "TickerEvent",
    "TickersEvent",
    "canonical_status",
    "event_from_message",
    "order_event",
]

#: statuses after which an order never changes again (market: closed, rejected, expired;
#: limit: CLOSED, EXPIRED, CANCELLED, REJECTED). EXECUTED and CANCELLING still move on.
FINAL_STATUSES = frozenset({"CLOSED", "REJECTED", "EXPIRED", "CANCELLED"})

SessionKind = Literal[
    "connected", "disconnected", "subscribed", "unsubscribed", "resubscribed", "gap", "dropped"
]


@dataclass(frozen=True, slots=True)
class TickerEvent:
    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: dict[str, Any] | None
    symbol: str
    bid: float
    ask: float
    last: float
    timestamp: int


@dataclass(frozen=True, slots=True)
class TickersEvent:
    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: dict[str, Any] | None
    tickers: tuple[TickerEvent, ...]


@dataclass(frozen=True, slots=True)
class OrderEvent:
    """A status of one order: ``status`` is canonical uppercase, ``status_raw`` as sent.
    ``reconciled`` is True when the state was read over REST rather than notified."""

    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: dict[str, Any] | None
    order_id: str
    status: str
    status_raw: str
    updated_at_ms: int
    order: dict[str, Any]
    reconciled: bool = False

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES


@dataclass(frozen=True, slots=True)
class BalanceEvent:
    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: dict[str, Any] | None
    balances: tuple[dict[str, Any], ...]
    timestamp: int


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """What happened to the connection. A ``gap`` spans from the moment a drop was
    noticed (``gap_start_ns``) to the moment every subscription was restored
    (``gap_end_ns``): data may be missing in between."""

    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: dict[str, Any] | None
    kind: SessionKind
    detail: str = ""
    gap_start_ns: int | None = None
    gap_end_ns: int | None = None


@dataclass(frozen=True, slots=True)
class RawEvent:
    """A data message of a channel this version does not know; kept, never dropped."""

    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: dict[str, Any] | None
    message: Any


Event = TickerEvent | TickersEvent | OrderEvent | BalanceEvent | SessionEvent | RawEvent


def canonical_status(status: Any) -> str:
    """One case for every status (``closed`` and ``CLOSED`` are the same state)."""
    return str(status or "").strip().upper()


def _float(value: Any) -> float:
    if value is None or value == "":
        return float("nan")
    return float(value)


def _int(value: Any) -> int:
    if value is None or value == "":
        return 0
    return int(float(value))


def _ticker(
    message: Mapping[str, Any],
    channel: str,
    received_at_ns: int,
    connection_id: str,
    seq: int,
    raw: dict[str, Any] | None,
) -> TickerEvent:
    return TickerEvent(
        channel=channel,
        received_at_ns=received_at_ns,
        connection_id=connection_id,
        seq=seq,
        raw=raw,
        symbol=str(message.get("symbol", "")),
        bid=_float(message.get("bid")),
        ask=_float(message.get("ask")),
        last=_float(message.get("last")),
        timestamp=_int(message.get("timestamp")),
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
) -> OrderEvent:
    """An OrderEvent for an order object (a notification or a fetchOrder response)."""
    status_raw = str(order.get("status", ""))
    return OrderEvent(
        channel=channel,
        received_at_ns=received_at_ns,
        connection_id=connection_id,
        seq=seq,
        raw=raw,
        order_id=str(order.get("id", "")),
        status=canonical_status(status_raw),
        status_raw=status_raw,
        updated_at_ms=_int(order.get("updatedAt")),
        order=dict(order),
        reconciled=reconciled,
    )


def event_from_message(
    raw: dict[str, Any], *, received_at_ns: int, connection_id: str, seq: int
) -> Event:
    """The typed event of one data message ``{"channel", "message"}``.

    Decimal strings of tickers become floats; order statuses get one canonical case with
    the original kept. A channel this version does not know gives a RawEvent. Raises
    ValueError when ``raw`` is not a data message or a field cannot be converted.
    """
    if not isinstance(raw, Mapping) or "channel" not in raw:
        raise ValueError("not a data message: expected an object with 'channel' and 'message'")
    channel = str(raw["channel"]).lower()
    message = raw.get("message")
    common: dict[str, Any] = {
        "channel": channel,
        "received_at_ns": received_at_ns,
        "connection_id": connection_id,
        "seq": seq,
        "raw": raw,
    }
    if channel == "watchticker" and isinstance(message, Mapping):
        return _ticker(message, channel, received_at_ns, connection_id, seq, raw)
    if channel == "watchtickers" and isinstance(message, Mapping):
        tickers = tuple(
            _ticker(t, channel, received_at_ns, connection_id, seq, None)
            for t in message.get("tickers") or ()
            if isinstance(t, Mapping)
        )
        return TickersEvent(**common, tickers=tickers)
    if channel == "watchorders" and isinstance(message, Mapping):
        return order_event(
            message,
            received_at_ns=received_at_ns,
            connection_id=connection_id,
            seq=seq,
            raw=raw,
            channel=channel,
        )
    if channel == "watchbalance" and isinstance(message, Mapping):
        balances = tuple(dict(b) for b in message.get("balances") or () if isinstance(b, Mapping))
        return BalanceEvent(**common, balances=balances, timestamp=_int(message.get("timestamp")))
    return RawEvent(**common, message=message)
