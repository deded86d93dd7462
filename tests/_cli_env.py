"""The environment a CLI test points at a simulator with: its address, the current
profile's file and the demo key, and none of the variables that would change them."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.sim import Simulator


def point_at(sim: Simulator, profile_file: Path, monkeypatch: pytest.MonkeyPatch) -> Simulator:
    """Set ``TOOLKIT_*`` so that ``toolkit`` commands talk to ``sim`` under the profile in
    ``profile_file``; returns ``sim``."""
    for name in ("TOOLKIT_ENV", "TOOLKIT_WS_URL", "TOOLKIT_PROFILE_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLKIT_PROFILE", str(profile_file))
    monkeypatch.setenv("TOOLKIT_BASE_URL", sim.base_url)
    monkeypatch.setenv("TOOLKIT_API_KEY", "demo")
    monkeypatch.setenv("TOOLKIT_API_SECRET", "demo-secret")
    return sim
