"""``--give-up-after SECONDS``: the CLI's way to the client's breaker, so a dead service
ends a load on the user's terms, in one line (a closed port on loopback)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from toolkit.cli._main import main


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TOOLKIT_ENV", "TOOLKIT_WS_URL", "TOOLKIT_PROFILE", "TOOLKIT_PROFILE_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLKIT_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("TOOLKIT_API_KEY", "demo")
    monkeypatch.setenv("TOOLKIT_API_SECRET", "demo-secret")


def test_a_dead_service_ends_the_load_in_one_line_naming_the_window(
    env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main(["load", "--give-up-after", "0.3", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code != 0
    assert "is not answering" in err and "breaker_after_s=0.3" in err
    assert "Traceback" not in err and "demo-secret" not in err
    assert not out.exists() or not any(out.iterdir())  # nothing half written


@pytest.mark.parametrize("value", ["-1", "nan", "soon"])
def test_a_bad_window_is_refused_before_anything_is_sent(
    env: None, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["load", "--give-up-after", value, "--out", "x", "--no-progress"])
    assert info.value.code == 2
    assert "--give-up-after" in capsys.readouterr().err
