"""Cancelling limit orders on the simulator over real HTTP: every case of spec 3.2 / 4.3
(202, the three 409s, the deferred cancel honoured on re-arm), profiles, scoping, batch."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import _helpers
import httpx
import pytest
from _helpers import cancel, create_limit_id, order_status, session

from toolkit.sim import Simulator

#: this module waits up to 10 s, polling every 20 ms
wait_status = partial(_helpers.wait_status, timeout=10, poll=0.02)


def test_open_order_cancels_202_then_cancelled(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    order_id = create_limit_id(fresh_http)
    before = time.time() * 1000
    resp = cancel(fresh_http, order_id, reason="changed my mind")
    assert resp.status_code == 202
    body = resp.json()
    assert body["id"] == order_id and body["status"] == "CANCELLING"
    assert body["cancelRequestedAt"] >= before - 1
    wait_status(fresh_http, order_id, "CANCELLED")
    order = fresh_http.get("/orders/fetchOrder", params={"orderId": order_id}).json()
    assert order["statusGroup"] == "FINALIZED"
    assert order["statusReason"] == "changed my mind"
    assert fresh_sim.control.events(order_id) == ["OPEN", "CANCELLING", "CANCELLED"]


def test_cancel_while_cancelling_is_409(fresh_sim: Simulator, fresh_http: httpx.Client) -> None:
    fresh_sim.control.set_knobs(cancel_completion_s=30)
    order_id = create_limit_id(fresh_http)
    assert cancel(fresh_http, order_id).status_code == 202
    again = cancel(fresh_http, order_id)
    assert again.status_code == 409
    assert "already" in again.json()["message"]
    assert order_status(fresh_http, order_id) == "CANCELLING"


@pytest.mark.parametrize("final", ["CLOSED", "EXPIRED", "REJECTED"])
def test_cancel_of_a_finalized_order_is_409_and_not_recorded(
    fresh_sim: Simulator, fresh_http: httpx.Client, final: str
) -> None:
    order_id = create_limit_id(fresh_http)
    fresh_sim.control.advance(order_id, final)
    events = fresh_sim.control.events(order_id)
    resp = cancel(fresh_http, order_id)
    assert resp.status_code == 409
    assert "finalized" in resp.json()["message"]
    assert fresh_sim.control.events(order_id) == events
    assert (
        "cancelRequestedAt"
        not in fresh_http.get("/orders/fetchOrder", params={"orderId": order_id}).json()
    )


def test_cancel_of_a_cancelled_order_is_409(fresh_sim: Simulator, fresh_http: httpx.Client) -> None:
    order_id = create_limit_id(fresh_http)
    cancel(fresh_http, order_id)
    wait_status(fresh_http, order_id, "CANCELLED")
    assert cancel(fresh_http, order_id).status_code == 409


@pytest.mark.parametrize("executing", ["TRIGGERED", "PROCESSING"])
def test_cancel_while_executing_is_409_and_honoured_on_rearm(
    fresh_sim: Simulator, fresh_http: httpx.Client, executing: str
) -> None:
    order_id = create_limit_id(fresh_http)
    fresh_sim.control.advance(order_id, executing)
    resp = cancel(fresh_http, order_id)
    assert resp.status_code == 409
    assert "recorded" in resp.json()["message"]
    assert order_status(fresh_http, order_id) == executing
    # a second request while executing changes nothing either
    assert cancel(fresh_http, order_id).status_code == 409
    fresh_sim.control.advance(order_id, "OPEN")
    wait_status(fresh_http, order_id, "CANCELLED")
    events = fresh_sim.control.events(order_id)
    assert events[-3:] == ["OPEN", "CANCELLING", "CANCELLED"]
    assert executing in events


def test_cancel_while_executing_is_not_honoured_when_it_executes(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    order_id = create_limit_id(fresh_http)
    fresh_sim.control.advance(order_id, "PROCESSING")
    assert cancel(fresh_http, order_id).status_code == 409
    fresh_sim.control.advance(order_id, "CLOSED")
    assert order_status(fresh_http, order_id) == "closed"
    assert fresh_sim.control.events(order_id) == [
        "OPEN",
        "TRIGGERED",
        "PROCESSING",
        "EXECUTED",
        "closed",
    ]


def test_held_order_does_not_progress(fresh_sim: Simulator, fresh_http: httpx.Client) -> None:
    order_id = create_limit_id(fresh_http)
    fresh_sim.control.advance(order_id, "TRIGGERED")
    # a price that would fire every order and a few execution beats later: still held
    fresh_sim.control.move_price("BTC/BRL", "900")
    for _ in range(5):
        assert order_status(fresh_http, order_id) == "TRIGGERED"


def test_cancel_needs_the_profile_that_holds_the_order(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    order_id = create_limit_id(fresh_http)
    assert cancel(fresh_http, order_id, profileId="P2").status_code == 404
    assert cancel(fresh_http, order_id, profileId="P9").status_code == 404
    assert fresh_http.patch(f"/orders/limit/orders/{order_id}/cancel", json={}).status_code == 400
    assert fresh_http.patch(f"/orders/limit/orders/{order_id}/cancel").status_code == 400
    assert cancel(fresh_http, "l-999999-0000").status_code == 404
    p2 = create_limit_id(fresh_http, profileId="P2")
    assert cancel(fresh_http, p2, profileId="P2").status_code == 202


def test_profile_in_the_query_is_accepted(fresh_http: httpx.Client) -> None:
    order_id = create_limit_id(fresh_http)
    resp = fresh_http.patch(f"/orders/limit/orders/{order_id}/cancel", params={"profileId": "P1"})
    assert resp.status_code == 202


def test_another_account_cannot_cancel(fresh_sim: Simulator, fresh_http: httpx.Client) -> None:
    order_id = create_limit_id(fresh_http)
    other = session(fresh_sim, "other")
    assert cancel(other, order_id, profileId="P9").status_code == 404
    assert cancel(other, order_id, profileId="P1").status_code == 404
    resp = other.post(
        "/orders/limit/orders/cancel", json={"profileId": "P9", "orderIds": [order_id]}
    )
    assert resp.json()["orders"] == [{"id": order_id, "accepted": False, "status": "NOT_FOUND"}]
    other.close()
    assert order_status(fresh_http, order_id) == "OPEN"


def test_batch_cancel_has_no_cancelling_events(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    a, b, busy, done = (create_limit_id(fresh_http) for _ in range(4))
    fresh_sim.control.advance(busy, "TRIGGERED")
    fresh_sim.control.advance(done, "EXPIRED")
    resp = fresh_http.post(
        "/orders/limit/orders/cancel",
        json={"profileId": "P1", "orderIds": [a, b, busy, done, "l-999999-0000"]},
    )
    assert resp.status_code == 202
    results = resp.json()["orders"]
    assert [r["accepted"] for r in results] == [True, True, False, False, False]
    assert results[0]["status"] == results[1]["status"] == "CANCELLING"
    assert all("cancelRequestedAt" in r for r in results[:2])
    assert [r["status"] for r in results[2:]] == ["TRIGGERED", "EXPIRED", "NOT_FOUND"]
    wait_status(fresh_http, a, "CANCELLED")
    wait_status(fresh_http, b, "CANCELLED")
    for order_id in (a, b):
        assert fresh_sim.control.events(order_id) == ["OPEN", "CANCELLED"]


@pytest.mark.parametrize(
    "body",
    [{"profileId": "P1"}, {"profileId": "P1", "orderIds": []}, {"orderIds": ["x"]}],
)
def test_batch_cancel_bad_input_is_400(fresh_http: httpx.Client, body: dict[str, Any]) -> None:
    assert fresh_http.post("/orders/limit/orders/cancel", json=body).status_code == 400


def test_outcome_only_mode_publishes_just_the_execution_cycle(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    fresh_sim.control.set_knobs(limit_events="outcome_only")
    cancelled, closed = create_limit_id(fresh_http), create_limit_id(fresh_http)
    cancel(fresh_http, cancelled)
    wait_status(fresh_http, cancelled, "CANCELLED")
    fresh_sim.control.advance(closed, "CLOSED")
    assert fresh_sim.control.events(cancelled) == []
    assert fresh_sim.control.events(closed) == ["PROCESSING", "EXECUTED", "closed"]


def test_status_case_knob(fresh_sim: Simulator, fresh_http: httpx.Client) -> None:
    fresh_sim.control.set_knobs(status_case="upper")
    order_id = create_limit_id(fresh_http)
    fresh_sim.control.advance(order_id, "CLOSED")
    assert order_status(fresh_http, order_id) == "CLOSED"
    # the knob is the case of limit statuses (3.2: not shown); market ones are lowercase (3.1)
    market = fresh_sim.control.market_order(symbol="BTC/BRL", side="buy", quoteAmount="100")
    assert order_status(fresh_http, market["id"]) == "closed"
    pending = fresh_sim.control.market_order(
        symbol="BTC/BRL", side="buy", quoteAmount="100", outcome="pending"
    )
    assert order_status(fresh_http, pending["id"]) == "pending"
    fresh_sim.control.set_knobs(status_case="lower")
    assert order_status(fresh_http, order_id) == "closed"
    assert order_status(fresh_http, create_limit_id(fresh_http)) == "open"
