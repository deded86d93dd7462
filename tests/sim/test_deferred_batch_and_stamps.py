"""Simulator, over real HTTP: a cancel recorded through the batch route while the order
executes is honoured on a re-arm without a CANCELLING event (spec 3.2: a batch cancel
produces none), and the ``updated_at_resolution_ms`` knob stamps ``updatedAt`` in whole
seconds, so several states of one second share it (the case reconciliation must survive)."""

from __future__ import annotations

from functools import partial

import _helpers
import httpx
import pytest
from _helpers import cancel, create_limit_id, fetch_order

from toolkit.sim import Simulator
from toolkit.sim._knobs import check_knob

wait_status = partial(_helpers.wait_status, timeout=10, poll=0.02)


def batch_cancel(http: httpx.Client, *order_ids: str) -> list[dict[str, object]]:
    resp = http.post("/orders/limit/orders/cancel", json={"profileId": "P1", "orderIds": order_ids})
    assert resp.status_code == 202, resp.text
    results: list[dict[str, object]] = resp.json()["orders"]
    return results


@pytest.mark.parametrize("executing", ["TRIGGERED", "PROCESSING"])
def test_a_deferred_batch_cancel_is_honoured_without_cancelling(
    fresh_sim: Simulator, fresh_http: httpx.Client, executing: str
) -> None:
    order_id = create_limit_id(fresh_http)
    fresh_sim.control.advance(order_id, executing)
    assert [r["accepted"] for r in batch_cancel(fresh_http, order_id)] == [False]
    # a later single request is not recorded over the batch one
    assert cancel(fresh_http, order_id).status_code == 409
    fresh_sim.control.advance(order_id, "OPEN")  # re-arm: the recorded cancel is honoured
    wait_status(fresh_http, order_id, "CANCELLED")
    events = fresh_sim.control.events(order_id)
    assert events[-2:] == ["OPEN", "CANCELLED"] and "CANCELLING" not in events, events
    assert executing in events


def test_a_deferred_single_cancel_still_publishes_cancelling(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    order_id = create_limit_id(fresh_http)
    fresh_sim.control.advance(order_id, "TRIGGERED")
    assert cancel(fresh_http, order_id).status_code == 409
    assert [r["accepted"] for r in batch_cancel(fresh_http, order_id)] == [False]
    fresh_sim.control.advance(order_id, "OPEN")
    wait_status(fresh_http, order_id, "CANCELLED")
    assert fresh_sim.control.events(order_id)[-3:] == ["OPEN", "CANCELLING", "CANCELLED"]


def test_whole_second_stamps_tie_within_a_second_and_never_go_back(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    fresh_sim.control.set_knobs(updated_at_resolution_ms=1000)
    order_id = create_limit_id(fresh_http)
    opened = fetch_order(fresh_http, order_id)
    fresh_sim.control.advance(order_id, "TRIGGERED")
    triggered = fetch_order(fresh_http, order_id)
    fresh_sim.control.advance(order_id, "OPEN")
    rearmed = fetch_order(fresh_http, order_id)
    stamps = [o["updatedAt"] for o in (opened, triggered, rearmed)]
    # a new order's first stamp is the next whole second, so the next ones share it
    # for at least a second
    assert len(set(stamps)) == 1 and stamps[0] % 1000 == 0, stamps
    assert stamps[0] >= opened["createdAt"]
    fresh_sim.control.set_knobs(updated_at_resolution_ms=1)
    fresh_sim.control.advance(order_id, "TRIGGERED")
    assert fetch_order(fresh_http, order_id)["updatedAt"] > stamps[0]  # strictly again


def test_the_resolution_knob_is_checked() -> None:
    assert check_knob("updated_at_resolution_ms", 1000) == 1000
    for bad in (0, 2.5, True, "1000"):
        with pytest.raises(ValueError, match="knob updated_at_resolution_ms"):
            check_knob("updated_at_resolution_ms", bad)
