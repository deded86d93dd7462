"""The report's engine connection (toolkit/report/_engine.py): every core, the memory limit
asked for, a spill folder gone on exit, and no progress bar drawn into a terminal or
notebook by a long query."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolkit.errors import InvalidRequest
from toolkit.report._engine import MEMORY_ENV, connection


def setting(con: object, name: str) -> object:
    row = con.execute(f"SELECT current_setting('{name}')").fetchone()  # type: ignore[attr-defined]
    return row[0]


def test_the_connection_runs_on_every_core_in_a_spill_folder() -> None:
    with connection("512MB") as con:
        assert setting(con, "threads") == (os.cpu_count() or 1)
        assert "488" in str(setting(con, "memory_limit")) or "512" in str(
            setting(con, "memory_limit")
        )
        spill = Path(str(setting(con, "temp_directory")))
        assert spill.is_dir()
    assert not spill.exists()


def test_the_memory_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_ENV, "300MB")
    with connection() as con:
        assert "286" in str(setting(con, "memory_limit")) or "300" in str(
            setting(con, "memory_limit")
        )
    monkeypatch.setenv(MEMORY_ENV, "a lot")
    with pytest.raises(InvalidRequest, match=MEMORY_ENV), connection():
        pass


def test_no_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    # DuckDB draws its bar when stdout is a terminal (and a widget in a notebook): a
    # process whose stdout is a terminal asks the engine's setting
    import pty
    import subprocess
    import sys

    out = tmp_path / "setting.txt"
    code = (
        "import sys; from toolkit.report._engine import connection\n"
        "with connection() as con:\n"
        "    v = con.execute(\"SELECT current_setting('enable_progress_bar')\").fetchone()[0]\n"
        f"open({str(out)!r}, 'w').write(str(v))\n"
    )
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, "-c", code],
            stdout=follower,
            check=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert out.read_text() == "False"
