"""Tests of toolkit.client._transport against the simulator: retries only where safe (500,
502, 503, 504 and network errors on idempotent calls, 429 with Retry-After), backoff with
jitter on a fake sleep, timeouts, bounded concurrency, error translation, one pool per
loop."""

from __future__ import annotations

import asyncio
import math
import socket

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.client._retry import RETRY_AFTER_JITTER
from toolkit.client._transport import Attempt, Route, default_retry_policy, parse_retry_after
from toolkit.errors import (
    BadRequest,
    InvalidRequest,
    OrderNotFound,
    RateLimited,
    RouteNotActive,
    ServiceUnavailable,
    TransportError,
)
from toolkit.sim import Simulator


class FakeSleep:
    """Records the delays asked for and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def test_503_is_retried_with_growing_jittered_backoff(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(listing_503_rate=1.0)
    sleep = FakeSleep()
    client = fresh_sim.client(sleep=sleep, max_retries=4, backoff_base_s=0.1)
    with client, pytest.raises(ServiceUnavailable, match="after 4 retries") as info:
        client.list_limit_orders()
    assert info.value.status == 503 and info.value.method == "GET"
    assert len(sleep.delays) == 4
    for attempt, delay in enumerate(sleep.delays):
        assert 0.05 * 2**attempt <= delay <= 0.1 * 2**attempt


def test_503_then_success_returns_the_page(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(listing_503_rate=0.5)
    sleep = FakeSleep()
    with fresh_sim.client(sleep=sleep, max_retries=30) as client:
        items = client.list_limit_orders(limit=fresh_sim.profile.listing.page_max)
    assert items and sleep.delays  # some 503s were met and retried
    assert client.rest.retries == len(sleep.delays)


def test_429_honours_retry_after(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(rate_limit_per_s=1.0)
    sleep = FakeSleep()
    order_id = fresh_sim.control.order_ids()[0]
    with fresh_sim.client(sleep=sleep, max_retries=2) as client:
        client.rest.rate_limit_budget_s = 4.0
        client.fetch_order(order_id)  # uses the one request of this second
        with pytest.raises(RateLimited, match="rate_limit_budget_s=4") as info:
            # the fake sleep does not wait, so the limiter keeps refusing
            client.fetch_order(order_id)
    assert len(sleep.delays) >= 3  # waits the hint asked for count against the budget
    assert all(d >= 1.0 for d in sleep.delays)  # the server's hint, not the 0.2 s backoff
    assert sum(sleep.delays) <= 4.0
    assert info.value.retry_after is not None and info.value.status == 429


def test_429_retry_succeeds_after_the_hinted_wait(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(rate_limit_per_s=2.0)
    order_id = fresh_sim.control.order_ids()[0]
    slept: list[float] = []

    async def real_sleep(delay: float) -> None:  # the server's clock is real: wait its hint
        slept.append(delay)
        await asyncio.sleep(delay)

    with fresh_sim.client(sleep=real_sleep) as client:
        for _ in range(4):
            assert client.fetch_order(order_id)["id"] == order_id
    assert slept and max(slept) <= 1.0 * (1 + RETRY_AFTER_JITTER)


@pytest.mark.parametrize(
    ("status", "idempotent", "retried"),
    [
        (503, True, True),
        (503, False, False),
        (429, False, True),
        (400, True, False),
        (404, True, False),
        (409, True, False),
        (401, True, False),
        (500, True, True),
        (502, True, True),
        (504, True, True),
        (501, True, False),
        (502, False, False),
    ],
)
def test_retry_policy(status: int, idempotent: bool, retried: bool) -> None:
    attempt = Attempt("GET" if idempotent else "POST", idempotent, 0, status, None)
    assert default_retry_policy(attempt) is retried


def test_retry_after_parsing() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("garbage") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412475.0) == 5.0


def test_no_retry_on_404_and_400(sim: Simulator) -> None:
    sleep = FakeSleep()
    with sim.client(sleep=sleep) as client:
        with pytest.raises(OrderNotFound):
            client.fetch_order("m-999999-zzzz")
        with pytest.raises(BadRequest):
            # a symbol of the right form that the service does not trade
            client.create_limit_order("DOGE/BRL", "buy", "1", amount="1")
    assert sleep.delays == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_is_retried_on_get_only() -> None:
    base = f"http://127.0.0.1:{free_port()}"
    sleep = FakeSleep()

    async def token_free_get(client: Client) -> None:
        await client.rest.request("GET", "/orders/fetchOrder", route=Route.OTHER, params={"a": "b"})

    client = Client(base, sleep=sleep, max_retries=3)
    with pytest.raises(TransportError, match="4 attempt") as info:
        asyncio.run(token_free_get(client))
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert len(sleep.delays) == 3

    sleep.delays.clear()
    with pytest.raises(TransportError, match="1 attempt"):
        asyncio.run(
            client.rest.request("POST", "/orders/limit/orders", route=Route.OTHER, json_body={})
        )
    assert sleep.delays == []


def test_timeout_is_a_transport_error(fresh_sim: Simulator) -> None:
    order_id = fresh_sim.control.order_ids()[0]
    sleep = FakeSleep()
    with fresh_sim.client(sleep=sleep, timeout=0.2, max_retries=1) as client:
        client.token()
        fresh_sim.control.set_knobs(latency_ms=600)
        with pytest.raises(TransportError) as info:
            client.fetch_order(order_id)
    assert isinstance(info.value.__cause__, httpx.TimeoutException)
    assert len(sleep.delays) == 1


def test_route_not_active(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(limit_routes_active=False)
    with fresh_sim.client() as client:
        with pytest.raises(RouteNotActive, match="published but not active in this environment"):
            client.list_limit_orders()
        with pytest.raises(RouteNotActive, match="published but not active"):
            client.create_limit_order("BTC/BRL", "buy", "1", amount="0.01")
        with pytest.raises(RouteNotActive, match="published but not active"):
            client.cancel_limit_order("l-000001-abcd")
        with pytest.raises(RouteNotActive):
            client.cancel_limit_orders(["l-000001-abcd"])
        # fetchOrder is not a limit route: still works
        assert client.fetch_order(fresh_sim.control.order_ids()[0])


def test_concurrency_is_bounded(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(latency_ms=30)
    in_flight = 0
    peak = 0

    async def on_request(request: httpx.Request) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)

    async def on_response(response: httpx.Response) -> None:
        nonlocal in_flight
        in_flight -= 1

    ids = fresh_sim.control.order_ids()[:40]
    client = fresh_sim.client(
        concurrency=4, event_hooks={"request": [on_request], "response": [on_response]}
    )

    async def main() -> None:
        await client.atoken()
        await asyncio.gather(*(client.afetch_order(i) for i in ids))
        await client.aclose()

    asyncio.run(main())
    assert peak == 4


def test_one_client_serves_several_loops(sim: Simulator) -> None:
    order_id = sim.control.order_ids()[0]
    client = sim.client()
    for _ in range(2):
        assert asyncio.run(client.afetch_order(order_id))["id"] == order_id
    assert client.fetch_order(order_id)["id"] == order_id  # and the private loop
    client.close()


def test_a_route_url_httpx_refuses_is_an_invalid_request_naming_the_setting(
    sim: Simulator,
) -> None:
    # a newline (a multi-line TOML string) is a path httpx refuses to put in a URL
    profile = sim.profile.replace({"rest.fetch_order_path": "/orders/fetch\norder"})
    with sim.client(profile=profile, max_retries=0) as client:
        with pytest.raises(InvalidRequest, match=r"rest\.fetch_order_path and base_url"):
            client.fetch_order(sim.control.order_ids()[0])
        assert client.rest.sent == 0  # refused before anything was sent, sign-in included


def test_a_body_that_cannot_be_encoded_is_an_invalid_request(sim: Simulator) -> None:
    with sim.client() as client:
        with pytest.raises(InvalidRequest, match="cannot build the request"):
            asyncio.run(
                client.rest.request(
                    "POST", "/orders/limit/orders", route=Route.OTHER, json_body={"x": math.nan}
                )
            )
        assert client.rest.sent == 0


@pytest.mark.parametrize(
    "base_url", ["http://127.0.0.1:80x", "http://127.0.0.1:99999", "http://[::1"]
)
def test_a_base_url_no_request_could_use_is_refused_at_once(base_url: str) -> None:
    # before: accepted, then httpx.InvalidURL at the first request (or a raw ValueError)
    with pytest.raises(InvalidRequest, match="base_url is not a valid URL"):
        Client(base_url, api_key="demo", api_secret="demo-secret")
