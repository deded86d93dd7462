"""The simulator's REST surface over real HTTP: signin and bearer auth, fetchOrder scoping,
field sets by status, creating limit orders, inactive routes, rate limit and latency."""

from __future__ import annotations

import time
from decimal import ROUND_HALF_UP, Decimal
from functools import partial
from typing import Any

import _helpers
import httpx
import pytest
from _helpers import BASE, EXTENDED, LIMIT, OPTIONAL_BASE, session

from toolkit.sim import Simulator

#: this module's limit orders expire a day after they are built
limit_body = partial(_helpers.limit_body, expires_in_s=86_400)


def fetch(http: httpx.Client, order_id: str) -> httpx.Response:
    return http.get("/orders/fetchOrder", params={"orderId": order_id})


# ------------------------------------------------------------------ auth
def test_signin_returns_token_and_expiry(sim: Simulator) -> None:
    resp = httpx.post(
        f"{sim.base_url}/auth/signin", json={"apiKey": "demo", "apiSecret": "demo-secret"}
    )
    assert resp.status_code == 200
    body = resp.json()
    assert set(body) == {"token", "expiresAt"}
    assert body["expiresAt"] > time.time() * 1000


@pytest.mark.parametrize(
    "creds",
    [
        {"apiKey": "demo", "apiSecret": "wrong"},
        {"apiKey": "nobody", "apiSecret": "demo-secret"},
    ],
)
def test_signin_refuses_bad_credentials(sim: Simulator, creds: dict[str, str]) -> None:
    resp = httpx.post(f"{sim.base_url}/auth/signin", json=creds)
    assert resp.status_code == 401
    assert resp.json()["message"]
    assert creds["apiSecret"] not in resp.text


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/orders/fetchOrder?orderId=x"),
        ("GET", "/orders/limit/orders"),
        ("POST", "/orders/limit/orders"),
        ("PATCH", "/orders/limit/orders/x/cancel"),
        ("POST", "/orders/limit/orders/cancel"),
    ],
)
@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic abc", "Bearer tok_forged"])
def test_every_route_needs_a_valid_bearer_token(
    sim: Simulator, method: str, path: str, header: str | None
) -> None:
    headers = {"Authorization": header} if header else {}
    resp = httpx.request(method, sim.base_url + path, headers=headers, json={})
    assert resp.status_code == 401
    assert set(resp.json()) == {"message"}


