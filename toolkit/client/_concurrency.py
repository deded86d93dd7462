"""Adaptive concurrency for bulk reads (loaders, the order store's sync): AIMD on the number
of requests in flight, shrinking on 429 and on latency growth, a send rate learnt from
the 429s, and a pause of every send for the ``Retry-After`` a 429 carries.

The limiter is the transport's ``gate`` (:attr:`toolkit.client._transport.AsyncRest.gate`):
it is consulted around every send, so a request sleeping before a retry holds no slot.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from toolkit.client._retry import parse_retry_after
from toolkit.errors import InvalidRequest

T = TypeVar("T")

#: a wait shorter than this is none (a clock's float steps must not spin the gate)
_TOLERANCE_S = 1e-6

#: what the transport calls once a send answered: the status and the response headers
Report = Callable[[int, Mapping[str, str]], None]


@dataclass
class LimiterStats:
    """What the limiter saw and did (for benchmarks, progress and the CLI summary)."""

    sent: int = 0
    rate_limited: int = 0
    decreases: int = 0
    peak_limit: float = 0.0
    waited_retry_after_s: float = 0.0
    #: the lowest send rate the 429s taught (requests a second); None: never paced
    rate_floor: float | None = None


class AdaptiveLimit:
    """Additive increase, multiplicative decrease of the requests in flight, and of the
    send rate once the service rate-limits.

    - starts at ``initial`` (4) and doubles every round trip (slow start: one more slot
      per success) until the first sign of congestion; from then on grows by one per
      round trip (``limit += 1/limit`` per success), at most ``max_increase_per_s`` a
      second; never above ``maximum``;
    - a 429 multiplies the limit by ``decrease`` (once per round trip: answers to requests
      sent before the last decrease do not shrink it again), but not below what the
      service just delivered (successes of the last second times the latency: the
      concurrency it sustains) nor by less than a tenth;
    - a 429 pauses every send (new ones and retries alike: the service's limit is the
      key's) until its ``Retry-After`` has passed, at least ``min_pause_s`` (a hint of 0,
      a past date or none at all is a brief pause), and freezes growth as long;
    - a 429 also caps the send rate (a token bucket, bursts of ``burst_s`` seconds' worth)
      at ``rate_decrease`` times the successes a second of the last ``rate_window_s``
      seconds: the pace the service accepted. Even one request in flight can be too
      fast for a low limit; the pace holds it. While the pace is what holds the sends
      back, it grows by ``rate_increase`` times the rate learnt, a second (additive), and
      each further 429 lowers it again (at most once a second, each time at most by
      ``decrease``, never below ``min_rate``: a service that refuses whatever the pace
      cannot stall the load);
    - a smoothed latency above ``latency_factor`` times the lowest one seen (and more
      than ``latency_slack_s`` above it: the jitter of a fast service is no queue) is a
      queue building up at the service: the same decrease of the limit;
    - ``clock`` and ``sleep`` are injectable so tests drive time without waiting.

    One limiter belongs to one event loop (the loader's or the sync's).
    """

    def __init__(
        self,
        maximum: int,
        *,
        initial: int | None = None,
        minimum: int = 1,
        decrease: float = 0.5,
        latency_factor: float = 2.5,
        latency_slack_s: float = 0.05,
        max_increase_per_s: float = 2.0,
        min_pause_s: float = 0.2,
        rate_decrease: float = 0.9,
        rate_increase: float = 0.02,
        rate_window_s: float = 5.0,
        min_rate: float = 1.0,
        burst_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if isinstance(maximum, bool) or not isinstance(maximum, int) or maximum < 1:
            raise InvalidRequest(f"concurrency must be a positive integer, not {maximum!r}")
        if not 0 < decrease < 1:
            raise InvalidRequest(f"decrease must be between 0 and 1, not {decrease!r}")
        if not 0 < rate_decrease <= 1:
            raise InvalidRequest(f"rate_decrease must be in (0, 1], not {rate_decrease!r}")
        self.maximum = maximum
        self.minimum = max(1, min(minimum, maximum))
        start = min(maximum, 4) if initial is None else initial
        self.limit = float(max(self.minimum, min(maximum, start)))
        self.decrease = decrease
        self.latency_factor = latency_factor
        self.latency_slack_s = latency_slack_s
        self.max_increase_per_s = max_increase_per_s
        self.min_pause_s = min_pause_s
        self.rate_decrease = rate_decrease
        self.rate_increase = rate_increase
        self.rate_window_s = max(1.0, rate_window_s)
        self.min_rate = min_rate
        self.burst_s = burst_s
        self._clock = clock
        self._sleep = sleep
        self.in_flight = 0
        self.stats = LimiterStats(peak_limit=self.limit)
        self._epoch = 0
        #: no send before this moment (the last 429's Retry-After); growth frozen as long
        self.paused_until = 0.0
        self._last_increase = clock()
        self.slow_start = True
        self._base_latency: float | None = None
        self._smoothed: float | None = None
        self._changed: asyncio.Condition | None = None
        self._pacing: asyncio.Lock | None = None
        self._delivered: collections.deque[float] = collections.deque()
        self._first_answer: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: the send rate (requests a second) once a 429 taught one; None: not paced
        self.rate: float | None = None
        self._rate_step = 0.0
        self._rate_relaxed_at = self._rate_cut_at = clock()
        self._tokens = 0.0
        self._tokens_at = clock()
        self._paced = False  # a send waited for the pace since the last rate increase

    # -- the gate ---------------------------------------------------------------------------

    def _condition(self) -> asyncio.Condition | None:
        """The condition of the limiter's loop; None on another loop (a load running on
        the client's loop thread while another runs on the notebook's: the other one is
        not held back, as before this limiter)."""
        loop = asyncio.get_running_loop()
        if self._changed is None:
            self._changed, self._pacing, self._loop = asyncio.Condition(), asyncio.Lock(), loop
        return self._changed if loop is self._loop else None

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[Report]:
        """Hold one of the ``limit`` slots for one send, once any pause has passed and the
        pace allows it; the block calls the yielded ``report(status, headers)`` once the
        service answered."""
        changed = self._condition()
        if changed is None:
            yield lambda status, headers: None
            return
        async with changed:
            await changed.wait_for(lambda: self.in_flight < int(self.limit))
            self.in_flight += 1
        answered: list[tuple[int, Mapping[str, str]]] = []
        try:
            await self._admit()
            epoch = self._epoch
            started = self._clock()
            yield lambda status, headers: answered.append((status, headers))
        finally:
            self.in_flight -= 1
            if answered:
                status, headers = answered[0]
                self.observe(status, self._clock() - started, headers.get("Retry-After"), epoch)
            async with changed:
                changed.notify_all()

    async def _admit(self) -> None:
        """Wait until no pause holds the sends and the pace has a token; one waiter at a
        time, in arrival order, so the sends come out spaced."""
        assert self._pacing is not None
        async with self._pacing:
            while True:
                wait = self.admit_wait()
                if wait <= 0:
                    return
                await self._sleep(wait)

    def admit_wait(self) -> float:
        """Seconds before the next send may go; 0.0: it goes now (and takes its token)."""
        now = self._clock()
        if now < self.paused_until - _TOLERANCE_S:
            return self.paused_until - now
        if self.rate is None:
            return 0.0
        capacity = max(1.0, self.rate * self.burst_s)
        self._tokens = min(capacity, self._tokens + (now - self._tokens_at) * self.rate)
        self._tokens_at = now
        if self._tokens >= 1.0 - _TOLERANCE_S * self.rate:
            self._tokens = max(0.0, self._tokens - 1.0)
            return 0.0
        self._paced = True
        return (1.0 - self._tokens) / self.rate

    # -- the rules (sans-I/O) ---------------------------------------------------------------

    def observe(
        self, status: int, latency: float, retry_after: str | None = None, epoch: int | None = None
    ) -> None:
        """Adapt to one answer: ``status``, its ``latency`` in seconds, its Retry-After
        header, and the ``epoch`` its request was sent in."""
        now = self._clock()
        self.stats.sent += 1
        if self._first_answer is None:
            self._first_answer = now
        stale = epoch is not None and epoch < self._epoch
        if status == 429:
            self.stats.rate_limited += 1
            wait = parse_retry_after(retry_after)
            if wait is not None:
                self.stats.waited_retry_after_s += wait
            self.paused_until = max(self.paused_until, now + max(wait or 0.0, self.min_pause_s))
            if not stale:
                self._learn_rate(now)
                self._shrink(now, floor=self._sustained(now))
            return
        if status >= 500 or status < 200:
            return
        self._track_latency(latency)
        self._delivered.append(now)
        while self._delivered[0] < now - self.rate_window_s:
            self._delivered.popleft()
        if (
            not stale
            and self._smoothed is not None
            and self._base_latency is not None
            and self._smoothed > self.latency_factor * self._base_latency
            and self._smoothed > self._base_latency + self.latency_slack_s
        ):
            self._shrink(now)
            # the queue drains at the lower limit: measure afresh from here
            self._smoothed = None
            return
        if now < self.paused_until:
            return
        self._relax_rate(now)
        if self.slow_start:
            step = 1.0
        else:
            elapsed = max(now - self._last_increase, 0.0)
            step = min(1.0 / self.limit, self.max_increase_per_s * elapsed)
        if step > 0 and self.limit < self.maximum:
            self.limit = min(float(self.maximum), self.limit + step)
            self._last_increase = now
            self.stats.peak_limit = max(self.stats.peak_limit, self.limit)

    def _learn_rate(self, now: float) -> None:
        """Cap the send rate below what the service accepted lately (a 429 said more is
        too much): its successes a second over the last ``rate_window_s`` seconds, times
        ``rate_decrease``; at most one cut a second, each at most by ``decrease``, never
        below ``min_rate``."""
        if self.rate is not None and now - self._rate_cut_at < 1.0:
            return  # the answers to sends at the old pace are still coming
        self._trim(now)
        span = min(self.rate_window_s, max(1.0, now - (self._first_answer or now)))
        learnt = len(self._delivered) / span * self.rate_decrease
        if self.rate is None:
            if not learnt:
                return  # refused from the first send: the pauses alone, until one passes
            self._tokens, self._tokens_at = 0.0, now
            rate = learnt
        else:
            rate = max(self.rate * self.decrease, min(self.rate, learnt))
        self.rate = max(self.min_rate, rate)
        self._rate_cut_at = self._rate_relaxed_at = now
        self._rate_step = self.rate * self.rate_increase
        self._paced = False
        floor = self.stats.rate_floor
        self.stats.rate_floor = self.rate if floor is None else min(floor, self.rate)

    def _relax_rate(self, now: float) -> None:
        """Additive increase of the send rate, while the pace is what holds sends back."""
        if self.rate is None:
            return
        if self._paced:
            since = max(self._rate_relaxed_at, self.paused_until)  # not the paused time
            self.rate += self._rate_step * max(now - since, 0.0)
            self._paced = False
        self._rate_relaxed_at = now

    def _trim(self, now: float) -> None:
        while self._delivered and self._delivered[0] < now - self.rate_window_s:
            self._delivered.popleft()

    def _sustained(self, now: float) -> float:
        """The concurrency the service just sustained: its successes of the last second
        times the smoothed latency."""
        self._trim(now)
        last_second = 0
        for moment in reversed(self._delivered):
            if moment < now - 1.0:
                break
            last_second += 1
        return last_second * (self._smoothed or 0.0)

    def _shrink(self, now: float, floor: float = 0.0) -> None:
        shrunk = max(self.limit * self.decrease, min(self.limit * 0.9, floor))
        self.limit = max(float(self.minimum), shrunk)
        self.slow_start = False
        self._epoch += 1
        self._last_increase = now
        self.stats.decreases += 1

    def _track_latency(self, latency: float) -> None:
        if latency <= 0:
            return
        if self._base_latency is None or latency < self._base_latency:
            self._base_latency = latency
        alpha = 0.1
        self._smoothed = (
            latency if self._smoothed is None else (1 - alpha) * self._smoothed + alpha * latency
        )


def check_concurrency(value: object) -> int:
    """``value`` as a concurrency (a positive int) or InvalidRequest."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRequest(f"concurrency must be a positive integer (>= 1), not {value!r}")
    return value


