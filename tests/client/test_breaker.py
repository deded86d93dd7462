"""The client's breaker, sans-I/O (a fake clock): when every attempt fails on the network
for ``breaker_after_s``, it opens; an answer of any status closes it; after ``after_s``
open it lets attempts through again. And through the transport, with a mock network that
times out: one TransportError naming the setting, not every request's retries."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from toolkit.client._breaker import MIN_FAILURES, Breaker
from toolkit.client._client import Client
from toolkit.errors import InvalidRequest, TransportError


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _breaker(after_s: float = 4.0) -> tuple[Breaker, FakeClock]:
    clock = FakeClock()
    return Breaker(after_s, clock=clock, wall=lambda: 1_800_000_000.0), clock


def test_it_opens_only_after_failures_spanning_the_window() -> None:
    breaker, clock = _breaker(4.0)
    sent = clock.now
    clock.now += 2.0  # the first attempts time out together: no pattern yet
    for _ in range(16):
        assert not breaker.failed(sent, "timeout")
    assert not breaker.blocked()
    retried = clock.now + 0.2
    clock.now = retried + 2.0  # their retries fail too, 4.2 s after the first was sent
    assert breaker.failed(retried, "timeout")
    assert breaker.open and breaker.blocked() and breaker.trips == 1
    message = breaker.message()
    assert "not answering" in message and "17 attempt(s)" in message
    assert "breaker_after_s=4" in message and "(4.2 s)" in message


def test_one_slow_failure_is_not_enough() -> None:
    breaker, clock = _breaker(1.0)
    sent = clock.now
    clock.now += 30.0
    assert not breaker.failed(sent, "timeout")  # one attempt is not a pattern
    assert MIN_FAILURES == 2
    assert breaker.failed(clock.now, "refused")


def test_any_answer_closes_it_and_restarts_the_count() -> None:
    breaker, clock = _breaker(4.0)
    start = clock.now
    clock.now += 3.0
    breaker.failed(start, "timeout")
    breaker.answered()  # a 503 is an answer too: the service is there
    clock.now += 3.0
    # sent before the answer: the silence counts from the answer, not from the send
    assert not breaker.failed(start, "timeout")
    clock.now += 1.5
    assert breaker.failed(clock.now - 0.1, "timeout")
    breaker.answered()
    assert not breaker.open and not breaker.blocked() and breaker.failures == 0


def test_open_it_lets_attempts_through_again_after_the_window_and_reopens_at_once() -> None:
    breaker, clock = _breaker(2.0)
    t0 = clock.now
    clock.now += 1.0
    breaker.failed(t0, "timeout")
    clock.now += 1.5
    assert breaker.failed(t0 + 1.0, "timeout")
    clock.now += 1.9
    assert breaker.blocked()
    clock.now += 0.2
    assert not breaker.blocked()  # the next call may find the service back
    assert breaker.failed(clock.now, "refused")  # it did not: open again at once
    assert breaker.blocked() and breaker.trips == 1


def test_zero_switches_it_off() -> None:
    breaker, clock = _breaker(0.0)
    for _ in range(100):
        clock.now += 10
        assert not breaker.failed(clock.now - 10, "timeout")
    assert not breaker.blocked()


@pytest.mark.parametrize("bad", [-1.0, float("inf"), float("nan"), "2", True])
def test_a_bad_setting_is_refused_naming_it(bad: Any) -> None:
    with pytest.raises(InvalidRequest, match="breaker_after_s"):
        Client(base_url="http://127.0.0.1:9", breaker_after_s=bad)


def test_the_default_is_twice_the_timeout() -> None:
    with Client(base_url="http://127.0.0.1:9", timeout=3.0) as client:
        assert client.rest.breaker.after_s == 6.0
    with Client(base_url="http://127.0.0.1:9", breaker_after_s=0) as client:
        assert not client.rest.breaker.enabled


def _silent_client(clock: FakeClock, calls: list[str], **settings: Any) -> Client:
    """A client whose network times out on every attempt, each attempt taking ``timeout``
    on the fake clock (no real waiting)."""

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        clock.now += 2.0
        raise httpx.ConnectTimeout("timed out", request=request)

    async def sleep(seconds: float) -> None:
        clock.now += seconds

    client = Client(
        base_url="http://127.0.0.1:9",
        transport=httpx.MockTransport(handler),
        sleep=sleep,
        timeout=2.0,
        max_retries=50,
        **settings,
    )
    client.rest.breaker._clock = clock  # the transport's clock, faked
    return client


def test_through_the_transport_one_error_instead_of_every_retry() -> None:
    clock = FakeClock()
    calls: list[str] = []
    with _silent_client(clock, calls) as client:
        with pytest.raises(TransportError, match="not answering") as info:
            client.fetch_order("o-1")
        # twice the timeout: the second failed attempt opens it, not the 51st
        assert len(calls) == 2
        assert "breaker_after_s=4" in str(info.value)
        # every call after it stops at once, nothing sent, while the breaker is open
        with pytest.raises(TransportError, match="not answering"):
            client.fetch_order("o-2")
        assert len(calls) == 2


def test_concurrent_calls_stop_together() -> None:
    clock = FakeClock()
    calls: list[str] = []
    client = _silent_client(clock, calls, concurrency=4)

    async def main() -> list[BaseException | None]:
        results = await asyncio.gather(
            *(client.afetch_order(f"o-{i}") for i in range(40)), return_exceptions=True
        )
        await client.aclose()
        return [r if isinstance(r, BaseException) else None for r in results]

    errors = asyncio.run(main())
    assert all(isinstance(e, TransportError) and "not answering" in str(e) for e in errors)
    assert len(calls) < 40 * 2  # most never sent; without the breaker: 40 x 51
