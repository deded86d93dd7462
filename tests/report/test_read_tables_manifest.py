"""``ExecutionReport.read_parquet`` reads the tables its manifest lists, and only a complete
set: a folder where a later set was interrupted is refused, never read as a mix of two
reports, and other Parquet files beside the tables are not taken for tables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _report_frames import closed_order, make_frames

from toolkit._atomic import MANIFEST
from toolkit.errors import InvalidRequest
from toolkit.report import ExecutionReport, execution_report


@pytest.fixture(scope="module")
def reports() -> tuple[ExecutionReport, ExecutionReport]:
    first = execution_report(make_frames([closed_order("a", "buy", 100.0)]))
    second = execution_report(make_frames([closed_order("z", "sell", 99.0)]))
    return first, second


def test_an_interrupted_set_over_an_earlier_one_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reports: tuple[ExecutionReport, ExecutionReport],
) -> None:
    first, second = reports
    first.to_parquet(tmp_path)
    real, renamed = os.replace, []

    def replace(src: Any, dst: Any) -> None:
        if len(renamed) == 3:  # Ctrl-C with three tables of the new set in place
            raise KeyboardInterrupt
        real(src, dst)
        renamed.append(dst)

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", replace)
        with pytest.raises(KeyboardInterrupt):
            second.to_parquet(tmp_path)
    with pytest.raises(InvalidRequest, match=f"has no {MANIFEST}"):
        ExecutionReport.read_parquet(tmp_path)
    mixed = ExecutionReport.read_parquet(tmp_path, require_manifest=False)
    assert set(mixed.tables) == set(first.tables)


def test_other_parquet_files_beside_the_tables_are_not_tables(
    tmp_path: Path, reports: tuple[ExecutionReport, ExecutionReport]
) -> None:
    first, _ = reports
    first.to_parquet(tmp_path)
    pd.DataFrame({"id": ["o1"]}).to_parquet(tmp_path / "orders.parquet")
    back = ExecutionReport.read_parquet(tmp_path)
    assert set(back.tables) == set(first.tables)
    pd.testing.assert_frame_equal(back["summary"], first["summary"])


def test_no_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="no report tables at"):
        ExecutionReport.read_parquet(tmp_path / "nope")
