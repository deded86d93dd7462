"""``toolkit load --ids-file`` reads its file as ``toolkit sync --ids`` does: a UTF-8 BOM
(Notepad's and Excel's "UTF-8") is not part of the first id, a bad id is named with its
file and line before anything is sent, a missing file is one line; orders not found are
said once, not again as a Python warning naming a line of the library."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from _cli_env import point_at

from toolkit.cli import main
from toolkit.client._loaders import MissingOrdersWarning
from toolkit.sim import Simulator


@pytest.fixture
def env(sim: Simulator, service_profile_file: Path, monkeypatch: pytest.MonkeyPatch) -> Simulator:
    return point_at(sim, service_profile_file, monkeypatch)


def _load(ids_file: Path, out: Path) -> int:
    return main(["load", "--ids-file", str(ids_file), "--out", str(out), "--no-progress"])


@pytest.mark.parametrize("command", ["load", "sync"])
def test_an_ids_file_with_a_bom_loses_no_order(
    env: Simulator, tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = env.control.order_ids(type="market")[:2]
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("\n".join(ids) + "\n", encoding="utf-8-sig")
    if command == "load":
        assert _load(ids_file, tmp_path / "out") == 0
        assert sorted(pd.read_parquet(tmp_path / "out" / "orders.parquet")["id"]) == sorted(ids)
    else:
        argv = ["sync", "--store", str(tmp_path / "store"), "--ids", str(ids_file)]
        assert main([*argv, "--no-listing"]) == 0
    assert "missing" not in capsys.readouterr().out


def test_a_bad_id_or_a_missing_file_is_one_line_before_anything_is_sent(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("# ids\nm-000001-aaaa\nbad/id\n", encoding="utf-8")
    out = tmp_path / "out"
    assert _load(ids_file, out) == 1
    err = capsys.readouterr().err
    assert f"--ids-file {ids_file}:3:" in err and "Traceback" not in err
    assert _load(tmp_path / "nope.txt", out) == 1
    assert "--ids-file: no file" in capsys.readouterr().err
    assert not out.exists()


def test_orders_not_found_are_no_python_warning_on_the_command_line(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    known = env.control.order_ids(type="market")[0]
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text(f"{known}\nm-000001-zzzz\n", encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _load(ids_file, tmp_path / "out") == 0
    assert not [w for w in caught if issubclass(w.category, MissingOrdersWarning)]
    assert "1 missing" in capsys.readouterr().out
