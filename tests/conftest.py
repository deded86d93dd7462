"""Shared fixtures: a real simulator on loopback for every test that talks to the network."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.sim import Simulator

# bench/_synthetic.py (synthetic orders) serves the tests too
_BENCH = str(Path(__file__).resolve().parents[1] / "bench")
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)


@pytest.fixture(scope="session")
def sim() -> Iterator[Simulator]:
    """One simulator for the session, engine off so tests drive every change themselves.
    Tests that flip knobs use ``fresh_sim`` instead."""
    with Simulator(seed=7, engine=False, history_orders=300) as s:
        yield s


@pytest.fixture
def fresh_sim() -> Iterator[Simulator]:
    """A private simulator for tests that change knobs or state."""
    with Simulator(seed=11, engine=False, history_orders=120) as s:
        yield s
