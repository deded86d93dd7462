"""What a cancel request achieved (spec 4.3): accepted, deferred while the order executes,
already final, already cancelling, not applied; decided from the order's state, never from a
409 body."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from toolkit.client._items import _iso_ms
from toolkit.errors import InvalidResponse
from toolkit.protocol import (
    ACTIVE,
    ALL_LIMIT_STATUSES,
    FINALIZED,
    TERMINAL,
    canonical_status,
    to_epoch_ms,
)


class CancelOutcome(StrEnum):
    """The four meanings a cancel can have (spec 4.3), plus an order that is not there and
    a 2xx that did not take effect."""

    #: the order was OPEN and is now CANCELLING; CANCELLED follows asynchronously
    ACCEPTED = "accepted"
    #: 409 while TRIGGERED/PROCESSING: the service recorded the request and honours it if
    #: the order returns to OPEN. Do not resend; follow the order.
    DEFERRED = "deferred"
    #: 409 on a finalized order: nothing recorded, nothing left to cancel
    ALREADY_FINAL = "already_final"
    #: 409 on an order already CANCELLING
    ALREADY_CANCELLING = "already_cancelling"
    #: batch cancel only: the order is not in that profile of the account
    NOT_FOUND = "not_found"
    #: answered 2xx, yet the order read afterwards with fetchOrder can still execute (OPEN;
    #: or executing after a single cancel's 2xx that named no status): the cancel did not
    #: take effect, and resending it is safe (the only outcome with ``should_resend``)
    NOT_APPLIED = "not_applied"


#: the states in which a refused cancel is recorded and honoured on re-arm (spec 4.3 rule 2a;
#: OPEN: the order re-armed since the 409, the recorded request is being honoured)
_DEFERRING = frozenset({"TRIGGERED", "PROCESSING", "OPEN"})

_DESCRIPTIONS = {
    CancelOutcome.ACCEPTED: "cancel accepted; the order is CANCELLING and will not execute",
    CancelOutcome.DEFERRED: (
        "cancel recorded while the order executes; honoured if it returns to OPEN "
        "(do not resend, follow the order)"
    ),
    CancelOutcome.ALREADY_FINAL: "nothing to cancel: the order is already final",
    CancelOutcome.ALREADY_CANCELLING: "cancel already requested; the order is CANCELLING",
    CancelOutcome.NOT_FOUND: "no such order in this profile of the account",
    CancelOutcome.NOT_APPLIED: (
        "the cancel did not take effect: the order can still execute; it is safe to resend"
    ),
}

#: the states that show an accepted cancel (spec 3.2: OPEN -> CANCELLING -> CANCELLED)
_CANCELLED_OR_CANCELLING = frozenset({"CANCELLING", "CANCELLED"})


@dataclass(frozen=True)
class CancelResult:
    """The result of cancelling one order.

    ``status`` is the order's canonical status as last seen (after the 409, read with
    fetchOrder), ``order`` the body that told us (the 202 acceptance or the fetched order),
    ``cancel_requested_at`` the service's acceptance moment (ACCEPTED only).
    """

    order_id: str
    outcome: CancelOutcome
    status: str | None
    http_status: int | None = None
    cancel_requested_at: datetime | None = None
    order: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def accepted(self) -> bool:
        return self.outcome is CancelOutcome.ACCEPTED

    @property
    def should_resend(self) -> bool:
        """True for NOT_APPLIED only (a 2xx after which the order can still execute: the
        cancel did not take effect). Every other outcome either succeeded, is recorded by
        the service, or has nothing left to cancel: resending a 409 is never the answer
        (spec 4.3)."""
        return self.outcome is CancelOutcome.NOT_APPLIED

    def __str__(self) -> str:
        status = f" [{self.status}]" if self.status else ""
        return f"order {self.order_id}: {self.outcome.value}{status}: {_DESCRIPTIONS[self.outcome]}"


_log = logging.getLogger("toolkit.rest")


class _StampWarnings:
    """Rate limit of the warning about an acceptance without a readable
    ``cancelRequestedAt``: the first is a warning, then at most one every ``interval_s``
    seconds (saying how many were only logged at debug level since)."""

    def __init__(self, interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self.interval_s = interval_s
        self.clock = clock
        self._last: float | None = None
        self._quiet = 0

    def say(self, order_id: str, value: object) -> None:
        shown = repr(value) if value is not None else "none"
        text = (
            "the cancel of order %r was accepted without a readable 'cancelRequestedAt' "
            "(spec 2.6: the acceptance carries it; got %s): its cancel_requested_at is None"
        )
        now = self.clock()
        if self._last is not None and now - self._last < self.interval_s:
            self._quiet += 1
            _log.debug(text, order_id, shown[:60])
            return
        more = f" ({self._quiet} more since the last warning)" if self._quiet else ""
        self._last, self._quiet = now, 0
        _log.warning(text + more, order_id, shown[:60])


_stamp_warnings = _StampWarnings()


def _stamp_ms(value: object, unit: str) -> int | None:
    """``cancelRequestedAt`` as Unix ms, read as list items' times are
    (``ListItems._time``): a Unix time in ``unit``, or an ISO 8601 string (naive = UTC);
    None when absent or unreadable."""
    try:
        return to_epoch_ms(value, unit)
    except InvalidResponse:
        return _iso_ms(value)
    except (ValueError, OverflowError):  # "nan", "inf"
        return None


def accepted(
    order_id: str, body: Mapping[str, Any], http_status: int | None, unit: str = "auto"
) -> CancelResult:
    """The result of a 2xx cancel (or an accepted item of a batch); ``unit`` is the
    profile's ``orders.timestamp_unit``. ``cancelRequestedAt`` is read as a Unix time or
    an ISO 8601 string; when it is missing or unreadable the cancel is still accepted
    (``cancel_requested_at`` None) and a warning names the field and the order (at most
    one a minute; the others at debug level)."""
    value = body.get("cancelRequestedAt")
    ms = _stamp_ms(value, unit)
    moment: datetime | None = None
    if ms is not None:
        try:
            moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):  # a number no date can hold
            moment = None
    if moment is None:
        _stamp_warnings.say(order_id, value)
    raw_status = body.get("status")
    return CancelResult(
        order_id=order_id,
        outcome=CancelOutcome.ACCEPTED,
        status=canonical_status(raw_status) if isinstance(raw_status, str) else "CANCELLING",
        http_status=http_status,
        cancel_requested_at=moment,
        order=dict(body),
    )


def outcome_from_state(status: str, finalized: Set[str] = FINALIZED) -> CancelOutcome | None:
    """Meaning of a refused cancel given the order's current state (read after the 409);
    ``finalized`` is the FINALIZED membership (the profile's
    ``listing.finalized_statuses``). None for a status that is not one of the nine
    limit-order statuses (spec 3.2): nothing says what such a 409 meant.

    OPEN means the order was executing and re-armed since: the recorded request is being
    honoured, so it counts as deferred too.
    """
    canonical = canonical_status(status)
    if canonical == "CANCELLING":
        return CancelOutcome.ALREADY_CANCELLING
    # EXECUTED is not terminal (it awaits finalization) but it has executed: a cancel can
    # no longer take effect, whatever the profile's FINALIZED membership says
    if canonical in finalized or canonical in TERMINAL or canonical == "EXECUTED":
        return CancelOutcome.ALREADY_FINAL
    # only an executing order (or one re-armed since) has the request recorded (spec 4.3)
    if canonical in _DEFERRING:
        return CancelOutcome.DEFERRED
    return None


def _order_status(
    order_id: str,
    order: Mapping[str, Any],
    http_status: int | None,
    finalized: Set[str],
    active: Set[str],
) -> tuple[str, CancelOutcome]:
    """The canonical status of the order fetched to decide what a cancel achieved, with
    what it means after a 409 (:func:`outcome_from_state`), or InvalidResponse naming the
    order and the field (no string ``status``, or one that is not a limit-order status)."""
    raw_status = order.get("status")
    if not isinstance(raw_status, str):
        problem = "has no 'status'" if raw_status is None else "has a 'status' that is not a string"
        raise InvalidResponse(
            f"cannot tell what the cancel of order {order_id!r} achieved (answered "
            f"{http_status}): fetchOrder's body {problem} (spec 2.4: present in any status); "
            f"the order's fields: {', '.join(sorted(map(str, order))) or '(none)'}",
            order_id=order_id,
        )
    status = canonical_status(raw_status)
    outcome = outcome_from_state(status, finalized)
    if outcome is None:
        raise InvalidResponse(
            f"cannot tell what the cancel of order {order_id!r} achieved (answered "
            f"{http_status}): fetchOrder's 'status' is {raw_status!r}, none of the "
            f"limit-order statuses ({', '.join(ALL_LIMIT_STATUSES)}; the profile's "
            f"listing.active_statuses: {', '.join(sorted(active))}; "
            f"listing.finalized_statuses: {', '.join(sorted(finalized))})",
            order_id=order_id,
        )
    return status, outcome


def refused(
    order_id: str,
    order: Mapping[str, Any],
    http_status: int | None,
    finalized: Set[str] = FINALIZED,
    active: Set[str] = ACTIVE,
) -> CancelResult:
    """The result of a 409 (or a refused batch item), from the order fetched after it;
    ``active``/``finalized`` are the profile's ``listing.active_statuses`` /
    ``listing.finalized_statuses`` (named when the status is not understood).

    Raises InvalidResponse, naming the order and the field, when the order carries no
    string ``status`` (spec 2.4: present in any status) or one that is not a limit-order
    status: a guess would tell the caller "recorded, do not resend" on no evidence.
    """
    status, outcome = _order_status(order_id, order, http_status, finalized, active)
    return CancelResult(
        order_id=order_id,
        outcome=outcome,
        status=status,
        http_status=http_status,
        order=dict(order),
    )


def after_batch(
    order_id: str,
    order: Mapping[str, Any],
    http_status: int | None,
    finalized: Set[str] = FINALIZED,
    active: Set[str] = ACTIVE,
) -> CancelResult:
    """The result of an order a 2xx batch cancel did not accept (a refused item, or no
    item), from the order fetched after it: as :func:`refused`, except that an order
    still OPEN is NOT_APPLIED (the cancel did not take effect; resend). DEFERRED is what
    the service answers while the order executes, never what an OPEN order means after a
    2xx."""
    result = refused(order_id, order, http_status, finalized, active)
    if result.status == "OPEN":
        return dataclasses.replace(result, outcome=CancelOutcome.NOT_APPLIED)
    return result


def confirmed(
    order_id: str,
    answer: Mapping[str, Any],
    order: Mapping[str, Any],
    http_status: int | None,
    unit: str = "auto",
    finalized: Set[str] = FINALIZED,
    active: Set[str] = ACTIVE,
) -> CancelResult:
    """The result of a single cancel answered 2xx without a clear acceptance (an empty
    body, or no ``status`` that says CANCELLING/CANCELLED), from the order fetched after
    it: ACCEPTED only when the order reads CANCELLING or CANCELLED (``cancelRequestedAt``
    taken from ``answer`` when it has one, else from the order), ALREADY_FINAL when it
    ended otherwise, NOT_APPLIED while it can still execute (OPEN, TRIGGERED, PROCESSING:
    the 2xx did not cancel it, and a resend is safe: a 409 then says what it is).

    Raises InvalidResponse as :func:`refused` does for an order without a known status.
    """
    status, outcome = _order_status(order_id, order, http_status, finalized, active)
    if status in _CANCELLED_OR_CANCELLING:
        stamp = answer if "cancelRequestedAt" in answer else order
        body = {**order, "cancelRequestedAt": stamp.get("cancelRequestedAt")}
        result = accepted(order_id, body, http_status, unit)
        return dataclasses.replace(result, order=dict(order))
    if outcome is not CancelOutcome.ALREADY_FINAL:
        outcome = CancelOutcome.NOT_APPLIED
    return CancelResult(
        order_id=order_id,
        outcome=outcome,
        status=status,
        http_status=http_status,
        order=dict(order),
    )


def not_found(order_id: str, http_status: int | None) -> CancelResult:
    return CancelResult(
        order_id=order_id, outcome=CancelOutcome.NOT_FOUND, status=None, http_status=http_status
    )
