"""``toolkit doctor --probe-cancel``: where a cancel's profileId travels (spec 4.3: not
shown), learnt from two cancels of an order id that does not exist; nothing in the account
changes and the row says what was sent. Without the option no cancel is sent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolkit.doctor import diagnose
from toolkit.profile import DEFAULT_PROFILE
from toolkit.sim import Simulator

QUERY_SERVICE = DEFAULT_PROFILE.replace({"rest.cancel_profile_in": "query"})


@pytest.fixture
def query_sim() -> Iterator[Simulator]:
    with Simulator(
        seed=5, engine=False, history_orders=30, profile=QUERY_SERVICE, validation_status=422
    ) as s:
        yield s


def _states(sim: Simulator) -> dict[str, str]:
    return {o.id: o.status for o in sim.state.orders.values()}  # type: ignore[attr-defined]


def test_the_probe_learns_the_query_placement_and_changes_nothing(query_sim: Simulator) -> None:
    before = _states(query_sim)
    with query_sim.client(profile=DEFAULT_PROFILE) as client:
        d = diagnose(client, payload_timeout=0.2, probe_cancel=True)
    row = d["rest.cancel_profile_in"]
    assert (row.status, row.value) == ("differs", "query")
    assert "profileId in the body -> 422" in row.note
    assert "profileId in the query -> 404" in row.note
    assert "PATCH /orders/limit/orders/toolkit-doctor-no-such-order-" in row.note
    assert _states(query_sim) == before
    assert d.profile().rest.cancel_profile_in == "query"


def test_a_body_only_service_matches_the_default() -> None:
    with (
        Simulator(seed=5, engine=False, history_orders=30, cancel_profile_strict=True) as sim,
        sim.client() as client,
    ):
        d = diagnose(client, payload_timeout=0.2, probe_cancel=True)
    row = d["rest.cancel_profile_in"]
    assert (row.status, row.value) == ("match", "body")
    assert "query -> 400" in row.note


def test_without_the_option_no_cancel_is_sent(query_sim: Simulator) -> None:
    with query_sim.client(profile=DEFAULT_PROFILE) as client:
        d = diagnose(client, payload_timeout=0.2)
    row = d["rest.cancel_profile_in"]
    assert row.status == "unknown" and "--probe-cancel" in row.note
    assert "learns it at run time" in row.note