def test_expired_token_is_refused(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(token_ttl_s=0.3)
    http = session(fresh_sim)
    deadline = time.monotonic() + 10
    while http.get("/orders/limit/orders", params={"limit": 1}).status_code != 401:
        assert time.monotonic() < deadline, "token never expired"
        time.sleep(0.05)
    http.close()


# ------------------------------------------------------------------ fetchOrder
def test_fetch_order_is_scoped_to_the_account(sim: Simulator, http: httpx.Client) -> None:
    mine = sim.control.order_ids("A1")[0]
    theirs = sim.control.order_ids("A2")[0]
    assert fetch(http, mine).status_code == 200
    assert fetch(http, theirs).status_code == 404
    assert fetch(http, "m-999999-ffff").status_code == 404
    other = session(sim, "other")
    assert fetch(other, theirs).status_code == 200
    assert fetch(other, mine).status_code == 404
    other.close()
    assert http.get("/orders/fetchOrder").status_code == 400


def test_market_field_sets_by_status(sim: Simulator, http: httpx.Client) -> None:
    pending = sim.control.market_order(symbol="ETH/BRL", side="buy", outcome="pending")
    executed = sim.control.market_order(symbol="ETH/BRL", side="buy", outcome="executed")
    closed = sim.control.market_order(symbol="ETH/BRL", side="buy", quoteAmount="300")
    rejected = sim.control.market_order(symbol="ETH/BRL", side="sell", outcome="rejected")
    for order, status in (
        (pending, "pending"),
        (executed, "executed"),
        (closed, "closed"),
        (rejected, "rejected"),
    ):
        fetched = fetch(http, order["id"]).json()
        assert fetched == order
        assert fetched["status"] == status
        keys = set(fetched)
        assert keys >= BASE
        if status == "closed":
            assert keys - BASE - OPTIONAL_BASE - {"RFQ"} == EXTENDED
            assert fetched["errorMessage"] == ""
        else:
            assert keys <= BASE | OPTIONAL_BASE, keys - BASE
        if status == "rejected":
            assert fetched["errorMessage"]
        else:
            assert fetched["errorMessage"] == ""
    assert "executedAt" not in pending and "executedAt" in executed


def test_closed_order_numbers_add_up(sim: Simulator, http: httpx.Client) -> None:
    order = sim.control.market_order(symbol="BTC/BRL", side="buy", quoteAmount="5000")
    order = fetch(http, order["id"]).json()
    trades = order["trades"]
    assert trades
    cost = sum(Decimal(t["cost"]) for t in trades)
    assert Decimal(order["cost"]) == cost
    filled = sum(Decimal(t["amount"]) for t in trades)
    assert Decimal(order["filled"]) == filled
    vwap = sum((Decimal(t["price"]) * Decimal(t["amount"]) for t in trades), Decimal(0)) / filled
    assert abs(Decimal(order["average"]) - vwap) <= Decimal("0.01")
    rate = Decimal(order["fee"]["rate"])
    assert Decimal(order["fee"]["cost"]) == (rate * cost).quantize(Decimal("0.01"), ROUND_HALF_UP)
    assert sum(Decimal(t["fee"]["cost"]) for t in trades) == Decimal(order["fee"]["cost"])
    venues = [t["exchange"] for t in order["evaluatedTickers"]]
    assert len(venues) >= 4
    executing = order.get("executedExchange", order["exchange"])
    assert executing in venues


# ------------------------------------------------------------------ create
def test_create_returns_the_whole_open_order(http: httpx.Client) -> None:
    resp = http.post("/orders/limit/orders", json=limit_body(clientOrderId="c-create-1"))
    assert resp.status_code == 201
    order = resp.json()
    assert order["status"] == "OPEN"
    assert order["type"] == "limit"
    assert order["statusGroup"] == "ACTIVE"
    assert order["statusReason"] == ""
    assert order["limitPrice"] == "1000.00"
    assert set(order) >= BASE | LIMIT
    assert not EXTENDED & set(order)
    assert fetch(http, order["id"]).json() == order


def test_create_with_quote_amount(http: httpx.Client) -> None:
    resp = http.post(
        "/orders/limit/orders", json=limit_body(amount=None, quoteAmount="500", limitPrice="2000")
    )
    assert resp.status_code == 201
    assert resp.json()["amount"] == "0.25000000"


def test_duplicate_client_order_id_is_rejected(http: httpx.Client) -> None:
    first = http.post("/orders/limit/orders", json=limit_body(clientOrderId="dup-1"))
    second = http.post("/orders/limit/orders", json=limit_body(clientOrderId="dup-1"))
    assert first.json()["status"] == "OPEN"
    assert second.status_code == 201
    rejected = second.json()
    assert rejected["status"] == "REJECTED"
    assert rejected["statusReason"] == "duplicate"
    assert rejected["errorMessage"]
    assert rejected["statusGroup"] == "FINALIZED"


def test_insufficient_balance_is_rejected(sim: Simulator, http: httpx.Client) -> None:
    before = sim.control.balances()
    resp = http.post("/orders/limit/orders", json=limit_body(amount="1000", limitPrice="300000"))
    assert resp.status_code == 201
    assert resp.json()["status"] == "REJECTED"
    assert resp.json()["statusReason"] == "insufficient balance"
    assert sim.control.balances()["balances"] == before["balances"]


def test_open_order_locks_balance(sim: Simulator, http: httpx.Client) -> None:
    def brl_locked() -> Decimal:
        rows = sim.control.balances()["balances"]
        return next(Decimal(r["locked"]) for r in rows if r["asset"] == "BRL")

    before = brl_locked()
    http.post("/orders/limit/orders", json=limit_body(amount="0.5", limitPrice="1000"))
    assert brl_locked() - before == Decimal("500.00")


@pytest.mark.parametrize(
    "over",
    [
        {"symbol": "DOGE/BRL"},
        {"side": "hold"},
        {"amount": "0"},
        {"amount": "-1"},
        {"amount": "abc"},
        {"limitPrice": "0"},
        {"limitPrice": None},
        {"quoteAmount": "10"},
        {"amount": None},
        {"expiresAt": 1_000},
        {"expiresAt": "tomorrow"},
        {"profileId": None},
    ],
)
def test_create_refuses_bad_input(http: httpx.Client, over: dict[str, Any]) -> None:
    resp = http.post("/orders/limit/orders", json=limit_body(**over))
    assert resp.status_code == 400
    assert resp.json()["message"]


def test_create_in_a_profile_of_another_account_is_404(http: httpx.Client) -> None:
    assert http.post("/orders/limit/orders", json=limit_body(profileId="P9")).status_code == 404


def test_create_body_must_be_json(http: httpx.Client) -> None:
    assert http.post("/orders/limit/orders", content=b"{nope").status_code == 400


# ------------------------------------------------------------------ faults
def test_inactive_limit_routes_answer_404(fresh_sim: Simulator) -> None:
    http = session(fresh_sim)
    order_id = fresh_sim.control.order_ids()[0]
    fresh_sim.control.set_knobs(limit_routes_active=False)
    calls = [
        http.get("/orders/limit/orders"),
        http.post("/orders/limit/orders", json=limit_body()),
        http.patch(f"/orders/limit/orders/{order_id}/cancel", json={"profileId": "P1"}),
        http.post("/orders/limit/orders/cancel", json={"profileId": "P1", "orderIds": [order_id]}),
    ]
    assert [c.status_code for c in calls] == [404] * 4
    assert all(c.json()["message"] for c in calls)
    assert fetch(http, order_id).status_code == 200
    fresh_sim.control.set_knobs(limit_routes_active=True)
    assert http.get("/orders/limit/orders").status_code == 200
    http.close()


def test_rate_limit_answers_429_with_retry_after(fresh_sim: Simulator) -> None:
    http = session(fresh_sim)
    other = session(fresh_sim, "other")
    fresh_sim.control.set_knobs(rate_limit_per_s=2)
    codes = []
    for _ in range(6):
        resp = http.get("/orders/limit/orders", params={"limit": 1})
        codes.append(resp.status_code)
        if resp.status_code == 429:
            assert int(resp.headers["Retry-After"]) >= 1
            assert resp.json()["message"]
    assert 429 in codes and codes[0] == 200
    # the limit is per API key
    assert other.get("/orders/limit/orders", params={"limit": 1}).status_code == 200
    fresh_sim.control.set_knobs(rate_limit_per_s=None)
    assert http.get("/orders/limit/orders", params={"limit": 1}).status_code == 200
    http.close()
    other.close()


def test_latency_is_added_to_every_response(fresh_sim: Simulator) -> None:
    http = session(fresh_sim)
    fresh_sim.control.set_knobs(latency_ms=250)
    for call in (
        lambda: http.get("/orders/limit/orders", params={"limit": 1}),
        lambda: http.get("/orders/fetchOrder", params={"orderId": "nope"}),
    ):
        started = time.perf_counter()
        call()
        assert time.perf_counter() - started >= 0.25
    http.close()


def test_unknown_route_has_a_json_message(sim: Simulator) -> None:
    resp = httpx.get(f"{sim.base_url}/nope")
    assert resp.status_code == 404
    assert resp.json()["message"]
