"""Adaptive concurrency (AIMD): the rules on a fake clock, the gate in the transport, and
the loaders and the store's sync under the simulator's ``rate_limit_per_s``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from toolkit.client._concurrency import AdaptiveLimit, gated, pump
from toolkit.errors import InvalidRequest
from toolkit.sim import Simulator
from toolkit.store import OrderStore


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_slow_start_doubles_until_the_first_429_then_halves() -> None:
    clock = Clock()
    limit = AdaptiveLimit(64, initial=4, clock=clock)
    for _ in range(4):  # one round trip of 4 successes
        limit.observe(200, 0.05)
    assert limit.limit == 8
    limit.observe(429, 0.05, "1")
    assert limit.limit == 4 and not limit.slow_start
    assert limit.stats.rate_limited == 1 and limit.stats.decreases == 1


def test_one_decrease_per_round_trip_stale_answers_do_not_shrink_again() -> None:
    limit = AdaptiveLimit(64, initial=16, clock=Clock())
    epoch = 0
    limit.observe(429, 0.05, None, epoch)
    limit.observe(429, 0.05, None, epoch)  # sent before the decrease
    limit.observe(429, 0.05, None, epoch)
    assert limit.limit == 8
    limit.observe(429, 0.05, None, epoch + 1)  # sent after it
    assert limit.limit == 4


def test_retry_after_freezes_growth_until_it_has_passed() -> None:
    clock = Clock()
    limit = AdaptiveLimit(64, initial=8, clock=clock)
    limit.observe(429, 0.05, "2")
    assert limit.limit == 4
    clock.now += 1.0
    for _ in range(20):
        limit.observe(200, 0.05)
    assert limit.limit == 4  # still within Retry-After
    clock.now += 1.5
    limit.observe(200, 0.05)
    assert limit.limit > 4


def test_additive_increase_is_one_per_round_trip_and_capped_per_second() -> None:
    clock = Clock()
    limit = AdaptiveLimit(64, initial=8, clock=clock, max_increase_per_s=2.0)
    limit.observe(429, 0.05)  # leave slow start at 4
    for _ in range(4):
        clock.now += 10.0  # plenty of time: the per-success step rules
        limit.observe(200, 0.05)
    assert limit.limit == pytest.approx(4 + 1 / 4 + 1 / 4.25 + 1 / 4.485 + 1 / 4.708, abs=0.01)
    clock.now += 0.01  # 10 ms later: at most 2/s * 0.01 s
    before = limit.limit
    limit.observe(200, 0.05)
    assert limit.limit - before == pytest.approx(0.02)


def test_latency_growth_shrinks_the_limit() -> None:
    clock = Clock()
    limit = AdaptiveLimit(64, initial=16, clock=clock)
    for _ in range(10):
        limit.observe(200, 0.05)
    grown = limit.limit
    for _ in range(40):  # the service queues: latency climbs to 0.4 s
        limit.observe(200, 0.4)
    assert limit.limit < grown and limit.stats.decreases >= 1
    # jitter of a fast service (1 ms -> 4 ms) is no queue
    fast = AdaptiveLimit(64, initial=8, clock=clock)
    for latency in [0.001] * 5 + [0.004] * 50:
        fast.observe(200, latency)
    assert fast.stats.decreases == 0


def test_never_above_maximum_nor_below_one() -> None:
    limit = AdaptiveLimit(5, initial=50, clock=Clock())
    assert limit.limit == 5
    for epoch in range(20):
        limit.observe(429, 0.05, None, epoch)
    assert limit.limit == 1
    with pytest.raises(InvalidRequest):
        AdaptiveLimit(0)


def test_the_gate_holds_sends_to_the_limit() -> None:
    limit = AdaptiveLimit(3, initial=2, clock=Clock())
    peak = 0
    release = asyncio.Event()

    async def send() -> None:
        nonlocal peak
        async with limit.slot() as report:
            peak = max(peak, limit.in_flight)
            await release.wait()
            report(200, {})

    async def scenario() -> None:
        tasks = [asyncio.create_task(send()) for _ in range(6)]
        while limit.in_flight < 2:
            await asyncio.sleep(0)
        for _ in range(5):
            await asyncio.sleep(0)
        assert limit.in_flight == 2  # the others wait for a slot
        release.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())
    assert peak <= 3 and limit.stats.sent == 6


def test_pump_raises_the_first_error_and_cancels_the_rest() -> None:
    async def jobs():  # type: ignore[no-untyped-def]
        for i in range(100):
            yield i

    done: list[int] = []

    async def work(i: int) -> None:
        if i == 5:
            raise ValueError("job 5")
        done.append(i)
        await asyncio.sleep(0)

    with pytest.raises(ValueError, match="job 5"):
        asyncio.run(pump(jobs(), work, workers=4))
    assert len(done) < 100


def test_gated_installs_and_removes_the_gate_and_shares_an_outer_one() -> None:
    class Rest:
        gate = None

    rest = Rest()
    outer, inner = AdaptiveLimit(4), AdaptiveLimit(8)
    with gated(rest, outer) as got:
        assert got is outer and rest.gate is outer
        with gated(rest, inner) as shared:
            assert shared is outer
    assert rest.gate is None


# -- against the simulator's rate limit -----------------------------------------------------


@pytest.fixture
def limited(fresh_sim: Simulator) -> Simulator:
    fresh_sim.control.set_knobs(rate_limit_per_s=40)
    return fresh_sim


def test_loader_adapts_to_a_rate_limit_and_loses_nothing(limited: Simulator) -> None:
    # 10 a second, bursts of 10: 40 orders cannot all go through in the first second
    limited.control.set_knobs(rate_limit_per_s=10)
    ids = sorted(limited.control.order_ids(type="market"))[:40]
    with limited.client(concurrency=32) as client:
        frames = client.load_orders(ids=ids, progress=False)
        sent = client.rest.sent
    assert sorted(frames.orders["id"]) == ids and frames.missing == []
    attrs = frames.attrs
    # the limiter met the service's limit and backed off instead of holding 32 in flight
    assert 1 <= attrs["rate_limited"] < sent
    assert attrs["concurrency_peak"] < 32


def test_store_sync_adapts_to_a_rate_limit(limited: Simulator, tmp_path: Path) -> None:
    # bursts of 10: the limiter's slow start (4, 8, 16, 32 in flight) passes them within a
    # few round trips however slow the machine; at 40 a second a busy one stayed under it
    limited.control.set_knobs(rate_limit_per_s=10)
    ids = limited.control.order_ids(type="market")
    with limited.client(concurrency=32) as client:
        result = OrderStore(tmp_path).sync(client, ids=ids)
    assert result.rate_limited >= 1 and not result.missing
    assert result.new == len(ids) + len(limited.control.order_ids(type="limit"))


def test_a_send_from_another_event_loop_is_not_held_back() -> None:
    limit = AdaptiveLimit(1, initial=1, clock=Clock())

    async def hold_one() -> None:
        async with limit.slot() as report:
            # the limiter's own loop is full; a second loop (another thread's) passes
            async def other() -> None:
                async with limit.slot() as other_report:
                    other_report(200, {})

            await asyncio.to_thread(asyncio.run, other())
            report(200, {})

    asyncio.run(hold_one())
    assert limit.stats.sent == 1  # only the own loop's send is counted and adapted to


def test_a_429_does_not_cut_below_what_the_service_just_delivered() -> None:
    clock = Clock()
    limit = AdaptiveLimit(64, initial=16, clock=clock)
    limit.observe(429, 0.1)  # leave slow start: 8
    for _ in range(100):  # 100 successes a second at 0.1 s: it sustains 10 in flight
        clock.now += 0.01
        limit.observe(200, 0.1)
    limit.limit = 16.0
    limit.observe(429, 0.1, None)
    assert limit.limit == pytest.approx(10.0, rel=0.05)
    # at least a tenth off, however much was delivered
    for _ in range(400):
        clock.now += 0.0025
        limit.observe(200, 0.1)
    before = limit.limit
    limit.observe(429, 0.1, None, limit._epoch)
    assert limit.limit == pytest.approx(before * 0.9)


# -- pauses and pace (a rate limit one request in flight still exceeds) ---------------------


class FakeTime:
    """A clock and a sleep that only moves it: the gate's waits take no real time."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.slept.append(delay)
        self.now += delay
        await asyncio.sleep(0)


