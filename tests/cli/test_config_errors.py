"""Configuration typed by hand, on the command line: a profile the checks refuse, a
secret pasted with a space inside: one line naming what and where, exit 1, no traceback,
and the secret nowhere in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.cli import main


def test_a_refused_profile_is_one_line_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = tmp_path / "real.toml"
    profile.write_bytes("\ufeff# ours\n[listing]\npage_default = 500\n".encode())
    monkeypatch.setenv("TOOLKIT_ENV", "local")
    monkeypatch.setenv("TOOLKIT_PROFILE", f"{profile}\n")
    code = main(["load", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert f"TOOLKIT_PROFILE: {profile}, line 3 (listing.page_default): listing needs" in err
    assert not (tmp_path / "out").exists()


def test_a_secret_with_a_space_inside_is_one_line_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "toolkit.env"
    env_file.write_bytes(
        "\ufeffTOOLKIT_ENV=local\nTOOLKIT_API_KEY=demo\nTOOLKIT_API_SECRET=demo secret\n".encode()
    )
    for name in ("TOOLKIT_ENV", "TOOLKIT_API_KEY", "TOOLKIT_API_SECRET", "TOOLKIT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    code = main(["load", "--env-file", str(env_file), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert "TOOLKIT_API_SECRET) holds a space at character 5 of 11" in err
    assert "demo secret" not in err
