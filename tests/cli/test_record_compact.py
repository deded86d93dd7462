"""``toolkit record compact ROOT``: the closed days of a recording merged, one line saying
what was done, exit 0; a folder that is no recording is one line and exit 1, and a missing
ROOT a usage error (exit 2), never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from _tick_recording import T0, write_tick_files

from toolkit.cli import main
from toolkit.cli._errors import ERROR_STATUS
from toolkit.recording import read_recording


def test_compact_merges_the_closed_days_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tick_files(tmp_path, T0, 20, 3, 20 * 10**9)  # 2026-11-22: long over
    before = read_recording(tmp_path, columns="all")
    assert main(["record", "compact", str(tmp_path)]) == 0
    out = capsys.readouterr().out.strip()
    assert out == "compacted 1 day partition(s): 20 files into 1 (60 rows)"
    assert len(list(tmp_path.glob("channel=watchticker/date=*/*.parquet"))) == 1
    assert read_recording(tmp_path, columns="all").equals(before)
    assert main(["record", "compact", str(tmp_path), "--channel", "watchTicker"]) == 0
    assert capsys.readouterr().out.strip().startswith("compacted 0 day partition(s)")


def test_a_folder_that_is_no_recording_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["record", "compact", str(tmp_path / "nope")]) == ERROR_STATUS
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no recording at" in err and "Traceback" not in err


def test_compact_without_root_and_record_without_out_are_usage_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["record", "compact"])
    assert caught.value.code == 2
    assert "toolkit record compact ROOT" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        main(["record"])
    assert caught.value.code == 2
    assert "required: --out" in capsys.readouterr().err