def _deliver(limit: AdaptiveLimit, clock: FakeTime, per_s: int, seconds: float) -> None:
    """``per_s`` successes a second for ``seconds``, 50 ms each."""
    for _ in range(round(per_s * seconds)):
        clock.now += 1.0 / per_s
        limit.observe(200, 0.05)


def test_a_429_pauses_every_send_until_its_retry_after_has_passed() -> None:
    clock = FakeTime()
    limit = AdaptiveLimit(16, initial=8, clock=clock, sleep=clock.sleep)
    limit.observe(429, 0.05, "2", epoch=0)
    limit.observe(429, 0.05, "2", epoch=0)  # a stale answer still says "wait"
    sent_at: list[float] = []

    async def send() -> None:
        async with limit.slot() as report:
            sent_at.append(clock.now)
            report(200, {})

    async def scenario() -> None:
        await asyncio.gather(*(send() for _ in range(3)))

    asyncio.run(scenario())
    assert len(sent_at) == 3 and min(sent_at) >= 102.0  # none went during the pause


@pytest.mark.parametrize("hint", ["0", "-3", "Wed, 21 Oct 2015 07:28:00 GMT", None])
def test_a_zero_past_or_missing_retry_after_is_a_brief_pause(hint: str | None) -> None:
    clock = FakeTime()
    limit = AdaptiveLimit(16, clock=clock, min_pause_s=0.2)
    limit.observe(429, 0.05, hint)
    assert limit.admit_wait() == pytest.approx(0.2)
    clock.now += 0.2
    assert limit.admit_wait() == 0.0