@contextlib.contextmanager
def gated(rest: object, limiter: AdaptiveLimit) -> Iterator[AdaptiveLimit]:
    """Install ``limiter`` as ``rest.gate`` for the block; a gate already installed (an
    outer load on the same client) is kept and shared instead."""
    current = getattr(rest, "gate", None)
    if current is not None:
        yield current
        return
    rest.gate = limiter  # type: ignore[attr-defined]
    try:
        yield limiter
    finally:
        rest.gate = None  # type: ignore[attr-defined]


async def pump(
    jobs: AsyncIterator[T],
    work: Callable[[T], Awaitable[None]],
    *,
    workers: int,
) -> None:
    """Run ``work(job)`` for every job of ``jobs`` with ``workers`` tasks, while ``jobs``
    is still producing (a bounded queue between them). The first error cancels the rest
    and is raised."""
    queue: asyncio.Queue[tuple[T] | None] = asyncio.Queue(maxsize=workers * 4)

    async def produce() -> None:
        async for job in jobs:
            await queue.put((job,))
        for _ in range(workers):
            await queue.put(None)

    async def consume() -> None:
        while (job := await queue.get()) is not None:
            await work(job[0])

    tasks = [
        asyncio.create_task(produce()),
        *(asyncio.create_task(consume()) for _ in range(workers)),
    ]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            error = task.exception()
            if error is not None:
                raise error
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        closer = getattr(jobs, "aclose", None)
        if closer is not None:
            await closer()
