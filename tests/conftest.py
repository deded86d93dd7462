"""Shared fixtures: a real simulator on loopback for every test that talks to the network,
under each service profile of ``profiles/`` (the default and a deliberately different one).

``TOOLKIT_TEST_PROFILES`` (comma-separated names of ``profiles/*.toml``) picks the profiles
the simulator serves; default and alt by default. ``TOOLKIT_TEST_CLIENT_PROFILE`` (a TOML
path, e.g. the one ``toolkit doctor --write-profile`` wrote) is then what every client
takes instead (``sim.profile``, ``service_profile``), while the simulator serves the named
profile (``sim.served``): ``make stranger`` runs the network tests so. The simulator's own
tests (tests/sim/) pin the default profile and test the others in their own files.

Every test that takes ``service_profile``, ``sim`` or ``fresh_sim`` (the network tests of
every capability) carries the ``network`` marker.

Field conditions: the tests under ``LIVE`` (streams, recorder, order book, views, the
notebooks that run live, the real-browser tests) carry the ``live`` marker, and
``TOOLKIT_TEST_LOAD=N`` keeps N CPU-bound processes running for the whole session
(``make live-under-load`` runs the live tests so, with both cores busy).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _cpu_load import CpuLoad, load_from_env

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.sim import Simulator

ROOT = Path(__file__).resolve().parents[1]

# bench/_synthetic.py (synthetic orders) serves the tests too
_BENCH = str(ROOT / "bench")
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)


def test_profiles() -> dict[str, ServiceProfile]:
    """The profiles the network tests run under, by name."""
    names = [n.strip() for n in os.environ.get("TOOLKIT_TEST_PROFILES", "default,alt").split(",")]
    out: dict[str, ServiceProfile] = {}
    for name in filter(None, names):
        out[name] = (
            DEFAULT_PROFILE
            if name == "default"
            else load_profile(ROOT / "profiles" / f"{name}.toml")
        )
    return out


test_profiles.__test__ = False  # type: ignore[attr-defined]
PROFILES = test_profiles()


def client_profile() -> ServiceProfile | None:
    """The profile every client takes instead of the served one
    (``TOOLKIT_TEST_CLIENT_PROFILE``, a TOML path), or None: each client takes the
    profile the simulator serves."""
    path = os.environ.get("TOOLKIT_TEST_CLIENT_PROFILE", "").strip()
    return load_profile(path) if path else None


CLIENT_PROFILE = client_profile()
#: the fixtures that put a test on the network: it carries the ``network`` marker
NETWORK_FIXTURES = frozenset({"service_profile", "served_profile", "sim", "fresh_sim"})

# the live tests: they talk to a running engine, a stream or a browser and wait on what
# it does (node ids relative to tests/, matched as prefixes: a folder takes every test
# under it). test_cpu_load.py is here so the stage shows its load works.
LIVE = (
    "stream/",
    "widgets/",
    "recording/test_recorder",
    "recording/test_profile_live.py",
    "recording/test_payload_misses.py",
    "recording/test_replay.py",
    "cli/test_record.py",
    "browser/test_live_views_browser.py",
    "browser/test_notebook02_voila.py",
    "report/test_report_browser.py",
    "test_notebooks.py::test_notebook_runs_offline[02_live_views]",
    "test_notebooks.py::test_notebook_runs_offline[03_record_and_read]",
    "test_notebooks.py::test_notebook_runs_offline[04_execution_report]",
    "test_notebooks.py::test_notebook_runs_offline[05_cookbook]",
    "test_cpu_load.py",
)


def is_live(nodeid: str) -> bool:
    """Whether the test ``nodeid`` (relative to the repository) is one of ``LIVE``."""
    rel = nodeid.removeprefix("tests/")
    return any(rel == spec or rel.startswith(spec) for spec in LIVE)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "network: talks to the simulator on loopback (takes service_profile, sim or "
        "fresh_sim); `make stranger` runs these under the profile toolkit doctor wrote",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_live(item.nodeid):
            item.add_marker(pytest.mark.live)
        # the simulator's own tests pin the default profile (tests/sim/conftest.py)
        network = not item.nodeid.removeprefix("tests/").startswith("sim/")
        if network and NETWORK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.network)


@pytest.fixture(scope="session", autouse=True)
def cpu_load() -> Iterator[CpuLoad | None]:
    """``TOOLKIT_TEST_LOAD=N``: N CPU-bound processes for the whole session, stopped and
    reaped at its end (also after Ctrl-C, which pytest ends with the session teardown)."""
    load = load_from_env()
    if load is None:
        yield None
        return
    with load:
        yield load


@pytest.fixture(scope="session", params=list(PROFILES), ids=lambda name: f"profile={name}")
def served_profile(request: pytest.FixtureRequest) -> ServiceProfile:
    """The service profile the simulator serves in this test."""
    return PROFILES[request.param]


@pytest.fixture(scope="session")
def service_profile(served_profile: ServiceProfile) -> ServiceProfile:
    """The service profile the client takes in this test: the served one, unless
    ``TOOLKIT_TEST_CLIENT_PROFILE`` names another (``sim.profile`` is this one too)."""
    return served_profile if CLIENT_PROFILE is None else CLIENT_PROFILE


@pytest.fixture(scope="session")
def service_profile_file(
    service_profile: ServiceProfile, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The current profile as a TOML file, for what reads ``TOOLKIT_PROFILE``."""
    return service_profile.dump(tmp_path_factory.mktemp("profile") / f"{service_profile.name}.toml")


@pytest.fixture(scope="session")
def sim(service_profile: ServiceProfile, served_profile: ServiceProfile) -> Iterator[Simulator]:
    """One simulator per profile for the session, engine off so tests drive every change
    themselves. Tests that flip knobs use ``fresh_sim`` instead."""
    with Simulator(
        seed=7, engine=False, history_orders=300, profile=service_profile, served=served_profile
    ) as s:
        yield s


@pytest.fixture
def fresh_sim(
    service_profile: ServiceProfile, served_profile: ServiceProfile
) -> Iterator[Simulator]:
    """A private simulator for tests that change knobs or state."""
    with Simulator(
        seed=11, engine=False, history_orders=120, profile=service_profile, served=served_profile
    ) as s:
        yield s


Steps = list[tuple[str, str]]


@pytest.fixture
def spy_durability(
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[ModuleType, str], Steps]:
    """``install(module, fsync_name)`` records, in order, every ``("fsync", name)`` made
    through ``module.<fsync_name>`` and every ``("replace", target name)`` made through
    ``os.replace``, still doing both: the durability steps a kill -9 cannot show."""

    def install(module: ModuleType, fsync_name: str = "fsync_path") -> Steps:
        steps: Steps = []
        real_fsync, real_replace = getattr(module, fsync_name), os.replace

        def fsync(path: Any) -> None:
            steps.append(("fsync", Path(path).name))
            real_fsync(path)

        def replace(src: Any, dst: Any) -> None:
            steps.append(("replace", Path(dst).name))
            real_replace(src, dst)

        monkeypatch.setattr(module, fsync_name, fsync)
        monkeypatch.setattr(os, "replace", replace)
        return steps

    return install
