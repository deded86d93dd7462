"""A damaged or foreign file in a recording given to ``toolkit report --market``, ``toolkit
sync --from-recording`` or ``toolkit load --ids-from``: one line naming the file, exit 1,
no traceback, nothing written."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from _bad_files import DAMAGES, SAYS, write_recording
from _cli_env import point_at
from _synthetic import mixed_orders

from toolkit.cli import main
from toolkit.cli._errors import ERROR_STATUS
from toolkit.sim import Simulator


@pytest.fixture
def env(sim: Simulator, service_profile_file: Path, monkeypatch: pytest.MonkeyPatch) -> Simulator:
    return point_at(sim, service_profile_file, monkeypatch)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clean") / "rec"
    write_recording(root)
    return root


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from toolkit.frames._frames import build_frames

    d = tmp_path_factory.mktemp("export")
    build_frames(mixed_orders(20, seed=3)).to_parquet(d)
    return d


def _report(rec: Path, tmp: Path, export: Path) -> list[str]:
    return ["report", "--orders", str(export), "--market", str(rec), "--out", str(tmp / "out")]


def _sync(rec: Path, tmp: Path, export: Path) -> list[str]:
    return ["sync", "--store", str(tmp / "out"), "--from-recording", str(rec), "--no-listing"]


def _load(rec: Path, tmp: Path, export: Path) -> list[str]:
    return ["load", "--ids-from", str(rec), "--out", str(tmp / "out"), "--no-progress"]


#: each command: (the channel its bad file goes in, its argv, the prefix of its message)
COMMANDS: dict[str, tuple[str, Callable[[Path, Path, Path], list[str]], str]] = {
    "report --market": ("watchticker", _report, "toolkit report: error: --market: "),
    "sync --from-recording": ("watchorders", _sync, "toolkit sync: error: "),
    "load --ids-from": ("watchorders", _load, "toolkit load: error: --ids-from: "),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_recording_file_is_one_line_naming_it(
    env: Simulator,
    clean: Path,
    export_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    damage: str,
) -> None:
    rec = tmp_path / "rec"
    shutil.copytree(clean, rec)
    channel, argv, prefix = COMMANDS[command]
    bad = DAMAGES[damage](rec, channel)
    capsys.readouterr()
    assert main(argv(rec, tmp_path, export_dir)) == ERROR_STATUS
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert lines[0].startswith(prefix), lines[0]
    assert str(bad) in lines[0] and SAYS[damage] in lines[0]
    assert captured.out == ""
    out = tmp_path / "out"
    # nothing written: no report, no export; the store at most bound to the service
    assert not out.exists() or not any(out.glob("**/*.parquet")), sorted(out.rglob("*"))
