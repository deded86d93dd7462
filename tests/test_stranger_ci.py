"""tools/stranger_ci.py (``make stranger``): the simulator's ready line is read, a missing
profile or a simulator that cannot start is one line and exit 2, and the doctor step gives
the counts of its summary with only the connection variables."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stranger_ci", ROOT / "tools" / "stranger_ci.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["stranger_ci"] = module
    spec.loader.exec_module(module)
    return module


def test_a_missing_profile_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tool().main(["--profile", "no-such", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("stranger: no profile ")


def test_a_simulator_that_cannot_start_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = _tool()
    bad = tmp_path / "profiles" / "bad.toml"
    bad.parent.mkdir()
    bad.write_text("[simulator]\nno_such_knob = 1\n")
    monkeypatch.setattr(tool, "ROOT", tmp_path)  # profiles/ of this test; the sim refuses it
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    assert tool.main(["--profile", "bad", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "toolkit sim did not start" in err[0]
    assert "unknown simulator knob(s): no_such_knob" in err[0]


def test_the_doctor_step_with_the_connection_variables_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = _tool()
    monkeypatch.setenv("TOOLKIT_PROFILE", str(tmp_path / "must-not-be-read.toml"))
    proc, base_url, ws_url = tool.start_sim(ROOT / "profiles" / "default.toml", tmp_path / "s.log")
    try:
        assert base_url.startswith("http://127.0.0.1:") and ws_url.startswith("ws://127.0.0.1:")
        written = tmp_path / "written.toml"
        counts = tool.run_doctor(base_url, ws_url, written, tmp_path / "table.txt")
    finally:
        tool.stop_sim(proc)
    assert proc.returncode == 0  # stopped by SIGTERM, cleanly
    assert written.is_file() and len(counts) == 3 and counts[1] == 0  # nothing differs
