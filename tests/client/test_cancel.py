"""Cancel results (spec 4.3) against the simulator: accepted, deferred while executing,
already final, already cancelling, decided by fetchOrder after a 409 that is never resent;
and the batch cancel, one result per order."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from toolkit.client._cancel import CancelOutcome, CancelResult, outcome_from_state
from toolkit.client._client import Client
from toolkit.errors import OrderNotFound
from toolkit.sim import Simulator


@pytest.fixture
def slow_cancel_sim(fresh_sim: Simulator) -> Iterator[Simulator]:
    # CANCELLING must hold still while a test looks at it
    fresh_sim.control.set_knobs(cancel_completion_s=60.0)
    yield fresh_sim


def counting(sim: Simulator, **kwargs: Any) -> tuple[Client, list[str]]:
    sent: list[str] = []

    async def on_request(request: httpx.Request) -> None:
        sent.append(f"{request.method} {request.url.path}")

    return sim.client(event_hooks={"request": [on_request]}, **kwargs), sent


def new_order(client: Client) -> str:
    order = client.create_limit_order("BTC/BRL", "buy", "1000", amount="0.001")
    assert order["status"] == "OPEN"
    return str(order["id"])


def test_open_order_is_accepted(slow_cancel_sim: Simulator) -> None:
    client, sent = counting(slow_cancel_sim)
    with client:
        order_id = new_order(client)
        result = client.cancel_limit_order(order_id, reason="test")
        assert result.outcome is CancelOutcome.ACCEPTED and result.accepted
        assert result.status == "CANCELLING"
        assert result.http_status == slow_cancel_sim.profile.rest.cancel_status
        assert result.cancel_requested_at is not None
        assert result.should_resend is False
        assert str(result).startswith(f"order {order_id}: accepted [CANCELLING]")
        assert client.fetch_order(order_id)["status"] == "CANCELLING"
        again = client.cancel_limit_order(order_id)
    assert again.outcome is CancelOutcome.ALREADY_CANCELLING and again.status == "CANCELLING"
    assert again.http_status == 409
    # the 409 was answered by one fetchOrder, never a second PATCH
    patches = [s for s in sent if s.startswith("PATCH")]
    assert len(patches) == 2
    assert sent[-1] == f"GET {slow_cancel_sim.profile.rest.fetch_order_path}"


@pytest.mark.parametrize("state", ["TRIGGERED", "PROCESSING"])
def test_executing_order_is_deferred(slow_cancel_sim: Simulator, state: str) -> None:
    client, sent = counting(slow_cancel_sim)
    with client:
        order_id = new_order(client)
        slow_cancel_sim.control.advance(order_id, state)
        result = client.cancel_limit_order(order_id)
    assert result.outcome is CancelOutcome.DEFERRED and result.status == state
    assert not result.should_resend and "do not resend" in str(result)
    assert result.order is not None and result.order["id"] == order_id
    assert sum(s.startswith("PATCH") for s in sent) == 1


def test_deferred_cancel_is_honoured_on_rearm(slow_cancel_sim: Simulator) -> None:
    with slow_cancel_sim.client() as client:
        order_id = new_order(client)
        slow_cancel_sim.control.advance(order_id, "TRIGGERED")
        assert client.cancel_limit_order(order_id).outcome is CancelOutcome.DEFERRED
        slow_cancel_sim.control.advance(order_id, "OPEN")  # re-arm: the recorded cancel acts
        assert client.fetch_order(order_id)["status"] in ("CANCELLING", "CANCELLED")


@pytest.mark.parametrize("state", ["EXPIRED", "EXECUTED", "CLOSED", "REJECTED"])
def test_final_order_is_already_final(slow_cancel_sim: Simulator, state: str) -> None:
    with slow_cancel_sim.client() as client:
        order_id = new_order(client)
        slow_cancel_sim.control.advance(order_id, state)
        result = client.cancel_limit_order(order_id)
    assert result.outcome is CancelOutcome.ALREADY_FINAL
    assert result.status == state
    assert "already final" in str(result)


def test_wrong_profile_is_order_not_found(slow_cancel_sim: Simulator) -> None:
    with slow_cancel_sim.client() as client:
        order_id = new_order(client)
        with pytest.raises(OrderNotFound):
            client.cancel_limit_order(order_id, profile_id="P2")


def test_profile_in_the_query(slow_cancel_sim: Simulator) -> None:
    patches: list[httpx.Request] = []

    async def on_request(request: httpx.Request) -> None:
        if request.method == "PATCH":
            patches.append(request)

    profile = slow_cancel_sim.profile.replace({"rest.cancel_profile_in": "query"})
    with slow_cancel_sim.client(profile=profile, event_hooks={"request": [on_request]}) as client:
        order_id = new_order(client)
        assert client.cancel_limit_order(order_id).accepted
    assert patches[0].url.params["profileId"] == "P1"
    assert b"profileId" not in patches[0].content


def test_batch_cancel_gives_one_result_per_order(slow_cancel_sim: Simulator) -> None:
    control = slow_cancel_sim.control
    with slow_cancel_sim.client() as client:
        open_id, executing_id, final_id, cancelling_id = (new_order(client) for _ in range(4))
        control.advance(executing_id, "TRIGGERED")
        control.advance(final_id, "EXPIRED")
        client.cancel_limit_order(cancelling_id)
        results = client.cancel_limit_orders(
            [open_id, executing_id, final_id, cancelling_id, "l-999999-zzzz", open_id]
        )
    outcomes = {r.order_id: r.outcome for r in results}
    assert len(results) == 5  # duplicates collapsed
    assert outcomes == {
        open_id: CancelOutcome.ACCEPTED,
        executing_id: CancelOutcome.DEFERRED,
        final_id: CancelOutcome.ALREADY_FINAL,
        cancelling_id: CancelOutcome.ALREADY_CANCELLING,
        "l-999999-zzzz": CancelOutcome.NOT_FOUND,
    }
    assert all(not r.should_resend for r in results)


def test_batch_cancel_is_chunked(slow_cancel_sim: Simulator) -> None:
    profile = slow_cancel_sim.profile.replace({"rest.batch_cancel_max": 2})
    client, sent = counting(slow_cancel_sim, profile=profile)
    with client:
        ids = [new_order(client) for _ in range(5)]
        results = client.cancel_limit_orders(ids)
    assert [r.outcome for r in results] == [CancelOutcome.ACCEPTED] * 5
    assert sent.count(f"POST {profile.rest.batch_cancel_path}") == 3


def test_empty_batch_sends_nothing(sim: Simulator) -> None:
    client, sent = counting(sim)
    with client:
        assert client.cancel_limit_orders([]) == []
    assert sent == []


def test_result_is_frozen_and_outcome_rules() -> None:
    result = CancelResult("x", CancelOutcome.DEFERRED, "TRIGGERED")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.outcome = CancelOutcome.ACCEPTED  # type: ignore[misc]
    assert outcome_from_state("closed") is CancelOutcome.ALREADY_FINAL
    assert outcome_from_state("CANCELLING") is CancelOutcome.ALREADY_CANCELLING
    assert outcome_from_state("PROCESSING") is CancelOutcome.DEFERRED
    assert outcome_from_state("OPEN") is CancelOutcome.DEFERRED
    # executed: not terminal, yet a cancel can no longer take effect, whatever FINALIZED holds
    assert outcome_from_state("EXECUTED", frozenset()) is CancelOutcome.ALREADY_FINAL
    assert outcome_from_state("executed") is CancelOutcome.ALREADY_FINAL
