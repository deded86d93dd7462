"""Where a cancel's ``profileId`` travels is not shown (spec 4.3). A client whose profile
guesses wrong learns the placement from the service: a 400/422 (a validation refusal, so
nothing was recorded) is sent once more with ``profileId`` in the other place, and the
placement the service takes is kept for the session, logged once and counted in
``client.learned``. Against the real simulator in both directions (a 422 gateway taking
the query only; a body-only service), and sans-I/O for what the simulator never does
(both placements refused)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator

import httpx
import pytest

from toolkit.client._cancel import CancelOutcome
from toolkit.client._client import Client
from toolkit.errors import BadRequest, OrderNotFound
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.sim import Simulator

QUERY_SERVICE = DEFAULT_PROFILE.replace({"rest.cancel_profile_in": "query"})
SETTING = "rest.cancel_profile_in"


@pytest.fixture
def query_sim() -> Iterator[Simulator]:
    """A service that reads profileId from the query only and says 422 to bad input."""
    with Simulator(
        seed=5, engine=False, history_orders=30, profile=QUERY_SERVICE, validation_status=422
    ) as s:
        yield s


@pytest.fixture
def body_sim() -> Iterator[Simulator]:
    """A service that reads profileId from the body only."""
    with Simulator(seed=5, engine=False, history_orders=30, cancel_profile_strict=True) as s:
        yield s


def _open_order(client: Client) -> str:
    order = client.create_limit_order("BTC/BRL", "buy", "1", amount="0.001")
    return str(order["id"])


def _placements(sent: list[httpx.Request]) -> list[str]:
    out = []
    for request in sent:
        if "/cancel" not in request.url.path:
            continue
        in_query = "profileId" in request.url.params
        in_body = "profileId" in json.loads(request.content or b"{}")
        out.append("query" if in_query and not in_body else "body" if in_body else "none")
    return out


def _client(sim: Simulator, profile: ServiceProfile, sent: list[httpx.Request]) -> Client:
    return sim.client(profile=profile, max_retries=0, event_hooks={"request": [_record(sent)]})


def _record(sent: list[httpx.Request]):  # type: ignore[no-untyped-def]
    async def hook(request: httpx.Request) -> None:
        sent.append(request)

    return hook


def test_a_422_to_the_body_placement_is_retried_in_the_query_and_learnt(
    query_sim: Simulator, caplog: pytest.LogCaptureFixture
) -> None:
    sent: list[httpx.Request] = []
    caplog.set_level(logging.WARNING, logger="toolkit.learned")
    with _client(query_sim, DEFAULT_PROFILE, sent) as client:
        first, second = _open_order(client), _open_order(client)
        assert client.cancel_limit_order(first).outcome is CancelOutcome.ACCEPTED
        assert client.cancel_limit_order(second).outcome is CancelOutcome.ACCEPTED
        learned = client.learned[SETTING]
    # the refused request, the retry, then straight to the learnt placement
    assert _placements(sent) == ["body", "query", "query"]
    assert (learned.value, learned.profile_value, learned.uses) == ("query", "body", 2)
    assert learned.toml_line == 'cancel_profile_in = "query"'
    assert "422" in learned.evidence
    said = [r.getMessage() for r in caplog.records if SETTING in r.getMessage()]
    assert len(said) == 1 and 'cancel_profile_in = "query"' in said[0]


def test_a_body_only_service_teaches_a_query_profile_the_body(body_sim: Simulator) -> None:
    sent: list[httpx.Request] = []
    with _client(body_sim, QUERY_SERVICE, sent) as client:
        oid = _open_order(client)
        assert client.cancel_limit_order(oid).outcome is CancelOutcome.ACCEPTED
        assert client.learned[SETTING].value == "body"
    assert _placements(sent) == ["query", "body"]


def test_a_409_or_404_after_the_retry_also_teaches_the_placement(
    query_sim: Simulator,
) -> None:
    sent: list[httpx.Request] = []
    with _client(query_sim, DEFAULT_PROFILE, sent) as client:
        with pytest.raises(OrderNotFound):
            client.cancel_limit_order("l-999999-none")
        assert client.learned[SETTING].value == "query"


def test_a_right_profile_learns_nothing_and_sends_once(query_sim: Simulator) -> None:
    sent: list[httpx.Request] = []
    with _client(query_sim, QUERY_SERVICE, sent) as client:
        client.cancel_limit_order(_open_order(client))
        assert len(client.learned) == 0
    assert _placements(sent) == ["query"]


def test_both_placements_refused_raise_the_first_refusal_with_both_said() -> None:
    """Sans-I/O: a service refusing the cancel wherever profileId travels (the simulator
    never does): two requests, the service's words, the setting, no placement learnt."""
    sent: list[httpx.Request] = []

    def service(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/auth/signin"):
            return httpx.Response(200, json={"token": "t", "expiresAt": 4102444800000})
        sent.append(request)
        return httpx.Response(422, json={"message": "reason is not allowed here"})

    client = _fake_service_client(service)
    with client, pytest.raises(BadRequest) as info:
        client.cancel_limit_order("l-1", profile_id="P1", reason="x")
    message = str(info.value)
    assert "reason is not allowed here" in message
    assert "rest.cancel_profile_in ('body', where profileId was sent)" in message
    assert "rest.cancel_path ('/orders/limit/orders/{order_id}/cancel')" in message
    assert "also refused (422) with profileId in the query" in message
    assert info.value.status == 422 and info.value.order_id == "l-1"
    assert _placements(sent) == ["body", "query"]
    assert len(client.learned) == 0


@pytest.mark.parametrize("status", [403, 405, 409, 413, 418])
def test_every_4xx_carries_the_service_words_whatever_the_body_shape(status: int) -> None:
    """Sans-I/O: an error body whose words are not under rest.error_message_field (a list
    of errors, as some gateways answer) is still quoted, for any 4xx, and a refusal the
    profile's settings shaped names them (spec 7: the error body shape is not shown)."""
    words = {"errors": [{"detail": f"gateway says no ({status})"}]}

    def service(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/auth/signin"):
            return httpx.Response(200, json={"token": "t", "expiresAt": 4102444800000})
        return httpx.Response(status, json=words)

    client = _fake_service_client(service)
    with client, pytest.raises(Exception) as info:
        client.fetch_order("o-1")
    assert f"gateway says no ({status})" in str(info.value)
    if status not in (403, 409):
        assert "rest.fetch_order_param ('orderId'" in str(info.value)


def _fake_service_client(service: Callable[[httpx.Request], httpx.Response]) -> Client:
    """A client of a fake service (the sans-I/O cases): no retries, a fake sign-in key."""
    return Client(
        "http://service.test",
        api_key="k",
        api_secret="s",
        transport=httpx.MockTransport(service),
        max_retries=0,
    )
