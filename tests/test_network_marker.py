"""The ``network`` marker (tests/conftest.py): every test that takes the simulator fixtures
carries it, so ``make stranger`` runs exactly the network tests of every capability; and
the clients take ``sim.profile`` while the simulator serves ``sim.served``."""

from __future__ import annotations

import pytest

from toolkit.profile import ServiceProfile
from toolkit.sim import Simulator


def test_a_test_on_the_simulator_is_a_network_test(
    request: pytest.FixtureRequest, sim: Simulator, served_profile: ServiceProfile
) -> None:
    assert request.node.get_closest_marker("network") is not None
    assert sim.served is served_profile and sim.state is not None
    assert sim.state.profile is served_profile


def test_a_test_without_it_is_not(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("network") is None


def test_the_client_takes_the_service_profile(
    service_profile: ServiceProfile, fresh_sim: Simulator
) -> None:
    assert fresh_sim.profile is service_profile
    with fresh_sim.client() as client:
        assert client.profile is service_profile
