"""Tests of ``toolkit load``: environment and options, --env-file, --ids-file, Parquet and
CSV output, the one-line summary, and clean errors (a bad --out refused before anything is
sent)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest

from toolkit.cli import main
from toolkit.cli._connect import read_env_file
from toolkit.cli._load import read_ids_file
from toolkit.sim import Simulator


@pytest.fixture
def env(sim: Simulator, service_profile_file: Path, monkeypatch: pytest.MonkeyPatch) -> Simulator:
    for name in ("TOOLKIT_ENV", "TOOLKIT_WS_URL", "TOOLKIT_PROFILE_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLKIT_PROFILE", str(service_profile_file))  # the simulator's profile
    monkeypatch.setenv("TOOLKIT_BASE_URL", sim.base_url)
    monkeypatch.setenv("TOOLKIT_API_KEY", "demo")
    monkeypatch.setenv("TOOLKIT_API_SECRET", "demo-secret")
    return sim


def test_load_to_parquet(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["load", "--status", "FINALIZED", "--out", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and len(out) == 1
    orders = pd.read_parquet(tmp_path / "orders.parquet")
    assert out[0].startswith(f"loaded {len(orders)} orders")
    assert "(parquet)" in out[0] and env.base_url in out[0]
    # FINALIZED as the profile defines it
    assert set(orders["status"]) <= set(env.profile.listing.finalized_statuses)
    assert {p.name for p in tmp_path.iterdir()} >= {"orders.parquet", "fills.parquet"}


def test_load_ids_file_to_csv(env: Simulator, tmp_path: Path) -> None:
    ids = env.control.order_ids(type="market")[:10]
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("# market orders\n" + "\n".join(ids) + "\n\n")
    out = tmp_path / "out"
    code = main(["load", "--ids-file", str(ids_file), "--out", str(out), "--format", "csv",
                 "--no-progress"])  # fmt: skip
    assert code == 0
    # ids are text, a numeric one too (spec 2.5 shows no types)
    assert sorted(pd.read_csv(out / "orders.csv", dtype={"id": str})["id"]) == sorted(ids)


def test_env_file_and_options(
    sim: Simulator, service_profile_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "TOOLKIT_BASE_URL",
        "TOOLKIT_API_KEY",
        "TOOLKIT_API_SECRET",
        "TOOLKIT_ENV",
        "TOOLKIT_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    env_file = tmp_path / ".env"
    env_file.write_text(
        f"# local simulator\nexport TOOLKIT_BASE_URL={sim.base_url}\n"
        "TOOLKIT_API_KEY='wrong'\nTOOLKIT_API_SECRET=\"demo-secret\"\n"
        f"TOOLKIT_PROFILE={service_profile_file}\n"
    )
    out = tmp_path / "out"
    code = main(["load", "--env-file", str(env_file), "--api-key", "demo", "--symbol", "BTC/BRL",
                 "--since", "2000-01-01", "--out", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    assert set(pd.read_parquet(out / "orders.parquet")["symbol"]) == {"BTC/BRL"}


def test_errors_are_one_clean_line(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["load", "--status", "open", "--out", str(tmp_path / "x"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "unknown status 'open'" in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_sandbox_without_urls_is_a_clear_error(
    env: Simulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOOLKIT_BASE_URL")
    code = main(["load", "--env", "sandbox", "--out", str(tmp_path)])
    assert code == 1 and "TOOLKIT_BASE_URL" in capsys.readouterr().err


def test_env_and_ids_file_parsing(tmp_path: Path) -> None:
    path = tmp_path / "e"
    path.write_text("A=1\n# c\n\nexport B = 'two'\n")
    assert read_env_file(path) == {"A": "1", "B": "two"}
    path.write_text("A=1\nSECRETVALUE\n")
    with pytest.raises(ValueError) as info:
        read_env_file(path)
    assert "SECRETVALUE" not in str(info.value) and ":2:" in str(info.value)
    ids = tmp_path / "ids"
    ids.write_text(" a \n\n# x\nb\n")
    assert read_ids_file(ids) == ["a", "b"]


def test_load_ids_from_a_recording(env: Simulator, tmp_path: Path) -> None:
    import time

    from toolkit.recording._rows import row_from_message
    from toolkit.recording._writer import RecordingWriter

    ids = env.control.order_ids(type="market")[:5]
    root = tmp_path / "rec"
    writer = RecordingWriter(root)
    writer.open()
    for seq, order_id in enumerate([*ids, ids[0]]):  # an id seen twice is loaded once
        message = {"id": order_id, "status": "closed", "symbol": "BTC/BRL"}
        raw = {"channel": "watchorders", "message": message}
        writer.add(row_from_message(raw, received_at_ns=time.time_ns(), connection_id="c1",
                                    seq=seq))  # fmt: skip
    writer.close()
    out = tmp_path / "out"
    code = main(["load", "--ids-from", str(root), "--out", str(out), "--no-progress"])
    assert code == 0
    assert sorted(pd.read_parquet(out / "orders.parquet")["id"]) == sorted(ids)


def test_ids_from_a_missing_recording_is_a_clean_error(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["load", "--ids-from", str(tmp_path / "nope"), "--out", str(tmp_path)])
    assert code == 1
    assert "no recording" in capsys.readouterr().err


def test_profile_flag_wins_over_the_environment(
    env: Simulator,
    service_profile_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--profile FILE`` is the service profile the client assumes (TOOLKIT_PROFILE loses)."""
    bogus = tmp_path / "bogus.toml"
    bogus.write_text('[signin]\npath = "/nowhere"\n')
    monkeypatch.setenv("TOOLKIT_PROFILE", str(bogus))
    out = tmp_path / "out"
    args = ["load", "--status", "ACTIVE", "--out", str(out), "--no-progress"]
    assert main(args) == 1 and "signin.path" in capsys.readouterr().err
    assert main([*args, "--profile", str(service_profile_file)]) == 0
    assert (out / "orders.parquet").exists()


