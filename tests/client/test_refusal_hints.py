"""A client whose profile does not match the service's REST routes: each 400 names the
profile settings that shaped the refused request (with their values) next to the service's
own words, and a 404 on the batch-cancel route (a profile guess, spec 4.4) names
``rest.batch_cancel_path`` as a cause, not only "not active"."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.errors import BadRequest, OrderNotFound, RouteNotActive
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.sim import Simulator

#: the service differs from the client's default profile on every setting below
SERVICE = DEFAULT_PROFILE.replace(
    {
        "rest.fetch_order_param": "order_id",
        "rest.cancel_profile_in": "query",
        "rest.batch_cancel_path": "/bulk",
        "rest.batch_ids_field": "order_ids",
        "rest.batch_cancel_max": 7,
        "rest.error_message_field": "detail.msg",
        "listing.page_default": 13,
        "listing.page_min": 3,
        "listing.page_max": 17,
    }
)


@pytest.fixture(scope="module")
def other_sim() -> Iterator[Simulator]:
    with Simulator(seed=5, engine=False, history_orders=30, profile=SERVICE) as s:
        yield s


def client_of(sim: Simulator, profile: ServiceProfile = DEFAULT_PROFILE) -> Client:
    return sim.client(profile=profile, max_retries=0)


def test_a_refused_fetch_order_names_rest_fetch_order_param(other_sim: Simulator) -> None:
    oid = other_sim.control.order_ids()[0]
    with client_of(other_sim) as client, pytest.raises(BadRequest) as info:
        client.fetch_order(oid)
    message = str(info.value)
    assert "rest.fetch_order_param ('orderId'" in message
    # the service's words, although its error field is not rest.error_message_field
    assert "order_id is required" in message


def test_a_refused_page_size_names_the_listing_bounds_and_where_the_size_came_from(
    other_sim: Simulator,
) -> None:
    with client_of(other_sim) as client:
        with pytest.raises(BadRequest) as default_size:
            client.list_limit_orders()
        with pytest.raises(BadRequest) as given_size:
            client.list_limit_orders("ACTIVE", limit=20)
    message = str(default_size.value)
    assert "limit=50 (the profile's listing.page_default)" in message
    assert "listing.page_min (1)" in message and "listing.page_max (100)" in message
    assert "limit must be between 3 and 17" in message
    given = str(given_size.value)
    assert "limit=20 (the limit= given)" in given and "status filter sent (status=ACTIVE)" in given


def test_a_load_refused_by_the_listing_names_the_page_settings(other_sim: Simulator) -> None:
    with client_of(other_sim) as client, pytest.raises(BadRequest) as info:
        client.load_orders(progress=False)
    message = str(info.value)
    assert "listing.page_default (50)" in message and "status=OPEN,TRIGGERED" in message


def test_a_cancel_refused_for_its_profile_id_placement_learns_the_other(
    other_sim: Simulator,
) -> None:
    # the 400 is no dead end any more: the query placement is tried and learnt (the
    # settings of a cancel refused in both placements: tests/client/test_cancel_placement.py)
    with client_of(other_sim) as client, pytest.raises(OrderNotFound):
        client.cancel_limit_order("l-000001-abcd")
    assert client.learned["rest.cancel_profile_in"].value == "query"


def test_a_404_on_the_batch_route_names_rest_batch_cancel_path(other_sim: Simulator) -> None:
    with client_of(other_sim) as client, pytest.raises(RouteNotActive) as info:
        client.cancel_limit_orders(["l-000001-abcd"])
    message = str(info.value)
    assert "rest.batch_cancel_path ('/orders/limit/orders/cancel') is wrong" in message
    assert "either the batch-cancel route is not active" in message


def test_a_batch_404_while_the_routes_are_inactive_gives_both_causes(
    fresh_sim: Simulator,
) -> None:
    fresh_sim.control.set_knobs(limit_routes_active=False)
    with fresh_sim.client() as client:
        with pytest.raises(RouteNotActive) as batch:
            client.cancel_limit_orders(["l-000001-abcd"])
        # the spec-named routes keep their wording: their path is the spec's
        with pytest.raises(RouteNotActive, match="published but not active") as listing:
            client.list_limit_orders()
    assert "rest.batch_cancel_path" in str(batch.value)
    assert "rest.batch_cancel_path" not in str(listing.value)


def test_a_refused_batch_names_the_batch_settings(other_sim: Simulator) -> None:
    on_bulk = DEFAULT_PROFILE.replace({"rest.batch_cancel_path": "/bulk"})
    with client_of(other_sim, on_bulk) as client, pytest.raises(BadRequest) as wrong_field:
        client.cancel_limit_orders(["l-000001-abcd"])
    message = str(wrong_field.value)
    assert "rest.batch_cancel_path ('/bulk')" in message
    assert "rest.batch_ids_field ('orderIds', which carried 1 id)" in message
    assert "rest.batch_cancel_max (100 ids per request)" in message
    assert "order_ids must be a non-empty list" in message
    ids = [f"l-00000{n}-abcd" for n in range(8)]
    fixed = on_bulk.replace({"rest.batch_ids_field": "order_ids"})
    with client_of(other_sim, fixed) as client, pytest.raises(BadRequest) as too_many:
        client.cancel_limit_orders(ids)
    assert "which carried 8 ids" in str(too_many.value)
    assert "at most 7 order_ids per call" in str(too_many.value)


SECRET = "s3cr3t-Value/with+signs"


def test_the_quoted_body_of_a_400_hides_the_secrets() -> None:
    """The service's words are quoted from the body when rest.error_message_field misses
    them: scrubbed like the body, also when the service escapes the secret."""

    def service(request: httpx.Request) -> httpx.Response:
        text = json.dumps({"error": {"text": f"bad key {SECRET}"}})
        return httpx.Response(400, text=text.replace("/", "\\/"))

    client = Client(
        "http://service.test", api_secret=SECRET, transport=httpx.MockTransport(service)
    )
    with client, pytest.raises(BadRequest) as info:
        client.fetch_order("m-000001-abcd")
    message = str(info.value)
    assert "bad key ***" in message and SECRET not in message and "s3cr3t" not in message
    assert "rest.fetch_order_param" in message
