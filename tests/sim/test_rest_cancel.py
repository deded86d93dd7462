"""Cancelling limit orders on the simulator over real HTTP: every case of spec 3.2 / 4.3
(202, the three 409s, the deferred cancel honoured on re-arm), profiles, scoping, batch."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from toolkit.sim import Simulator


def session(sim: Simulator, key: str = "demo") -> httpx.Client:
    http = httpx.Client(base_url=sim.base_url, timeout=10)
    resp = http.post("/auth/signin", json={"apiKey": key, "apiSecret": f"{key}-secret"})
    resp.raise_for_status()
    http.headers["Authorization"] = f"Bearer {resp.json()['token']}"
    return http


@pytest.fixture
def http(fresh_sim: Simulator) -> Iterator[httpx.Client]:
    client = session(fresh_sim)
    yield client
    client.close()


def create(http: httpx.Client, profile: str = "P1") -> str:
    resp = http.post(
        "/orders/limit/orders",
        json={
            "profileId": profile,
            "symbol": "BTC/BRL",
            "side": "buy",
            "amount": "0.001",
            "limitPrice": "1000",
            "expiresAt": int((time.time() + 3600) * 1000),
        },
    )
    assert resp.status_code == 201, resp.text
    order_id: str = resp.json()["id"]
    return order_id


def cancel(http: httpx.Client, order_id: str, **body: Any) -> httpx.Response:
    body.setdefault("profileId", "P1")
    return http.patch(f"/orders/limit/orders/{order_id}/cancel", json=body)


def status(http: httpx.Client, order_id: str) -> str:
    resp = http.get("/orders/fetchOrder", params={"orderId": order_id})
    assert resp.status_code == 200
    value: str = resp.json()["status"]
    return value


def wait_status(http: httpx.Client, order_id: str, want: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while (current := status(http, order_id)) != want:
        assert time.monotonic() < deadline, f"still {current}, wanted {want}"
        time.sleep(0.02)


def test_open_order_cancels_202_then_cancelled(fresh_sim: Simulator, http: httpx.Client) -> None:
    order_id = create(http)
    before = time.time() * 1000
    resp = cancel(http, order_id, reason="changed my mind")
    assert resp.status_code == 202
    body = resp.json()
    assert body["id"] == order_id and body["status"] == "CANCELLING"
    assert body["cancelRequestedAt"] >= before - 1
    wait_status(http, order_id, "CANCELLED")
    order = http.get("/orders/fetchOrder", params={"orderId": order_id}).json()
    assert order["statusGroup"] == "FINALIZED"
    assert order["statusReason"] == "changed my mind"
    assert fresh_sim.control.events(order_id) == ["OPEN", "CANCELLING", "CANCELLED"]


def test_cancel_while_cancelling_is_409(fresh_sim: Simulator, http: httpx.Client) -> None:
    fresh_sim.control.set_knobs(cancel_completion_s=30)
    order_id = create(http)
    assert cancel(http, order_id).status_code == 202
    again = cancel(http, order_id)
    assert again.status_code == 409
    assert "already" in again.json()["message"]
    assert status(http, order_id) == "CANCELLING"


@pytest.mark.parametrize("final", ["CLOSED", "EXPIRED", "REJECTED"])
def test_cancel_of_a_finalized_order_is_409_and_not_recorded(
    fresh_sim: Simulator, http: httpx.Client, final: str
) -> None:
    order_id = create(http)
    fresh_sim.control.advance(order_id, final)
    events = fresh_sim.control.events(order_id)
    resp = cancel(http, order_id)
    assert resp.status_code == 409
    assert "finalized" in resp.json()["message"]
    assert fresh_sim.control.events(order_id) == events
    assert (
        "cancelRequestedAt"
        not in http.get("/orders/fetchOrder", params={"orderId": order_id}).json()
    )


def test_cancel_of_a_cancelled_order_is_409(fresh_sim: Simulator, http: httpx.Client) -> None:
    order_id = create(http)
    cancel(http, order_id)
    wait_status(http, order_id, "CANCELLED")
    assert cancel(http, order_id).status_code == 409


@pytest.mark.parametrize("executing", ["TRIGGERED", "PROCESSING"])
def test_cancel_while_executing_is_409_and_honoured_on_rearm(
    fresh_sim: Simulator, http: httpx.Client, executing: str
) -> None:
    order_id = create(http)
    fresh_sim.control.advance(order_id, executing)
    resp = cancel(http, order_id)
    assert resp.status_code == 409
    assert "recorded" in resp.json()["message"]
    assert status(http, order_id) == executing
    # a second request while executing changes nothing either
    assert cancel(http, order_id).status_code == 409
    fresh_sim.control.advance(order_id, "OPEN")
    wait_status(http, order_id, "CANCELLED")
    events = fresh_sim.control.events(order_id)
    assert events[-3:] == ["OPEN", "CANCELLING", "CANCELLED"]
    assert executing in events


def test_cancel_while_executing_is_not_honoured_when_it_executes(
    fresh_sim: Simulator, http: httpx.Client
) -> None:
    order_id = create(http)
    fresh_sim.control.advance(order_id, "PROCESSING")
    assert cancel(http, order_id).status_code == 409
    fresh_sim.control.advance(order_id, "CLOSED")
    assert status(http, order_id) == "closed"
    assert fresh_sim.control.events(order_id) == [
        "OPEN",
        "TRIGGERED",
        "PROCESSING",
        "EXECUTED",
        "closed",
    ]


def test_held_order_does_not_progress(fresh_sim: Simulator, http: httpx.Client) -> None:
    order_id = create(http)
    fresh_sim.control.advance(order_id, "TRIGGERED")
    # a price that would fire every order and a few execution beats later: still held
    fresh_sim.control.move_price("BTC/BRL", "900")
    for _ in range(5):
        assert status(http, order_id) == "TRIGGERED"


def test_cancel_needs_the_profile_that_holds_the_order(
    fresh_sim: Simulator, http: httpx.Client
) -> None:
    order_id = create(http)
    assert cancel(http, order_id, profileId="P2").status_code == 404
    assert cancel(http, order_id, profileId="P9").status_code == 404
    assert http.patch(f"/orders/limit/orders/{order_id}/cancel", json={}).status_code == 400
    assert http.patch(f"/orders/limit/orders/{order_id}/cancel").status_code == 400
    assert cancel(http, "l-999999-0000").status_code == 404
    p2 = create(http, profile="P2")
    assert cancel(http, p2, profileId="P2").status_code == 202


def test_profile_in_the_query_is_accepted(http: httpx.Client) -> None:
    order_id = create(http)
    resp = http.patch(f"/orders/limit/orders/{order_id}/cancel", params={"profileId": "P1"})
    assert resp.status_code == 202


def test_another_account_cannot_cancel(fresh_sim: Simulator, http: httpx.Client) -> None:
    order_id = create(http)
    other = session(fresh_sim, "other")
    assert cancel(other, order_id, profileId="P9").status_code == 404
    assert cancel(other, order_id, profileId="P1").status_code == 404
    resp = other.post(
        "/orders/limit/orders/cancel", json={"profileId": "P9", "orderIds": [order_id]}
    )
    assert resp.json()["orders"] == [{"id": order_id, "accepted": False, "status": "NOT_FOUND"}]
    other.close()
    assert status(http, order_id) == "OPEN"


def test_batch_cancel_has_no_cancelling_events(fresh_sim: Simulator, http: httpx.Client) -> None:
    a, b, busy, done = create(http), create(http), create(http), create(http)
    fresh_sim.control.advance(busy, "TRIGGERED")
    fresh_sim.control.advance(done, "EXPIRED")
    resp = http.post(
        "/orders/limit/orders/cancel",
        json={"profileId": "P1", "orderIds": [a, b, busy, done, "l-999999-0000"]},
    )
    assert resp.status_code == 202
    results = resp.json()["orders"]
    assert [r["accepted"] for r in results] == [True, True, False, False, False]
    assert results[0]["status"] == results[1]["status"] == "CANCELLING"
    assert all("cancelRequestedAt" in r for r in results[:2])
    assert [r["status"] for r in results[2:]] == ["TRIGGERED", "EXPIRED", "NOT_FOUND"]
    wait_status(http, a, "CANCELLED")
    wait_status(http, b, "CANCELLED")
    for order_id in (a, b):
        assert fresh_sim.control.events(order_id) == ["OPEN", "CANCELLED"]


@pytest.mark.parametrize(
    "body",
    [{"profileId": "P1"}, {"profileId": "P1", "orderIds": []}, {"orderIds": ["x"]}],
)
def test_batch_cancel_bad_input_is_400(http: httpx.Client, body: dict[str, Any]) -> None:
    assert http.post("/orders/limit/orders/cancel", json=body).status_code == 400


def test_outcome_only_mode_publishes_just_the_execution_cycle(
    fresh_sim: Simulator, http: httpx.Client
) -> None:
    fresh_sim.control.set_knobs(limit_events="outcome_only")
    cancelled, closed = create(http), create(http)
    cancel(http, cancelled)
    wait_status(http, cancelled, "CANCELLED")
    fresh_sim.control.advance(closed, "CLOSED")
    assert fresh_sim.control.events(cancelled) == []
    assert fresh_sim.control.events(closed) == ["PROCESSING", "EXECUTED", "closed"]


def test_status_case_knob(fresh_sim: Simulator, http: httpx.Client) -> None:
    fresh_sim.control.set_knobs(status_case="upper")
    order_id = create(http)
    fresh_sim.control.advance(order_id, "CLOSED")
    assert status(http, order_id) == "CLOSED"
    fresh_sim.control.set_knobs(status_case="lower")
    assert status(http, order_id) == "closed"
    assert status(http, create(http)) == "open"