@pytest.fixture
def counting_service(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A service on 127.0.0.1 that answers 401 to everything and notes each request: the
    list stays empty when nothing is sent."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_PATCH = _refuse

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    for name in ("TOOLKIT_ENV", "TOOLKIT_WS_URL", "TOOLKIT_PROFILE_ID", "TOOLKIT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLKIT_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("TOOLKIT_API_KEY", "demo")
    monkeypatch.setenv("TOOLKIT_API_SECRET", "demo-secret")
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _unwritable(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``folder`` made read-only; as root (who may write anyway) the permission check
    answers as it would for anybody else."""
    folder.chmod(0o555)
    if os.geteuid() == 0:
        real = os.access

        def access(path: object, mode: int, *args: object, **kwargs: object) -> bool:
            if Path(str(path)) == folder and mode & os.W_OK:
                return False
            return real(path, mode, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "access", access)


@pytest.mark.parametrize(
    "case", ["an existing file", "under a file", "an unwritable folder", "in an unwritable folder"]
)
def test_a_bad_out_is_refused_before_anything_is_sent(
    case: str,
    counting_service: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    locked = tmp_path / "locked"
    locked.mkdir()
    out = {
        "an existing file": afile,
        "under a file": afile / "sub" / "out",
        "an unwritable folder": locked,
        "in an unwritable folder": locked / "out",
    }[case]
    if "unwritable" in case:
        _unwritable(locked, monkeypatch)
    try:
        code = main(["load", "--out", str(out), "--no-progress"])
    finally:
        locked.chmod(0o755)
    err = capsys.readouterr().err
    assert code == 1 and counting_service == []
    assert err.count("\n") == 1 and "--out" in err and "Traceback" not in err
    assert afile.read_text() == "x" and list(locked.iterdir()) == []


@pytest.mark.parametrize("flag", ["--ids-file", "--env-file"])
def test_an_input_file_that_is_not_utf8_is_one_line_naming_it(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("TOOLKIT_API_SECRET=s\u00e9cret-value\n".encode("latin-1"))
    code = main(["load", flag, str(path), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert f"{flag} {path}: not UTF-8 text" in err
    assert "cret-value" not in err  # the env file's secret is never shown
    assert not (tmp_path / "out").exists()
