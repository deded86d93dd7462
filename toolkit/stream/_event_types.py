"""The typed events of the WebSocket channels and of the stream session itself (built by
``toolkit.stream._events.event_from_message``, re-exported there)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

#: statuses after which an order never changes again (market: closed, rejected, expired;
#: limit: CLOSED, EXPIRED, CANCELLED, REJECTED). EXECUTED and CANCELLING still move on.
FINAL_STATUSES = frozenset({"CLOSED", "REJECTED", "EXPIRED", "CANCELLED"})

#: ``mismatch``: a recording's payloads missed a mapped field (a replayed ``_session`` row)
SessionKind = Literal[
    "connected",
    "disconnected",
    "subscribed",
    "unsubscribed",
    "resubscribed",
    "gap",
    "dropped",
    "mismatch",
]


class TickerEvent(msgspec.Struct, frozen=True):
    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: Mapping[str, Any] | None
    symbol: str
    bid: float
    ask: float
    last: float
    timestamp: int


class TickersEvent(msgspec.Struct, frozen=True):
    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: Mapping[str, Any] | None
    tickers: tuple[TickerEvent, ...]


class OrderEvent(msgspec.Struct, frozen=True):
    """A status of one order: ``status`` is canonical uppercase, ``status_raw`` as sent.
    ``reconciled`` is True when the state was read over REST rather than notified."""

    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: Mapping[str, Any] | None
    order_id: str
    status: str
    status_raw: str
    updated_at_ms: int
    order: dict[str, Any]
    reconciled: bool = False

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES


class BalanceEvent(msgspec.Struct, frozen=True):
    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: Mapping[str, Any] | None
    balances: tuple[dict[str, Any], ...]
    timestamp: int


class SessionEvent(msgspec.Struct, frozen=True):
    """What happened to the connection. A ``gap`` spans from the moment a drop was
    noticed (``gap_start_ns``) to the moment every subscription was restored
    (``gap_end_ns``): data may be missing in between."""

    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: Mapping[str, Any] | None
    kind: SessionKind
    detail: str = ""
    gap_start_ns: int | None = None
    gap_end_ns: int | None = None


class RawEvent(msgspec.Struct, frozen=True):
    """A data message kept as sent, never dropped: of a channel this version does not know
    (``error`` empty), or of a known channel whose payload does not match the profile or
    the spec (``error`` says which field is missing or of the wrong type, and which
    profile setting or spec field it is)."""

    channel: str
    received_at_ns: int
    connection_id: str
    seq: int
    raw: Mapping[str, Any] | None
    message: Any
    error: str = ""


Event = TickerEvent | TickersEvent | OrderEvent | BalanceEvent | SessionEvent | RawEvent
