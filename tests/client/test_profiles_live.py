"""The client made with ``profiles/alt.toml`` against the simulator serving the same profile:
sign-in, identity header, fetchOrder, listing filters, the loader, create/cancel/batch
cancel; and a client whose profile does not match the service failing with the setting's
name, never with 0 rows."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.errors import InvalidResponse, ToolkitError
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.sim import Simulator

ALT_PATH = Path(__file__).resolve().parents[2] / "profiles" / "alt.toml"
simulator_supports_profiles = "profile" in inspect.signature(Simulator.__init__).parameters

pytestmark = pytest.mark.skipif(
    not simulator_supports_profiles, reason="toolkit.sim.Simulator does not take profile= yet"
)


@pytest.fixture(scope="module")
def alt() -> ServiceProfile:
    return load_profile(ALT_PATH)


@pytest.fixture(scope="module")
def alt_sim(alt: ServiceProfile) -> Iterator[Simulator]:
    with Simulator(profile=alt, engine=False, history_orders=120) as s:
        yield s


def make(sim: Simulator, profile: ServiceProfile, **kw: Any) -> tuple[Client, list[httpx.Request]]:
    """A client built from the profile alone (not ``sim.client()``), recording requests."""
    sent: list[httpx.Request] = []

    async def on_request(request: httpx.Request) -> None:
        sent.append(request)

    client = Client(
        sim.base_url,
        ws_url=sim.ws_url,
        api_key="demo",
        api_secret="demo-secret",
        profile_id="P1",
        profile=profile,
        event_hooks={"request": [on_request]},
        **kw,
    )
    return client, sent


def test_signin_identity_and_fetch_order(alt_sim: Simulator, alt: ServiceProfile) -> None:
    order_id = alt_sim.control.order_ids()[0]
    client, sent = make(alt_sim, alt)
    with client:
        assert client.fetch_order(order_id)["id"] == order_id
        assert client.fetch_order(order_id)["id"] == order_id
    paths = [r.url.path for r in sent]
    assert paths == ["/api/v2/session", "/orders/fetchOrder", "/orders/fetchOrder"]
    fetch = sent[1]
    assert fetch.url.params["id"] == order_id and "orderId" not in fetch.url.params
    token = fetch.headers["X-Auth-Token"]
    assert token and " " not in token and "Authorization" not in fetch.headers


def test_listing_filters_read_the_mapped_fields(alt_sim: Simulator, alt: ServiceProfile) -> None:
    client, sent = make(alt_sim, alt)
    with client:
        everything = client.list_limit_orders()
        active = client.list_limit_orders("ACTIVE")
        finalized = client.list_limit_orders("FINALIZED")
    assert everything and all("orderId" in o and "state" in o for o in everything)
    assert {o["state"] for o in active} <= set(alt.listing.active_statuses)
    assert {o["state"] for o in finalized} <= set(alt.listing.finalized_statuses)
    ids = {o["orderId"] for o in everything}
    assert {o["orderId"] for o in active} | {o["orderId"] for o in finalized} == ids
    listing = [r for r in sent if r.url.path == alt.rest.limit_orders_path]
    assert all(r.url.params["limit"] == str(alt.listing.page_default) for r in listing)


def test_load_orders_since_symbols_status(alt_sim: Simulator, alt: ServiceProfile) -> None:
    client, _ = make(alt_sim, alt)
    with client:
        items = client.list_limit_orders()
        created = sorted(int(o["created"]) for o in items)  # seconds under alt
        middle = created[len(created) // 2]
        since = datetime.fromtimestamp(middle, tz=UTC)
        after = client.load_orders(since=since, progress=False)
        btc = client.load_orders(symbols="BTC/BRL", progress=False)
        final = client.load_orders(status="FINALIZED", progress=False)
        every = client.load_orders(progress=False)
    assert set(after.orders["id"]) == {o["orderId"] for o in items if int(o["created"]) >= middle}
    assert 0 < len(after.orders) < len(items)
    assert set(btc.orders["id"]) == {o["orderId"] for o in items if o["pair"] == "BTC/BRL"}
    assert len(btc.orders) > 0
    expected_final = {o["orderId"] for o in items if o["state"] in alt.listing.finalized_statuses}
    assert set(final.orders["id"]) == expected_final and expected_final
    assert set(every.orders["id"]) == {o["orderId"] for o in items}
    # the loader hands the profile to the frames: quotes are read under the service's names
    quotes = every.evaluated_tickers
    assert len(quotes) > 0
    assert {alt.orders.quote_venue_field, alt.orders.quote_price_field} <= set(quotes.columns)
    assert quotes[alt.orders.quote_price_field].dtype == "float64"
    assert str(quotes[alt.orders.quote_time_field].dtype) == "datetime64[ms, UTC]"
    assert quotes[alt.orders.quote_time_field].dt.year.min() >= 2020  # seconds, not 1970


def test_create_cancel_and_batch_cancel(alt_sim: Simulator, alt: ServiceProfile) -> None:
    alt_sim.control.set_knobs(cancel_completion_s=60.0)
    client, sent = make(alt_sim, alt.replace({"rest.batch_cancel_max": 2}))
    with client:
        ids = [
            client.create_limit_order("BTC/BRL", "buy", "1000", amount="0.001")["id"]
            for _ in range(6)
        ]
        one = client.cancel_limit_order(ids[0], reason="test")
        again = client.cancel_limit_order(ids[0])
        batch = client.cancel_limit_orders(ids[1:])
    assert one.accepted and one.http_status == 200 and one.cancel_requested_at is not None
    assert again.outcome.value == "already_cancelling" and again.http_status == 409
    assert [r.outcome.value for r in batch] == ["accepted"] * 5
    patch = next(r for r in sent if r.method == "PATCH")
    assert patch.url.params["profileId"] == "P1"
    posts = [r for r in sent if r.url.path == alt.rest.batch_cancel_path]
    assert len(posts) == 3  # 5 ids, 2 per request


def test_default_profile_against_the_alt_service_names_a_setting(alt_sim: Simulator) -> None:
    client, _ = make(alt_sim, DEFAULT_PROFILE)
    with client, pytest.raises(ToolkitError) as info:
        client.load_orders(progress=False)
    assert "signin.path" in str(info.value)


def test_a_profile_with_the_wrong_item_fields_is_an_error_not_zero_rows(
    alt_sim: Simulator, alt: ServiceProfile
) -> None:
    wrong = alt.replace({"listing.created_at_field": "createdAt"})
    client, _ = make(alt_sim, wrong)
    with client, pytest.raises(InvalidResponse) as info:
        client.load_orders(since="2000-01-01", progress=False)
    assert "listing.created_at_field" in str(info.value)
    wrong_symbol = alt.replace({"listing.symbol_field": "symbol"})
    client, _ = make(alt_sim, wrong_symbol)
    with client, pytest.raises(InvalidResponse, match=r"listing\.symbol_field"):
        client.load_orders(symbols="BTC/BRL", progress=False)


def test_an_unknown_id_field_is_inferred_and_logged(
    alt_sim: Simulator, alt: ServiceProfile, caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = make(alt_sim, alt.replace({"listing.id_field": "id"}))
    with client, caplog.at_level(logging.INFO, logger="toolkit.listing"):
        frames = client.load_orders(status="ACTIVE", progress=False)
    assert len(frames.orders) > 0
    inferred = [r for r in caplog.records if "'orderId' as the order id" in r.getMessage()]
    assert len(inferred) == 1
