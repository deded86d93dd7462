"""Repaint throttle for the live views: at most ``max_hz`` repaints per second, whatever the
tick rate, driven by an injectable clock so tests run on simulated time."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]

# Float clocks drift by ulps (1000.0 + 0.05 + 0.05 < 1000.1); a nanosecond of slack keeps an
# exactly-due repaint from being refused.
_SLACK = 1e-9


class RepaintThrottle:
    """Decides when a view may repaint.

    The rule is a minimum interval of ``1 / max_hz`` seconds between two repaints, measured
    on ``clock`` (``time.monotonic`` by default; any zero-argument callable returning
    seconds). A repaint refused now is never lost: the caller keeps its rows dirty and asks
    again after :meth:`delay` seconds.
    """

    __slots__ = ("_clock", "_interval", "_last", "repaints")

    def __init__(self, max_hz: float = 10.0, clock: Clock | None = None) -> None:
        if not max_hz > 0:
            raise ValueError(f"max_hz must be positive, got {max_hz!r}")
        self._clock: Clock = clock if clock is not None else time.monotonic
        self._interval = 1.0 / float(max_hz)
        # -inf so the very first repaint is never delayed
        self._last = float("-inf")
        self.repaints = 0

    @property
    def interval(self) -> float:
        """Minimum number of seconds between two repaints."""
        return self._interval

    def now(self) -> float:
        """The throttle's clock, so views time-stamp with the same (possibly fake) time."""
        return self._clock()

    def delay(self) -> float:
        """Seconds to wait before a repaint is allowed (0.0 when allowed now)."""
        wait = self._last + self._interval - self._clock()
        return wait if wait > _SLACK else 0.0

    def ready(self) -> bool:
        """True when a repaint is allowed now."""
        return self.delay() <= 0.0

    def acquire(self) -> bool:
        """Take a repaint slot if one is free now; the caller repaints only on True."""
        now = self._clock()
        if self._last + self._interval - now > _SLACK:
            return False
        self._last = now
        self.repaints += 1
        return True
