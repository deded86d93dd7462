"""The rules that keep a click on Cancel from hitting the wrong order (sans-I/O, on the
view's clock): a two-step cancel bound to one order, rows that hold still while a cancel
is armed or its outcome is shown, and outcomes kept on screen for a while."""

from __future__ import annotations

from collections.abc import Iterable

from toolkit.widgets._throttle import Clock

#: an armed Cancel waits this many seconds for its confirming click, then disarms
ARM_S = 5.0
#: a cancel's outcome stays on its row this many seconds after it last changed, even when
#: the filter no longer matches the order; the rows hold still meanwhile
HOLD_S = 5.0


class CancelGuard:
    """Which order's Cancel is armed, which outcomes are held on screen, and whether the
    rows may move.

    A first click on an order's Cancel arms that order (only one at a time: arming another
    disarms the first); a second click on the same order's button within ``arm_s`` seconds
    confirms it. A click is always for the order whose button was clicked (each order has
    its own button), never for a row position: a click on another order's button only arms
    that order. ``hold(order_id)`` keeps an outcome on screen ``hold_s`` seconds. While an
    order is armed or an outcome held, the rows are ``frozen``: the view keeps every row
    where it is, so nothing moves under the pointer between two clicks.
    """

    __slots__ = ("_arm_s", "_clock", "_hold_s", "armed", "armed_until", "held")

    def __init__(self, clock: Clock, *, arm_s: float = ARM_S, hold_s: float = HOLD_S) -> None:
        self._clock = clock
        self._arm_s = arm_s
        self._hold_s = hold_s
        self.armed: str | None = None
        self.armed_until = 0.0
        # order id -> until when its outcome is held on its row
        self.held: dict[str, float] = {}

    def click(self, order_id: str) -> bool:
        """A click on ``order_id``'s Cancel: True when it confirms an armed cancel of that
        very order (cancel it now), False when it (re-)arms it."""
        self.expire()
        if self.armed == order_id:
            self.armed = None
            return True
        self.armed = order_id
        self.armed_until = self._clock() + self._arm_s
        return False

    def disarm(self) -> str | None:
        """Disarm whatever is armed; returns the order that was."""
        armed, self.armed = self.armed, None
        return armed

    def hold(self, order_id: str) -> None:
        """Keep ``order_id``'s outcome on its row for ``hold_s`` seconds from now."""
        self.held[order_id] = self._clock() + self._hold_s

    def expire(self) -> list[str]:
        """Drop what has timed out: returns the orders it concerned (an armed one, held
        outcomes), for the view to repaint."""
        now = self._clock()
        gone = [oid for oid, until in self.held.items() if until <= now]
        for oid in gone:
            del self.held[oid]
        if self.armed is not None and self.armed_until <= now:
            gone.append(self.armed)
            self.armed = None
        return gone

    @property
    def frozen(self) -> bool:
        """Whether the rows must hold still (an order is armed or an outcome held)."""
        return self.armed is not None or bool(self.held)

    def next_deadline(self) -> float | None:
        """When the next arm or hold runs out (the view's clock), None without any."""
        deadlines: Iterable[float] = [
            *self.held.values(),
            *([self.armed_until] if self.armed is not None else []),
        ]
        return min(deadlines, default=None)


__all__ = ["ARM_S", "HOLD_S", "CancelGuard"]
