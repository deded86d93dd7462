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
from toolkit.errors import OrderNotFound, RouteNotActive
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


def learnt_placement(client: Client) -> int:
    """1 when the client learnt where ``profileId`` travels at run time (its profile said
    otherwise: the first cancel was refused and sent once more), else 0."""
    return int("rest.cancel_profile_in" in client.learned)


def new_order(client: Client) -> str:
    order = client.create_limit_order("BTC/BRL", "buy", "1000", amount="0.001")
    assert order["status"].upper() == "OPEN"  # in the profile's status case
    return str(order["id"])


def test_open_order_is_accepted(slow_cancel_sim: Simulator) -> None:
    client, sent = counting(slow_cancel_sim)
    with client:
        order_id = new_order(client)
        result = client.cancel_limit_order(order_id, reason="test")
        assert result.outcome is CancelOutcome.ACCEPTED and result.accepted
        assert result.status == "CANCELLING"
        # what the service answers (the client's profile may not know it: any 2xx will do)
        assert result.http_status == slow_cancel_sim.served.rest.cancel_status
        learnt = learnt_placement(client)
        assert result.cancel_requested_at is not None
        assert result.should_resend is False
        assert str(result).startswith(f"order {order_id}: accepted [CANCELLING]")
        assert client.fetch_order(order_id)["status"].upper() == "CANCELLING"
        again = client.cancel_limit_order(order_id)
    assert again.outcome is CancelOutcome.ALREADY_CANCELLING and again.status == "CANCELLING"
    assert again.http_status == 409
    # the 409 was answered by one fetchOrder, never a second PATCH
    patches = [s for s in sent if s.startswith("PATCH")]
    assert len(patches) == 2 + learnt
    assert sent[-1] == f"GET {slow_cancel_sim.profile.rest.fetch_order_path}"


@pytest.mark.parametrize("state", ["TRIGGERED", "PROCESSING"])
def test_executing_order_is_deferred(slow_cancel_sim: Simulator, state: str) -> None:
    client, sent = counting(slow_cancel_sim)
    with client:
        order_id = new_order(client)
        slow_cancel_sim.control.advance(order_id, state)
        result = client.cancel_limit_order(order_id)
        learnt = learnt_placement(client)
    assert result.outcome is CancelOutcome.DEFERRED and result.status == state
    assert not result.should_resend and "do not resend" in str(result)
    assert result.order is not None and result.order["id"] == order_id
    assert sum(s.startswith("PATCH") for s in sent) == 1 + learnt


def test_deferred_cancel_is_honoured_on_rearm(slow_cancel_sim: Simulator) -> None:
    with slow_cancel_sim.client() as client:
        order_id = new_order(client)
        slow_cancel_sim.control.advance(order_id, "TRIGGERED")
        assert client.cancel_limit_order(order_id).outcome is CancelOutcome.DEFERRED
        slow_cancel_sim.control.advance(order_id, "OPEN")  # re-arm: the recorded cancel acts
        assert client.fetch_order(order_id)["status"].upper() in ("CANCELLING", "CANCELLED")


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


# --- answers the simulator never gives (a hand-made service on httpx.MockTransport) ---------

import json  # noqa: E402
import re  # noqa: E402

from toolkit.client._cancel import refused  # noqa: E402
from toolkit.errors import InvalidResponse, ServiceUnavailable  # noqa: E402


async def no_sleep(delay: float) -> None:
    return None


class HandMade:
    """Cancel routes whose answers a test sets: the 409/404 of a single cancel, the batch
    answers (one per request), fetchOrder from ``orders`` (id -> body, or an HTTP status),
    and the listing probe's status. Records every request as ``METHOD path``."""

    def __init__(self) -> None:
        self.orders: dict[str, dict[str, Any] | int] = {}
        self.cancel_status = 409
        self.listing_status = 200
        self.batch: list[httpx.Response] = []
        self.batches: list[list[str]] = []
        self.sent: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.sent.append(f"{request.method} {path}")
        if path == "/orders/fetchOrder":
            order = self.orders.get(request.url.params["orderId"], 404)
            if isinstance(order, int):
                return httpx.Response(order, json={"message": "order not found in this profile"})
            return httpx.Response(200, json=order)
        if request.method == "PATCH":
            return httpx.Response(self.cancel_status, json={"message": "order not found"})
        if path == "/orders/limit/orders/cancel":
            self.batches.append(json.loads(request.content)["orderIds"])
            return self.batch.pop(0)
        if path == "/orders/limit/orders":
            return httpx.Response(self.listing_status, json={"orders": [], "message": "busy"})
        return httpx.Response(500)

    def client(self, **settings: Any) -> Client:
        return Client(
            "http://127.0.0.1:9",  # never dialled: the mock transport answers
            profile_id="P1",
            transport=httpx.MockTransport(self),
            sleep=no_sleep,
            **settings,
        )


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"id": "o1", "type": "limit", "orderStatus": "OPEN"}, "has no 'status'"),
        ({"id": "o1", "type": "limit", "status": 3}, "'status' that is not a string"),
    ],
)
def test_a_409_on_an_order_without_a_status_is_invalid_response(
    body: dict[str, Any], says: str
) -> None:
    # a renamed or mistyped status must not read as "deferred: do not resend"
    service = HandMade()
    service.orders["o1"] = body
    with service.client() as client, pytest.raises(InvalidResponse) as caught:
        client.cancel_limit_order("o1")
    message = str(caught.value)
    assert caught.value.order_id == "o1" and "'o1'" in message and says in message
    # the body's fields are named, to spot a rename
    assert f"the order's fields: {', '.join(sorted(body))}" in message


