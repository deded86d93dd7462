"""``toolkit doctor``: the table on stdout, exit 0 when nothing differs and 1 when something
does, ``--write-profile`` writing a loadable profile, ``--profile`` checking another one, and
one clear line (exit 2, no traceback) for mistakes of the user or the environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ALT, ROOT, activity, needs_profiled_sim

from toolkit.cli import main
from toolkit.profile import load_profile
from toolkit.sim import Simulator


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("TOOLKIT_ENV", "TOOLKIT_WS_URL", "TOOLKIT_PROFILE_ID", "TOOLKIT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLKIT_API_KEY", "demo")
    monkeypatch.setenv("TOOLKIT_API_SECRET", "demo-secret")
    return monkeypatch


def _point(env: pytest.MonkeyPatch, sim: Simulator) -> None:
    env.setenv("TOOLKIT_BASE_URL", sim.base_url)
    env.setenv("TOOLKIT_WS_URL", sim.ws_url)


def test_default_service_exits_0(
    default_sim: Simulator, clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _point(clean_env, default_sim)
    code = main(["doctor", "--wait", "0.2"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.splitlines()[0].split()[:4] == ["setting", "assumed", "observed", "status"]
    assert "0 differ" in out.out
    assert "demo-secret" not in out.out + out.err


@needs_profiled_sim
def test_alt_service_exits_1_and_writes_the_observed_profile(
    alt_sim: Simulator,
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    _point(clean_env, alt_sim)
    target = tmp_path / "observed.toml"
    with activity(alt_sim):
        code = main(["doctor", "--wait", "5", "--write-profile", str(target)])
    out = capsys.readouterr().out
    assert code == 1
    assert '[rest] fetch_order_param = "id"' in out
    assert f"observed profile written to {target}" in out
    observed = load_profile(target)
    assert observed.rest.fetch_order_param == "id"
    assert observed.signin.token_field == ALT.signin.token_field
    assert observed.payloads.balance_list == ALT.payloads.balance_list
    assert "# doctor: observed" in target.read_text()


@needs_profiled_sim
def test_checking_the_right_profile_exits_0(
    alt_sim: Simulator, clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _point(clean_env, alt_sim)
    with activity(alt_sim):
        code = main(["doctor", "--wait", "5", "--profile", str(ROOT / "profiles" / "alt.toml")])
    out = capsys.readouterr().out
    assert code == 0, out


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["doctor"], {"TOOLKIT_API_SECRET": None}, "TOOLKIT_API_SECRET"),
        (["doctor", "--base-url", "http://127.0.0.1:9"], {}, "no answer from"),
        (["doctor", "--profile", "/no/such/profile.toml"], {}, "profile file not found"),
        (["doctor", "--env", "sandbox"], {"TOOLKIT_BASE_URL": None}, "TOOLKIT_BASE_URL"),
    ],
)
def test_mistakes_are_one_line(
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    env: dict[str, str | None],
    message: str,
) -> None:
    clean_env.setenv("TOOLKIT_BASE_URL", "http://127.0.0.1:9")
    for name, value in env.items():
        if value is None:
            clean_env.delenv(name, raising=False)
        else:
            clean_env.setenv(name, value)
    code = main(args)
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("toolkit doctor: error:")
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("case", ["a folder", "in a missing folder", "under a file"])
def test_a_bad_write_profile_is_refused_before_the_checks(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    # the base address answers nothing: reaching it would say "no answer from"
    clean_env.setenv("TOOLKIT_BASE_URL", "http://127.0.0.1:9")
    afile = tmp_path / "afile"
    afile.write_text("x")
    target = {
        "a folder": tmp_path,
        "in a missing folder": tmp_path / "nope" / "p.toml",
        "under a file": afile / "p.toml",
    }[case]
    code = main(["doctor", "--write-profile", str(target)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"toolkit doctor: error: --write-profile {target}")
    assert "no answer" not in err and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_doctor_is_a_listed_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    out = capsys.readouterr().out
    assert "--write-profile" in out and "Exit status" in out
