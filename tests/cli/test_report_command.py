"""``toolkit report --orders DIR [--market ROOT] --out FILE`` end to end on an export
written by ``OrderFrames.to_parquet``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from _synthetic import mixed_orders

from toolkit.cli import main


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from toolkit.frames._frames import build_frames

    d = tmp_path_factory.mktemp("export")
    build_frames(mixed_orders(60, seed=2)).to_parquet(d)
    return d


def test_report_command_writes_the_html_and_tables(
    export_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.html"
    tables = tmp_path / "tables"
    assert (
        main(["report", "--orders", str(export_dir), "--out", str(out), "--tables", str(tables)])
        == 0
    )
    page = out.read_text(encoding="utf-8")
    assert "Execution-quality report" in page and '<section id="checks">' in page
    assert "60 orders" in page
    summary = pd.read_parquet(tables / "summary.parquet").set_index("metric")
    assert summary.loc["orders", "value"] == 60
    printed = capsys.readouterr().out
    assert str(out) in printed and str(tables) in printed


def test_report_command_reads_a_partial_export(export_dir: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "orders.parquet").write_bytes((export_dir / "orders.parquet").read_bytes())
    out = tmp_path / "r.html"
    assert main(["report", "--orders", str(partial), "--out", str(out)]) == 0
    assert "<section" in out.read_text(encoding="utf-8")


def test_report_command_refuses_a_market_root_that_is_no_recording(
    export_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an empty folder, a typo, an empty path: refused in one line, never a report that
    # quietly says "market recording: none"
    out = tmp_path / "r.html"
    empty = tmp_path / "rec"
    empty.mkdir()
    for market in (str(empty), str(tmp_path / "nope")):
        argv = ["report", "--orders", str(export_dir), "--market", market, "--out", str(out)]
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "--market: " in err and market in err and "Traceback" not in err
    with pytest.raises(SystemExit) as info:
        main(["report", "--orders", str(export_dir), "--market", "", "--out", str(out)])
    assert info.value.code == 2 and "empty path" in capsys.readouterr().err
    assert not out.exists()


def test_report_command_errors_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert main(["report", "--orders", str(tmp_path / "nope"), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "is not a folder" in err and "Traceback" not in err
    assert main(["report", "--orders", str(tmp_path), "--out", str(out)]) == 1
    assert "no orders.parquet" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "case"),
    [
        ("--out", "a folder"),
        ("--out", "under a file"),
        ("--tables", "a file"),
        ("--tables", "under a file"),
        ("--tables", "the --out file"),
    ],
)
def test_both_outputs_are_checked_before_anything_is_written(
    export_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, case: str
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    out, tables = tmp_path / "r.html", tmp_path / "tables"
    bad = {
        "a folder": tmp_path,
        "a file": afile,
        "under a file": afile / "sub" / "x",
        "the --out file": out / "tables",
    }[case]
    if flag == "--out":
        out = bad
    else:
        tables = bad
    argv = ["report", "--orders", str(export_dir), "--out", str(out), "--tables", str(tables)]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"toolkit report: error: {flag}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # nothing written
    assert afile.read_text() == "x"


def test_an_export_whose_manifest_lists_files_now_missing_is_refused(
    export_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder with a manifest is an export set: files missing from it mean an export
    that was interrupted or half replaced, never a partial set to report on."""
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(export_dir, broken)
    assert (broken / "_manifest.json").exists()
    (broken / "fills.parquet").unlink()
    out = tmp_path / "r.html"
    assert main(["report", "--orders", str(broken), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_the_coverage_rule_is_set_from_the_command_line(
    export_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def thin(*flags: str) -> int:
        out = tmp_path / "r.html"
        assert main(["report", "--orders", str(export_dir), "--out", str(out), *flags]) == 0
        return out.read_text(encoding="utf-8").count("insufficient coverage")

    default = thin()
    assert thin("--min-orders", "1000") > default  # 60 orders: everything is thin
    assert thin("--min-orders", "0", "--min-coverage", "0%") < thin("--min-orders", "1000")
    assert thin("--min-coverage", "0.2", "--min-orders", "30") == default


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--min-coverage", "1.5"),
        ("--min-coverage", "nan"),
        ("--min-coverage", "x%"),
        ("--min-coverage", "-1%"),
        ("--min-orders", "-1"),
        ("--min-orders", "2.5"),
    ],
)
def test_a_bad_coverage_rule_is_refused_before_anything_is_written(
    export_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    out = tmp_path / "r.html"
    with pytest.raises(SystemExit) as info:
        main(["report", "--orders", str(export_dir), "--out", str(out), flag, value])
    err = capsys.readouterr().err
    assert info.value.code == 2 and flag in err and "Traceback" not in err
    assert not out.exists()


def test_the_help_states_the_reports_own_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    from toolkit.report._gate import MIN_COVERAGE, MIN_ORDERS

    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"default {MIN_COVERAGE:.0%}" in text and f"(default {MIN_ORDERS})" in text
