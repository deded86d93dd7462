"""A profile's ``[simulator]`` table: the simulator's side of a profile (knobs beyond the
profile's points), carried through load, dump and replace, and no setting of the client."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import InvalidRequest
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile

ROOT = Path(__file__).resolve().parents[2]
TABLE = '[simulator]\nvalidation_status = 422\npayload_time_format = "iso"\n'


def test_the_table_round_trips_and_is_no_client_setting(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "x"\n[rest]\ncancel_status = 201\n' + TABLE)
    profile = load_profile(path)
    assert profile.simulator == {"validation_status": 422, "payload_time_format": "iso"}
    assert profile.origin == str(path)
    assert not any(k.startswith("simulator") for k, _ in profile.settings())
    assert profile.diff(profile.replace({"rest.cancel_status": 201})) == []
    again = load_profile(profile.dump(tmp_path / "again.toml"))
    assert again == profile and again.simulator == profile.simulator
    assert profile.replace({"rest.cancel_status": 200}).simulator == profile.simulator
    # a profile without the table writes none (the default file stays as it is)
    assert "[simulator]" not in DEFAULT_PROFILE.to_toml()


def test_stranger_carries_the_simulators_side() -> None:
    stranger = load_profile(ROOT / "profiles" / "stranger.toml")
    assert stranger.simulator["validation_status"] == 422
    assert stranger.payloads.balance_list == "wallet.*"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("simulator = 3\n", "[simulator] must be a table"),
        ("[simulator.inner]\nx = 1\n", "line 1 (simulator.inner): simulator.inner must be a value"),
    ],
)
def test_a_bad_table_names_the_file_and_line(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InvalidRequest, match=r"bad\.toml") as caught:
        load_profile(path)
    assert said in str(caught.value)


def test_from_dict_takes_the_table() -> None:
    profile = ServiceProfile.from_dict({"simulator": {"numeric_ids": "listing"}})
    assert profile.to_dict()["simulator"] == {"numeric_ids": "listing"}
