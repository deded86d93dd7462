"""The WebSocket side: channel rules and confirmations (sans-I/O), typed events, the
reconnecting ``StreamSession`` and the reconciled ``OrderBook``.

May import ``toolkit.errors`` and ``toolkit.protocol`` only; it reaches the REST side through
the small protocols it declares (a token source, an order source), never ``toolkit.client``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_exports

__all__ = [
    "BalanceEvent",
    "ConfirmationTimeout",
    "OrderBook",
    "OrderEvent",
    "OrderState",
    "RawEvent",
    "SessionEvent",
    "StreamClosed",
    "StreamSession",
    "StreamStats",
    "TickerEvent",
    "TickersEvent",
    "Transition",
    "event_from_message",
    "parse_channel_spec",
]

_EXPORTS = {
    "StreamSession": "toolkit.stream._session",
    "StreamStats": "toolkit.stream._session",
    "StreamClosed": "toolkit.stream._session",
    "ConfirmationTimeout": "toolkit.stream._session",
    "OrderBook": "toolkit.stream._orderbook",
    "OrderState": "toolkit.stream._orderbook",
    "Transition": "toolkit.stream._orderbook",
    "TickerEvent": "toolkit.stream._events",
    "TickersEvent": "toolkit.stream._events",
    "OrderEvent": "toolkit.stream._events",
    "BalanceEvent": "toolkit.stream._events",
    "SessionEvent": "toolkit.stream._events",
    "RawEvent": "toolkit.stream._events",
    "event_from_message": "toolkit.stream._events",
    "parse_channel_spec": "toolkit.stream._channels",
}

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.stream._channels import parse_channel_spec
    from toolkit.stream._events import (
        BalanceEvent,
        OrderEvent,
        RawEvent,
        SessionEvent,
        TickerEvent,
        TickersEvent,
        event_from_message,
    )
    from toolkit.stream._orderbook import OrderBook, OrderState, Transition
    from toolkit.stream._session import (
        ConfirmationTimeout,
        StreamClosed,
        StreamSession,
        StreamStats,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
