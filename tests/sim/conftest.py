"""Fixtures of the simulator tests: authenticated HTTP clients on the ``sim`` and
``fresh_sim`` simulators of ``tests/conftest.py``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from _helpers import session

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.sim import Simulator


@pytest.fixture(scope="session")
def served_profile() -> ServiceProfile:
    """The simulator tests serve the default profile whatever ``TOOLKIT_TEST_PROFILES``
    says (``fresh_sim`` takes this and ``service_profile``)."""
    return DEFAULT_PROFILE


@pytest.fixture(scope="session")
def service_profile() -> ServiceProfile:
    """The simulator's own tests check the default profile's wire details; the other
    profile's are checked in test_profiles.py."""
    return DEFAULT_PROFILE


@pytest.fixture(scope="session")
def sim() -> Iterator[Simulator]:
    """The simulator tests' own shared simulator under the default profile.

    Overridden here rather than taken from ``tests/conftest.py``: pytest caches a
    session fixture by its own parameter, so the root ``sim`` last built under another
    profile would be handed to these tests unchanged."""
    with Simulator(seed=7, engine=False, history_orders=300, profile=DEFAULT_PROFILE) as s:
        yield s


@pytest.fixture
def http(sim: Simulator) -> Iterator[httpx.Client]:
    """A client of the shared ``sim``, signed in as ``demo``."""
    client = session(sim)
    yield client
    client.close()


@pytest.fixture
def fresh_http(fresh_sim: Simulator) -> Iterator[httpx.Client]:
    """A client of this test's ``fresh_sim``, signed in as ``demo``."""
    client = session(fresh_sim)
    yield client
    client.close()