@pytest.mark.parametrize("status", ["FILLED", "pending", ""])
def test_a_409_on_an_order_with_an_unknown_status_is_invalid_response(status: str) -> None:
    service = HandMade()
    service.orders["o1"] = {"id": "o1", "type": "limit", "status": status}
    with service.client() as client, pytest.raises(InvalidResponse) as caught:
        client.cancel_limit_order("o1")
    message = str(caught.value)
    assert f"'status' is {status!r}" in message and "'o1'" in message
    # the statuses the client knows, with the profile's settings named
    assert "listing.active_statuses: OPEN, PROCESSING, TRIGGERED" in message
    assert "listing.finalized_statuses: CANCELLED" in message


def test_unknown_states_have_no_outcome() -> None:
    assert outcome_from_state("FILLED") is None
    assert outcome_from_state("") is None
    with pytest.raises(InvalidResponse, match="has no 'status'"):
        refused("o1", {"id": "o1"}, 409)
    # every one of the nine has a meaning
    for status in ("OPEN", "TRIGGERED", "PROCESSING", "CANCELLING", "EXECUTED", "CLOSED"):
        assert refused("o1", {"status": status}, 409).status == status


@pytest.mark.parametrize("probe", [503, 403, 500])
def test_a_404_on_cancel_stays_order_not_found_when_the_route_probe_fails(probe: int) -> None:
    service = HandMade()
    service.cancel_status = 404
    service.listing_status = probe
    with service.client() as client, pytest.raises(OrderNotFound) as caught:
        client.cancel_limit_order("nope")
    assert caught.value.status == 404 and caught.value.method == "PATCH"
    assert "GET /orders/limit/orders" in service.sent  # the probe was made, and failed


def test_a_404_on_cancel_with_an_inactive_listing_is_route_not_active(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(limit_routes_active=False)
    with fresh_sim.client() as client, pytest.raises(RouteNotActive):
        client.cancel_limit_order("l-000001-aaaa")


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(202),
        httpx.Response(202, json={"cancelled": ["o1", "o2"]}),
        httpx.Response(200, json=["o1", "o2"]),
        httpx.Response(202, content=b"accepted"),
    ],
    ids=["empty", "other-object", "array", "not-json"],
)
def test_batch_2xx_of_another_shape_is_decided_by_fetch_order(answer: httpx.Response) -> None:
    # the service accepted the cancels: its answer's shape is not shown (spec 4.4)
    service = HandMade()
    service.batch = [answer]
    service.orders = {
        "o1": {"id": "o1", "status": "CANCELLING"},
        "o2": {"id": "o2", "status": "CLOSED"},
    }
    with service.client() as client:
        results = client.cancel_limit_orders(["o1", "o2", "o3"])
    assert [(r.order_id, r.outcome) for r in results] == [
        ("o1", CancelOutcome.ALREADY_CANCELLING),
        ("o2", CancelOutcome.ALREADY_FINAL),
        ("o3", CancelOutcome.NOT_FOUND),
    ]
    assert service.sent.count("GET /orders/fetchOrder") == 3
    assert all(r.http_status == answer.status_code for r in results)


def test_a_failed_batch_request_says_which_cancels_were_already_accepted() -> None:
    service = HandMade()
    accepted = httpx.Response(202, json={"orders": [{"id": "o1", "accepted": True}]})
    service.batch = [accepted, httpx.Response(503, json={"message": "busy"})]
    profile = service.client().profile.replace({"rest.batch_cancel_max": 1})
    with service.client(profile=profile) as client, pytest.raises(ServiceUnavailable) as caught:
        client.cancel_limit_orders(["o1", "o2", "o3"])
    message = str(caught.value)
    assert service.batches == [["o1"], ["o2"]]  # never resent, o3 never sent
    assert "request 2 of 3 failed" in message
    assert re.search(r"cancels of 1 order\(s\) were accepted \(o1\)", message)
    assert "later ones were not sent" in message


def test_a_failure_after_every_batch_was_accepted_says_so() -> None:
    service = HandMade()
    service.batch = [httpx.Response(202)]
    service.orders = {"o1": {"id": "o1", "status": "CANCELLING"}, "o2": 503}
    with service.client() as client, pytest.raises(ServiceUnavailable) as caught:
        client.cancel_limit_orders(["o1", "o2"])
    message = str(caught.value)
    assert "accepted every batch cancel request" in message
    assert "cancels of 2 order(s) were accepted (o1, o2)" in message
