"""The simulator's side of a profile: the knobs of its ``[simulator]`` table applied by
``Knobs.from_profile`` (errors name the file and line), and a simulator that serves one
profile while its clients take another (``Simulator(profile=..., served=...)``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from toolkit.errors import InvalidRequest
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.sim import Simulator
from toolkit.sim._knobs import Knobs

ROOT = Path(__file__).resolve().parents[2]
ALT = load_profile(ROOT / "profiles" / "alt.toml")


def test_table_knobs_win_over_the_profile_points_and_run_time_knobs_over_both() -> None:
    table = {"ws_idle_limit_s": 9.0, "validation_status": 422}
    profile = ServiceProfile.from_dict({**DEFAULT_PROFILE.to_dict(), "simulator": table})
    knobs = Knobs.from_profile(profile)
    assert (knobs.ws_idle_limit_s, knobs.validation_status) == (9.0, 422)
    sim = Simulator(profile=profile, validation_status=400)
    assert sim.knobs.validation_status == 400


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("no_such_knob = 1", "line 4 (simulator.no_such_knob): unknown simulator knob"),
        ("validation_status = 418", "line 4 (simulator.validation_status): knob validation_status"),
    ],
)
def test_a_bad_knob_names_the_file_and_its_line(tmp_path: Path, line: str, said: str) -> None:
    path = tmp_path / "sim.toml"
    path.write_text(f'name = "x"\n\n[simulator]\n{line}\n')
    profile = load_profile(path)  # the client reads it: the table is not its business
    with pytest.raises(InvalidRequest) as caught:
        Simulator(profile=profile)
    assert str(caught.value).startswith(f"{path}, {said}")


def test_the_sim_command_says_a_bad_knob_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "sim.toml"
    path.write_text("[simulator]\nno_such_knob = 1\n")
    run = subprocess.run(
        [sys.executable, "-m", "toolkit.sim", "--port", "0", "--profile", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1, run.stderr
    assert run.stderr.strip().splitlines() == [
        f"toolkit sim: {path}, line 2 (simulator.no_such_knob): unknown simulator knob(s): "
        "no_such_knob"
    ]


def test_served_and_client_profiles_apart() -> None:
    with Simulator(profile=DEFAULT_PROFILE, served=ALT, engine=False, history_orders=10) as sim:
        assert sim.profile is DEFAULT_PROFILE and sim.served is ALT
        assert sim.state is not None and sim.state.profile is ALT
        assert sim.knobs.page_max == ALT.listing.page_max  # knobs from what is served
        assert "served='alt'" in repr(sim)
        assert httpx.post(f"{sim.base_url}/api/v2/session", json={}).status_code != 404
        assert httpx.post(f"{sim.base_url}/auth/signin", json={}).status_code == 404
        client = sim.client()
        assert client.profile is DEFAULT_PROFILE
        client.close()
    with pytest.raises(TypeError, match="served must be a ServiceProfile"):
        Simulator(served="alt")  # type: ignore[arg-type]


def test_a_sign_in_without_its_fields_is_refused_with_validation_status() -> None:
    # a gateway that answers 422 to bad input does so at the sign-in too, so that a
    # service whose wrong secret is a 400 (profiles/stranger.toml) still tells them apart
    with Simulator(engine=False, history_orders=0, validation_status=422) as sim:
        missing = httpx.post(f"{sim.base_url}/auth/signin", json={"key": "demo"})
        assert missing.status_code == 422, missing.text
        broken = httpx.post(f"{sim.base_url}/auth/signin", content=b"{not json")
        assert broken.status_code == 422
        wrong = httpx.post(f"{sim.base_url}/auth/signin", json={"apiKey": "demo", "apiSecret": "x"})
        assert wrong.status_code == 401
