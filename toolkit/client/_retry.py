"""The retry rules of one request, sans-I/O: which failures are retried, how long to wait
(backoff with jitter, Retry-After), and when to give up."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

#: 5xx answers retried on idempotent requests: an internal error (500), a gateway that
#: could not reach the service or gave up waiting (502, 504), the service unavailable
#: (503). Other 5xx (501 not implemented, 505 ...) say the request itself cannot work.
RETRIED_5XX = frozenset({500, 502, 503, 504})
#: a Retry-After wait is stretched by up to this share, at random, so the requests refused
#: together do not all come back at the same instant
RETRY_AFTER_JITTER = 0.2
#: the total a request may wait on 429s that carry a Retry-After (those do not count
#: against ``max_retries``): a low rate limit slows a bulk load down instead of failing it
RATE_LIMIT_BUDGET_S = 300.0


@dataclass(frozen=True)
class Attempt:
    """One failed attempt, as the retry policy sees it."""

    method: str
    idempotent: bool
    number: int  # 0 for the first try
    status: int | None  # None when the network failed
    error: Exception | None


def default_retry_policy(attempt: Attempt) -> bool:
    """Retry 429 always (a rate limiter refuses before any processing); 500, 502, 503,
    504 and network failures only on idempotent requests; never 400/401/404/409 or other
    statuses, never a non-idempotent request that may have been processed."""
    if attempt.status == 429:
        return True
    if not attempt.idempotent:
        return False
    if attempt.status in RETRIED_5XX:
        return True
    return attempt.status is None and isinstance(attempt.error, httpx.TransportError)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date); 0.0 for a
    value of zero, a negative one or a date already past; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None  # NaN: unreadable
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff(attempt: int, base_s: float, max_s: float, rng: Callable[[], float]) -> float:
    """Exponential backoff with jitter: between half and all of
    ``min(max_s, base_s * 2**attempt)``."""
    cap = min(max_s, base_s * 2 ** min(attempt, 62))
    return cap * (0.5 + 0.5 * rng())


class RetryState:
    """The retry decisions for the attempts of one request.

    :meth:`delay` takes each failed attempt and returns the seconds to wait before the
    next one, or None to give up (``reason`` then says why, for the error's message).

    - The ``policy`` decides what is retried at all (:func:`default_retry_policy`).
    - A 429 carrying a Retry-After waits ``max(hint, backoff)``, the hint stretched by up
      to ``RETRY_AFTER_JITTER`` at random (a hint of 0, negative or in the past keeps the
      backoff); these waits do not count against ``max_retries`` but must stay within
      ``budget_s`` in total; a hint above ``retry_after_max_s`` is not waited for.
    - Every other retried failure (503, a network error, a 429 without a readable
      Retry-After) waits the backoff and counts against ``max_retries``.
    """

    def __init__(
        self,
        method: str,
        idempotent: bool,
        *,
        max_retries: int,
        backoff_base_s: float,
        backoff_max_s: float,
        retry_after_max_s: float,
        budget_s: float = RATE_LIMIT_BUDGET_S,
        policy: Callable[[Attempt], bool] = default_retry_policy,
        rng: Callable[[], float],
    ) -> None:
        self.method = method
        self.idempotent = idempotent
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        self.budget_s = budget_s
        self.policy = policy
        self.rng = rng
        #: failed attempts so far (the number of the next one), retries counted against
        #: ``max_retries``, seconds waited on Retry-After hints
        self.attempts = 0
        self.counted = 0
        self.rate_limited_s = 0.0
        self.reason = ""

    def delay(
        self, status: int | None, error: Exception | None = None, retry_after: str | None = None
    ) -> float | None:
        """Seconds to wait before the next attempt after one that failed with ``status``
        (None: the network failed with ``error``) and its ``retry_after`` header; None
        to give up."""
        number = self.attempts
        if not self.policy(Attempt(self.method, self.idempotent, number, status, error)):
            self.reason = ""
            return None
        wait = backoff(number, self.backoff_base_s, self.backoff_max_s, self.rng)
        hint = parse_retry_after(retry_after) if status == 429 else None
        if hint is not None:
            if hint > self.retry_after_max_s:
                self.reason = (
                    f"; the service asked to wait {hint:g} s, more than retry_after_max_s="
                    f"{self.retry_after_max_s:g}"
                )
                return None
            wait = max(hint * (1.0 + RETRY_AFTER_JITTER * self.rng()), wait)
            if self.rate_limited_s + wait > self.budget_s:
                self.reason = (
                    f" (waited {self.rate_limited_s:.1f} s as its Retry-After asked; "
                    f"rate_limit_budget_s={self.budget_s:g})"
                )
                return None
            self.rate_limited_s += wait
        else:
            if self.counted >= self.max_retries:
                self.reason = ""
                return None
            self.counted += 1
        self.attempts += 1
        return wait
