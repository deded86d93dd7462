"""The retry rules of one request (toolkit.client._retry), sans-I/O: what is retried, the
waits a 429's Retry-After asks (jittered, never below the backoff, within a time budget
instead of ``max_retries``); then the same rules through the transport, on a mock network
for the gateway answers the simulator never gives, and the count of requests sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.client._retry import (
    RETRY_AFTER_JITTER,
    Attempt,
    RetryState,
    default_retry_policy,
    parse_retry_after,
)
from toolkit.errors import RateLimited, ServiceUnavailable
from toolkit.sim import Simulator
from toolkit.store import OrderStore

BASE = "http://127.0.0.1:9"  # never dialled: the mock transport answers


def state(
    *, max_retries: int = 5, budget_s: float = 300.0, rng: float = 0.0, idempotent: bool = True
) -> RetryState:
    return RetryState(
        "GET" if idempotent else "POST",
        idempotent,
        max_retries=max_retries,
        backoff_base_s=0.2,
        backoff_max_s=10.0,
        retry_after_max_s=60.0,
        budget_s=budget_s,
        rng=lambda: rng,
    )


@pytest.mark.parametrize(
    ("status", "idempotent", "retried"),
    [
        (500, True, True),
        (502, True, True),
        (503, True, True),
        (504, True, True),
        (501, True, False),
        (505, True, False),
        (500, False, False),
        (502, False, False),
        (503, False, False),
        (504, False, False),
        (429, False, True),
    ],
)
def test_5xx_is_retried_on_idempotent_requests_only(
    status: int, idempotent: bool, retried: bool
) -> None:
    attempt = Attempt("GET" if idempotent else "POST", idempotent, 0, status, None)
    assert default_retry_policy(attempt) is retried


@pytest.mark.parametrize("hint", ["0", "-5", "0.0", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_a_zero_negative_or_past_retry_after_keeps_the_backoff(hint: str) -> None:
    assert parse_retry_after(hint) == 0.0
    retry = state(rng=0.0)  # the backoff's lower end: half of base * 2**attempt
    delays = [retry.delay(429, None, hint) for _ in range(4)]
    assert delays == [0.1, 0.2, 0.4, 0.8]


def test_a_retry_after_wait_is_jittered_and_never_shorter_than_asked() -> None:
    for rng, expected in [(0.0, 2.0), (0.5, 2.0 * (1 + RETRY_AFTER_JITTER / 2))]:
        assert state(rng=rng).delay(429, None, "2") == pytest.approx(expected)
    # a backoff longer than the hint wins (from the 5th attempt on: 1.6 s > 1 s)
    retry = state(rng=0.0)
    assert [retry.delay(429, None, "1") for _ in range(6)] == [1, 1, 1, 1, 1.6, 3.2]


def test_retry_after_waits_count_against_a_time_budget_not_max_retries() -> None:
    retry = state(max_retries=1, budget_s=10.0, rng=0.0)
    delays = []
    while (delay := retry.delay(429, None, "1")) is not None:
        delays.append(delay)
    # far more than max_retries=1: 1+1+1+1+1.6+3.2 = 8.8 s; the next 6.4 s would pass 10
    assert delays == [1, 1, 1, 1, 1.6, 3.2]
    assert "rate_limit_budget_s=10" in retry.reason and retry.attempts == 6


def test_a_429_without_a_readable_retry_after_counts_against_max_retries() -> None:
    for header in (None, "soon"):
        retry = state(max_retries=2, rng=0.0)
        assert retry.delay(429, None, header) == 0.1
        assert retry.delay(429, None, header) == 0.2
        assert retry.delay(429, None, header) is None


def test_a_retry_after_longer_than_retry_after_max_s_is_not_waited_for() -> None:
    retry = state()
    assert retry.delay(429, None, "3600") is None
    assert "more than retry_after_max_s=60" in retry.reason


def test_a_non_idempotent_request_is_never_retried_on_5xx_or_network_errors() -> None:
    retry = state(idempotent=False)
    for status in (500, 502, 503, 504):
        assert retry.delay(status) is None
    assert retry.delay(None, httpx.ConnectError("refused")) is None
    assert retry.attempts == 0


# -- through the transport ------------------------------------------------------------------


class FakeSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def _order(order_id: str) -> dict[str, Any]:
    return {"id": order_id, "symbol": "BTC/BRL", "status": "closed", "type": "market"}


def _client(
    handler: Callable[[httpx.Request], httpx.Response], sleep: FakeSleep, **settings: Any
) -> Client:
    return Client(
        base_url=BASE,
        profile_id="P1",
        transport=httpx.MockTransport(handler),
        sleep=sleep,
        **settings,
    )


def test_a_gateway_5xx_on_fetch_order_is_retried() -> None:
    answers = [502, 504, 500, 503]
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        if answers:
            status = answers.pop(0)
            return httpx.Response(status, text="<html>Bad Gateway</html>")
        return httpx.Response(200, json=_order("o-1"))

    sleep = FakeSleep()
    with _client(handler, sleep) as client:
        assert client.fetch_order("o-1")["id"] == "o-1"
    assert seen == ["GET"] * 5 and len(sleep.delays) == 4


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_gateway_5xx_on_create_or_cancel_is_never_resent(status: int) -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        return httpx.Response(status, json={"message": "gateway"})

    sleep = FakeSleep()
    with _client(handler, sleep) as client:
        with pytest.raises(ServiceUnavailable):
            client.create_limit_order("BTC/BRL", "buy", "100", amount="0.01")
        with pytest.raises(ServiceUnavailable):
            client.cancel_limit_order("l-000001-abcd")
        with pytest.raises(ServiceUnavailable):
            client.cancel_limit_orders(["l-000001-abcd", "l-000002-abcd"])
    assert seen == ["POST", "PATCH", "POST"] and sleep.delays == []


def test_a_zero_retry_after_is_not_a_zero_delay_retry() -> None:
    answers = [429, 429, 200]

    def handler(request: httpx.Request) -> httpx.Response:
        status = answers.pop(0)
        if status == 429:
            return httpx.Response(429, headers={"Retry-After": "0"})
        return httpx.Response(200, json=_order("o-1"))

    sleep = FakeSleep()
    with _client(handler, sleep) as client:
        client.fetch_order("o-1")
    # backoff 0.2 * 2**attempt, between half and all of it
    assert 0.1 <= sleep.delays[0] <= 0.2 and 0.2 <= sleep.delays[1] <= 0.4


def test_rate_limited_after_the_budget_says_so() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": "1"})

    sleep = FakeSleep()
    with _client(handler, sleep, max_retries=1) as client:
        client.rest.rate_limit_budget_s = 5.0
        with pytest.raises(RateLimited, match=r"rate_limit_budget_s=5\)") as info:
            client.fetch_order("o-1")
    assert info.value.retry_after == 1.0
    # more retries than max_retries=1, each at least the hint, within the budget
    assert len(sleep.delays) >= 3 and all(d >= 1.0 for d in sleep.delays)
    assert sum(sleep.delays) <= 5.0


# -- the count of requests sent -------------------------------------------------------------


def test_sent_counts_sign_ins_and_the_auth_flows_resend(fresh_sim: Simulator) -> None:
    order_id = fresh_sim.control.order_ids()[0]
    with fresh_sim.client() as client:
        client.fetch_order(order_id)  # a sign-in inside the request's auth flow, the fetch
        assert client.rest.sent == 2
        assert fresh_sim.state is not None
        fresh_sim.state.tokens.revoke_all()
        client.fetch_order(order_id)  # 401, a sign-in, the fetch again
        assert client.rest.sent == 5
        client.token()  # a valid token: nothing sent
        assert client.rest.sent == 5


def test_the_sync_summary_counts_every_request_sent(fresh_sim: Simulator, tmp_path: Any) -> None:
    ids = fresh_sim.control.order_ids(type="market")[:5]
    with fresh_sim.client() as client:
        result = OrderStore(tmp_path).sync(client, ids=ids)
    # the listing's pages, one fetch per order, and the sign-in the first request made
    assert result.requests == result.pages + result.fetched + 1
    assert f"requests {result.requests} " in result.summary()
