"""The client's circuit breaker, sans-I/O: when every request has failed with a network
error (refused, reset, timed out: never an HTTP status) for ``after_s`` seconds, the
service is taken as gone and every call stops with one TransportError saying so."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import httpx

from toolkit.errors import TransportError

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client._settings import Settings

#: failed attempts needed before the breaker may open, however long they took: one
#: attempt that timed out is not yet a pattern
MIN_FAILURES = 2


class Breaker:
    """Watches the outcome of every attempt the transport makes (all requests of one
    client share it) and opens when the service has not answered at all for a while.

    - :meth:`answered` when a status line arrives, whatever the status (a 503 is the
      service answering; the transport's response hook): closes the breaker and forgets
      the failures.
    - :meth:`failed` after an attempt that failed on the network; it opens the breaker
      once at least ``MIN_FAILURES`` attempts failed and ``after_s`` seconds passed since
      the first of them was sent (or since the last answer, if that came later) with no
      answer in between. Returns whether the breaker is open.
    - :meth:`blocked` before each attempt: while open, no attempt is sent (the caller
      raises :meth:`message`). An open breaker lets attempts through again ``after_s``
      seconds after it opened; the first of them to fail opens it again at once, the
      first answer closes it (a notebook's next call after the service came back works).

    ``after_s`` of 0 switches the breaker off. ``clock`` is monotonic seconds, ``wall``
    the wall clock (only to say since when, in the message); both injectable for tests.
    """

    def __init__(
        self,
        after_s: float,
        *,
        base_url: str = "",
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.after_s = after_s
        self.base_url = base_url
        self._clock = clock
        self._wall = wall
        #: network failures since the last answer, and when the first of them was sent
        self.failures = 0
        self.since: float | None = None
        self.last_answer: float | None = None
        self.last_error = ""
        #: when the breaker opened (None: closed)
        self.opened_at: float | None = None
        #: how many times it opened (diagnostics)
        self.trips = 0

    @classmethod
    def of(cls, settings: Settings, clock: Callable[[], float] = time.monotonic) -> Breaker:
        """The breaker ``settings`` ask for: ``breaker_after_s``, twice ``timeout`` when
        None."""
        after = settings.breaker_after_s
        return cls(
            2 * settings.timeout if after is None else after,
            base_url=settings.base_url,
            clock=clock,
        )

    def check(self, method: str, url: object) -> float:
        """Before an attempt: TransportError (nothing is sent) while the breaker is open;
        else the moment the attempt is sent, for :meth:`failed_on`."""
        if self.blocked():
            raise TransportError(self.message(), method=method, url=url)
        return self._clock()

    def failed_on(self, exc: Exception, started: float, method: str, url: object) -> None:
        """After an attempt sent at ``started`` failed with ``exc``: count it if it is a
        network failure (a body that does not decode is none; an attempt whose status
        line came, then stalled, was :meth:`answered` already), and raise the
        TransportError that stops the call, chained to ``exc``, when the breaker is open."""
        if not isinstance(exc, httpx.TransportError):
            return
        if isinstance(exc, httpx.TimeoutException):
            what = "no answer within the timeout"
        else:
            what = type(exc).__name__
        if self.failed(started, what):
            raise TransportError(self.message(), method=method, url=url) from exc

    def now(self) -> float:
        """This breaker's clock (when an attempt is sent, for :meth:`failed`)."""
        return self._clock()

    @property
    def enabled(self) -> bool:
        return self.after_s > 0

    @property
    def open(self) -> bool:
        return self.opened_at is not None

    def answered(self) -> None:
        """The service answered an attempt (any HTTP status)."""
        self.last_answer = self._clock()
        self.failures = 0
        self.since = None
        self.opened_at = None

    def failed(self, started: float, error: str) -> bool:
        """An attempt sent at ``started`` (this breaker's clock) failed on the network
        with ``error`` (a short description); returns whether the breaker is now open."""
        self.failures += 1
        self.last_error = error
        if self.since is None:
            self.since = started if self.last_answer is None else max(started, self.last_answer)
        if not self.enabled:
            return False
        now = self._clock()
        if self.failures >= MIN_FAILURES and now - self.since >= self.after_s:
            if self.opened_at is None or now - self.opened_at >= self.after_s:
                self.trips += self.opened_at is None
                self.opened_at = now
            return True
        return self.open

    def blocked(self) -> bool:
        """Whether an attempt must not be sent now (open, and not yet time to try again)."""
        if self.opened_at is None:
            return False
        return self._clock() - self.opened_at < self.after_s

    def message(self) -> str:
        """What the TransportError says: the service is not answering, since when, how
        many attempts failed, and the setting to change."""
        now = self._clock()
        since = self.since if self.since is not None else now
        silent_s = max(0.0, now - since)
        moment = datetime.fromtimestamp(self._wall() - silent_s, UTC)
        last = f" (last: {self.last_error})" if self.last_error else ""
        return (
            f"the service at {self.base_url or '?'} is not answering: every request since "
            f"{moment.isoformat(timespec='seconds')} ({silent_s:.1f} s) failed on the network, "
            f"{self.failures} attempt(s) in all{last}; the client stopped instead of trying "
            f"each remaining request (setting breaker_after_s={self.after_s:g}: raise it to "
            "wait longer, 0 turns the breaker off)"
        )