def test_a_429_paces_the_sends_at_the_rate_the_service_accepted() -> None:
    clock = FakeTime()
    limit = AdaptiveLimit(1, clock=clock, sleep=clock.sleep, rate_increase=0.0)
    _deliver(limit, clock, per_s=10, seconds=5)  # one in flight, 10 a second accepted
    limit.observe(429, 0.05, "1")
    rate = limit.rate
    assert rate == pytest.approx(9.0, rel=0.05)  # 0.9 of what the service accepted
    assert limit.stats.rate_floor == rate
    resume = clock.now + 1.0
    sent_at: list[float] = []

    async def sends() -> None:
        while clock.now < resume + 20.0:
            async with limit.slot() as report:
                sent_at.append(clock.now)
                report(200, {})  # an instant answer: one in flight would go unbounded

    asyncio.run(sends())
    assert min(sent_at) >= resume  # nothing during the pause
    # 20 s at the pace, plus the burst of one second's worth the bucket filled in the pause
    assert rate * 20 - 1 <= len(sent_at) <= rate * 21 + 1


def test_the_pace_relaxes_additively_only_while_it_holds_the_sends() -> None:
    clock = FakeTime()
    limit = AdaptiveLimit(64, clock=clock, rate_increase=0.02)
    _deliver(limit, clock, per_s=100, seconds=5)
    limit.observe(429, 0.05, None)
    learnt = limit.rate
    assert learnt == pytest.approx(90.0, rel=0.05)
    clock.now += 1.0
    _deliver(limit, clock, per_s=50, seconds=10)  # well under the pace: it holds nothing
    assert limit.rate == learnt
    end = clock.now + 10.0
    while clock.now < end:  # 10 s of sends faster than the pace: +2 % of it a second
        clock.now += 1.0 / 200
        while (wait := limit.admit_wait()) > 0:
            clock.now += wait
        limit.observe(200, 0.05)
    assert limit.rate == pytest.approx(learnt * (1 + 10 * 0.02), rel=0.02)


def test_the_pace_is_cut_once_a_second_by_at_most_half_never_below_min_rate() -> None:
    clock = FakeTime()
    limit = AdaptiveLimit(64, clock=clock, min_rate=1.0)
    _deliver(limit, clock, per_s=40, seconds=5)
    limit.observe(429, 0.05, None)
    learnt = limit.rate
    assert learnt == pytest.approx(36.0, rel=0.05)
    clock.now += 0.5
    limit.observe(429, 0.05, None)  # within the second: the old pace's answers
    assert limit.rate == learnt
    clock.now += 10.0
    limit.observe(429, 0.05, None)  # nothing accepted lately: halved, not to zero
    assert limit.rate == pytest.approx(learnt / 2)
    for _ in range(10):  # nothing accepted any more: halved each second, down to 1
        clock.now += 5.0
        limit.observe(429, 0.05, None)
    assert limit.rate == 1.0 and limit.stats.rate_floor == 1.0


def test_a_load_under_a_low_rate_limit_completes_with_every_order(fresh_sim: Simulator) -> None:
    # 3 a second with bursts of 3: one request in flight (10 ms) is far too fast already;
    # a single retry per request (max_retries=1) was not enough before the pause and pace
    fresh_sim.control.set_knobs(rate_limit_per_s=3, latency_ms=10)
    ids = sorted(fresh_sim.control.order_ids(type="market"))[:12]
    with fresh_sim.client(concurrency=16, max_retries=1) as client:
        client.token()
        frames = client.load_orders(ids=ids, progress=False)
    assert sorted(frames.orders["id"]) == ids and frames.missing == []
    assert 1 <= frames.attrs["rate_limited"] < len(ids)
