"""The statuses of the service (spec 3.1, 3.2): their canonical case, the ACTIVE and
FINALIZED sets we assume, and which statuses are final."""

from __future__ import annotations

from enum import StrEnum


class LimitStatus(StrEnum):
    """The nine limit-order statuses (spec 3.2), in their canonical uppercase."""

    OPEN = "OPEN"
    TRIGGERED = "TRIGGERED"
    PROCESSING = "PROCESSING"
    CANCELLING = "CANCELLING"
    EXECUTED = "EXECUTED"
    CLOSED = "CLOSED"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"
    REJECTED = "REJECTED"


class MarketStatus(StrEnum):
    """Market-order statuses (spec 3.1); the service writes them lowercase, we compare in
    the canonical uppercase."""

    PENDING = "PENDING"
    EXECUTED = "EXECUTED"
    CLOSED = "CLOSED"
    REJECTED = "REJECTED"
    EXPIRED = "EXPIRED"


class StatusShortcut(StrEnum):
    """Filter shortcuts of the listing (spec 4.2)."""

    ACTIVE = "ACTIVE"
    FINALIZED = "FINALIZED"


ALL_LIMIT_STATUSES: tuple[str, ...] = tuple(s.value for s in LimitStatus)
#: PRODUCT.md reads the spec literally: ACTIVE "can still execute"
ACTIVE: frozenset[str] = frozenset({"OPEN", "TRIGGERED", "PROCESSING"})
#: ... and FINALIZED "no longer execute" (CANCELLING can no longer execute)
FINALIZED: frozenset[str] = frozenset(ALL_LIMIT_STATUSES) - ACTIVE
#: statuses after which an order never changes again (market and limit). Not EXECUTED:
#: "executed at the provider, awaiting finalization" (spec 3.1), it still becomes closed
#: (with the extended fields) or rejected
TERMINAL: frozenset[str] = frozenset({"CLOSED", "EXPIRED", "CANCELLED", "REJECTED"})
#: limit-order statuses that can still change: the listing filter of reconciliation (the
#: order store's sync and the order book), wider than ACTIVE (CANCELLING, EXECUTED)
LIVE_LIMIT_STATUSES: tuple[str, ...] = tuple(s for s in ALL_LIMIT_STATUSES if s not in TERMINAL)
VALID_STATUS_VALUES: tuple[str, ...] = (*ALL_LIMIT_STATUSES, "ACTIVE", "FINALIZED")


def canonical_status(raw: str) -> str:
    """The canonical (uppercase) form of a status as any channel or route writes it."""
    return raw.strip().upper()


def is_terminal(status: str) -> bool:
    """True when an order in ``status`` (any case) will never change again."""
    return canonical_status(status) in TERMINAL
