"""``toolkit load`` on a folder or disk that refuses the export: one line naming the file
and what to do, exit status 1, no traceback; a folder where a file of the set goes is
refused before anything is sent."""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from _cli_env import point_at

from toolkit.cli import main
from toolkit.sim import Simulator


@pytest.fixture
def env(sim: Simulator, service_profile_file: Path, monkeypatch: pytest.MonkeyPatch) -> Simulator:
    return point_at(sim, service_profile_file, monkeypatch)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        (errno.EFBIG, "the file is too large for this filesystem (EFBIG)"),
        (errno.ENOSPC, "the disk is full (ENOSPC): free space or choose another folder"),
        (errno.EROFS, "the filesystem is read-only (EROFS)"),
        (errno.EACCES, "no permission to write in"),
    ],
)
def test_a_refused_export_is_one_line_naming_the_file(
    env: Simulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    code: int,
    hint: str,
) -> None:
    def write_table(table: Any, where: Any, **kwargs: Any) -> None:
        # pyarrow's words for a failed write: the errno in the text
        raise OSError(f"Error writing bytes to file. Detail: [errno {code}] refused")

    monkeypatch.setattr(pq, "write_table", write_table)
    out = tmp_path / "out"
    assert main(["load", "--status", "ACTIVE", "--out", str(out), "--no-progress"]) == 1
    err = _one_line(capsys)
    assert f"cannot write {out / 'orders.parquet'}: {hint}" in err
    assert not out.exists() or list(out.iterdir()) == []


def test_a_folder_where_a_file_goes_is_refused_before_the_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a closed port: a load attempted first would end in a TransportError instead
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("TOOLKIT_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("TOOLKIT_PROFILE", raising=False)
    (tmp_path / "trades.parquet").mkdir()
    code = main(["load", "--status", "ACTIVE", "--out", str(tmp_path), "--no-progress"])
    err = _one_line(capsys)
    assert code == 1
    assert f"--out cannot write {tmp_path / 'trades.parquet'}: it is a folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trades.parquet"]
