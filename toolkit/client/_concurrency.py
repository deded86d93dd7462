"""Adaptive concurrency for bulk reads (loaders, the order store's sync): AIMD on the number
of requests in flight, shrinking on 429 and on latency growth, honouring ``Retry-After``.

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

from toolkit.errors import InvalidRequest

T = TypeVar("T")

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


class AdaptiveLimit:
    """Additive increase, multiplicative decrease of the requests in flight.

    - starts at ``initial`` (4) and doubles every round trip (slow start: one more slot
      per success) until the first sign of congestion; from then on grows by one per
      round trip (``limit += 1/limit`` per success), at most ``max_increase_per_s`` a
      second; never above ``maximum``;
    - a 429 multiplies the limit by ``decrease`` (once per round trip: answers to requests
      sent before the last decrease do not shrink it again), but not below what the
      service just delivered (successes of the last second times the latency: the
      concurrency it sustains) nor by less than a tenth; and it freezes growth until the
      ``Retry-After`` it carried has passed;
    - a smoothed latency above ``latency_factor`` times the lowest one seen (and more
      than ``latency_slack_s`` above it: the jitter of a fast service is no queue) is a
      queue building up at the service: the same decrease;
    - ``clock`` is injectable so tests drive time without sleeping.

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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(maximum, bool) or not isinstance(maximum, int) or maximum < 1:
            raise InvalidRequest(f"concurrency must be a positive integer, not {maximum!r}")
        if not 0 < decrease < 1:
            raise InvalidRequest(f"decrease must be between 0 and 1, not {decrease!r}")
        self.maximum = maximum
        self.minimum = max(1, min(minimum, maximum))
        start = min(maximum, 4) if initial is None else initial
        self.limit = float(max(self.minimum, min(maximum, start)))
        self.decrease = decrease
        self.latency_factor = latency_factor
        self.latency_slack_s = latency_slack_s
        self.max_increase_per_s = max_increase_per_s
        self._clock = clock
        self.in_flight = 0
        self.stats = LimiterStats(peak_limit=self.limit)
        self._epoch = 0
        self._frozen_until = 0.0
        self._last_increase = clock()
        self.slow_start = True
        self._base_latency: float | None = None
        self._smoothed: float | None = None
        self._changed: asyncio.Condition | None = None
        self._delivered: collections.deque[float] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- the gate ---------------------------------------------------------------------------

    def _condition(self) -> asyncio.Condition | None:
        """The condition of the limiter's loop; None on another loop (a load running on
        the client's loop thread while another runs on the notebook's: the other one is
        not held back, as before this limiter)."""
        loop = asyncio.get_running_loop()
        if self._changed is None:
            self._changed, self._loop = asyncio.Condition(), loop
        return self._changed if loop is self._loop else None

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[Report]:
        """Hold one of the ``limit`` slots for one send; the block calls the yielded
        ``report(status, headers)`` once the service answered."""
        changed = self._condition()
        if changed is None:
            yield lambda status, headers: None
            return
        async with changed:
            await changed.wait_for(lambda: self.in_flight < int(self.limit))
            self.in_flight += 1
        epoch = self._epoch
        started = self._clock()
        answered: list[tuple[int, Mapping[str, str]]] = []
        try:
            yield lambda status, headers: answered.append((status, headers))
        finally:
            self.in_flight -= 1
            if answered:
                status, headers = answered[0]
                self.observe(status, self._clock() - started, headers.get("Retry-After"), epoch)
            async with changed:
                changed.notify_all()

    # -- the rules (sans-I/O) ---------------------------------------------------------------

    def observe(
        self, status: int, latency: float, retry_after: str | None = None, epoch: int | None = None
    ) -> None:
        """Adapt to one answer: ``status``, its ``latency`` in seconds, its Retry-After
        header, and the ``epoch`` its request was sent in."""
        now = self._clock()
        self.stats.sent += 1
        stale = epoch is not None and epoch < self._epoch
        if status == 429:
            self.stats.rate_limited += 1
            wait = _seconds(retry_after)
            if wait:
                self._frozen_until = max(self._frozen_until, now + wait)
                self.stats.waited_retry_after_s += wait
            if not stale:
                self._shrink(now, floor=self._sustained(now))
            return
        if status >= 500 or status < 200:
            return
        self._track_latency(latency)
        self._delivered.append(now)
        while self._delivered[0] < now - 1.0:  # the last second only
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
        if now < self._frozen_until:
            return
        if self.slow_start:
            step = 1.0
        else:
            elapsed = max(now - self._last_increase, 0.0)
            step = min(1.0 / self.limit, self.max_increase_per_s * elapsed)
        if step > 0 and self.limit < self.maximum:
            self.limit = min(float(self.maximum), self.limit + step)
            self._last_increase = now
            self.stats.peak_limit = max(self.stats.peak_limit, self.limit)

    def _sustained(self, now: float) -> float:
        """The concurrency the service just sustained: its successes of the last second
        times the smoothed latency."""
        while self._delivered and self._delivered[0] < now - 1.0:
            self._delivered.popleft()
        return len(self._delivered) * (self._smoothed or 0.0)

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


def _seconds(value: str | None) -> float | None:
    from toolkit.client._transport import parse_retry_after

    return parse_retry_after(value)


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
