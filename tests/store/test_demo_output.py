"""The demo's output folder (issue 16 item 5) and its use of the store: a previous demo run
is cleared, a folder holding other files is never touched (a timestamped one is used), and
the summary says which, and where the orders came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.demo import MARKER, prepare_out, run_demo


def test_new_folder_is_used_as_is(tmp_path: Path) -> None:
    out, note = prepare_out(tmp_path / "demo")
    assert out == tmp_path / "demo" and "new, empty" in note
    assert (out / MARKER).is_file()


def test_previous_demo_run_is_cleared(tmp_path: Path) -> None:
    out, _ = prepare_out(tmp_path)
    (out / "report.html").write_text("old")
    (out / "store" / "month=2026-01").mkdir(parents=True)
    again, note = prepare_out(tmp_path)
    assert again == tmp_path and "previous demo run there was cleared" in note
    assert sorted(p.name for p in again.iterdir()) == [MARKER]


def test_folder_with_other_files_is_left_untouched(tmp_path: Path) -> None:
    mine = tmp_path / "thesis.tex"
    mine.write_text("precious")
    out, note = prepare_out(tmp_path)
    assert mine.read_text() == "precious"
    assert out.parent == tmp_path and out.name.startswith("demo-")
    assert str(out) in note and "left untouched" in note


def test_a_file_as_out_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError):
        prepare_out(tmp_path / "f")


def test_demo_summary_says_where_orders_came_from(tmp_path: Path) -> None:
    result = run_demo(tmp_path, seed=5, record_seconds=1.0, history_orders=150, log=lambda _: None)
    summary = result.summary()
    assert result.store is not None and any(result.store.glob("month=*/part-*.parquet"))
    assert "from listing" in summary and "from recording" in summary
    assert result.sources["recording"] >= 1  # the market orders placed during the demo
    assert "every order" not in summary
    assert any("market orders" in w for w in result.coverage_warnings)
