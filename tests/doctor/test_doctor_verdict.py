"""The doctor's verdict and words (issue: a doctor run whose sign-in failed exited 0 with
the default profile, and its table cut every message at 48 characters): a run in which a
step failed never exits 0, no text of a row is lost, and every unknown row says what the
user can do."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.doctor import diagnose
from toolkit.doctor._report import Diagnosis, Row
from toolkit.profile import DEFAULT_PROFILE
from toolkit.sim import Simulator

#: a service whose sign-in lives where the doctor does not look
HIDDEN_SIGNIN = DEFAULT_PROFILE.replace({"signin.path": "/v9/session/open"})


@pytest.fixture(scope="module")
def hidden_signin_sim() -> Simulator:
    with Simulator(seed=3, engine=False, history_orders=20, profile=HIDDEN_SIGNIN) as s:
        yield s  # type: ignore[misc]


def test_a_failed_sign_in_is_not_ok_and_says_what_it_tried(hidden_signin_sim: Simulator) -> None:
    with hidden_signin_sim.client(profile=DEFAULT_PROFILE) as client:
        diagnosis = diagnose(client, payload_timeout=0.2)
    assert "sign-in" in diagnosis.steps_failed
    assert not diagnosis.ok
    assert "INCOMPLETE: sign-in" in diagnosis.summary()
    note = diagnosis["signin.path"].note
    assert "tried /auth/signin" in note
    assert "[signin] path, key_field and secret_field" in note


def test_the_cli_exits_1_on_a_failed_step_also_with_the_profile_it_wrote(
    hidden_signin_sim: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    for name in ("TOOLKIT_ENV", "TOOLKIT_PROFILE_ID", "TOOLKIT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLKIT_API_KEY", "demo")
    monkeypatch.setenv("TOOLKIT_API_SECRET", "demo-secret")
    monkeypatch.setenv("TOOLKIT_BASE_URL", hidden_signin_sim.base_url)
    monkeypatch.setenv("TOOLKIT_WS_URL", hidden_signin_sim.ws_url)
    written = tmp_path / "observed.toml"
    assert main(["doctor", "--wait", "0.2", "--write-profile", str(written)]) == 1
    assert main(["doctor", "--wait", "0.2", "--profile", str(written)]) == 1
    out = capsys.readouterr().out
    assert "INCOMPLETE: sign-in" in out


def test_no_text_is_cut_from_the_table() -> None:
    long_note = "sign-in failed: no route answered (tried /auth/signin, /api/auth/signin, " + (
        "/v1/auth/signin, /login)"
    )
    long_value = "x" * 120
    diagnosis = Diagnosis(
        assumed=DEFAULT_PROFILE,
        rows=[
            Row("signin.path", "/auth/signin", None, "unknown", "/auth/signin", long_note),
            Row("check: items", None, long_value, "unknown", None, "seen"),
        ],
    )
    text = diagnosis.to_text(width=48)
    assert long_note in text  # the last column is whole
    assert f"[1] check: items observed: '{long_value}'" in text  # the cut cell, whole below
    table_line = next(line for line in text.splitlines() if line.startswith("check: items"))
    assert "...[1]" in table_line


def test_every_unknown_row_says_what_to_do(hidden_signin_sim: Simulator) -> None:
    with hidden_signin_sim.client(profile=DEFAULT_PROFILE) as client:
        diagnosis = diagnose(client, payload_timeout=0.2)
    unknown = [r for r in diagnosis if r.status == "unknown" and r.is_setting]
    assert unknown
    for row in unknown:
        assert any(w in row.note for w in ("set it", "set [", "--wait", "learns")), row


def test_what_only_run_time_shows_says_the_client_learns_it() -> None:
    """The limits and the limit events the doctor cannot see read-only are learnt by the
    client at run time: the unknown row says so, and still where the documentation says."""
    from toolkit.doctor._report import what_to_do

    for setting in ("stream.limit_events", "stream.idle_limit_s", "stream.max_duration_s"):
        text = what_to_do(setting)
        assert "learns it at run time" in text and "client.learned" in text, setting
        assert "documentation" in text
