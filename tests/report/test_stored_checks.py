"""The data checks kept on disk (toolkit/report/_stored_checks.py): counted and shown a few
rows per check without reading every row, and a report from parts with more checks than
its page shows draws the same page as the report holding them all in memory."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _split_parts import split_parts
from _tables_cases import CASES

from toolkit.report import _columnar
from toolkit.report._api import ExecutionReport, execution_report
from toolkit.report._checks import CHECK_COLUMNS, conform_checks
from toolkit.report._stored_checks import StoredChecks
from toolkit.report._tables import MAX_HTML_ROWS


def _rows(check: str, n: int, start: int = 0) -> pd.DataFrame:
    return conform_checks(
        [
            pd.DataFrame(
                {
                    "orderId": [f"o{i}" for i in range(start, start + n)],
                    "check": check,
                    "value": np.arange(n, dtype="float64"),
                    "detail": "differs",
                }
            )
        ]
    )


def _store(frames: list[pd.DataFrame], folder: Path, group: int = 64) -> StoredChecks:
    files = []
    for i, f in enumerate(frames):
        files.append(folder / f"checks-{i}.parquet")
        pq.write_table(pa.Table.from_pandas(f, preserve_index=False), files[-1], group)
    return StoredChecks(tuple(files))


def test_heads_and_counts_read_only_what_they_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _rows("a", 1000), _rows("b", 30, 1000)
    stored = _store([a, pd.concat([b, _rows("a", 5, 2000)], ignore_index=True)], tmp_path, 100)
    every = stored.read()
    pd.testing.assert_frame_equal(every, conform_checks([a, b, _rows("a", 5, 2000)]))
    groups: list[list[int]] = []
    real = pq.ParquetFile.read_row_groups

    def spy(self: pq.ParquetFile, row_groups: Any, *args: Any, **kw: Any) -> pa.Table:
        groups.append(list(row_groups))
        return real(self, row_groups, *args, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    got = stored.heads(150)
    want = every.groupby("check", sort=False).head(150).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
    # the first file: 2 of its 10 row groups hold the 150 rows shown; the second: b's
    assert groups == [[0, 1], [0]]
    assert stored.counts() == {"a": 1005, "b": 30}
    assert stored.rows() == 1035
    assert StoredChecks().read().columns.tolist() == list(CHECK_COLUMNS)


def _page(html: str) -> str:
    return re.sub(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "Generated -", html)


def test_a_report_from_parts_with_many_checks_shows_what_the_report_in_memory_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames, market = CASES["mixed 300 with market"]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = execution_report(frames, market)
        split = split_parts(frames, market, parts=3)
    kept = split.checks.read()
    outliers = memory["data_checks"].iloc[len(kept) :]
    # more rows of two checks than the page shows, in files of several row groups
    many = [kept, _rows("average vs trades VWAP", MAX_HTML_ROWS + 150), _rows("x", 7, 9)]
    split.checks = _store(many, tmp_path)
    every = conform_checks([*many, outliers])
    tables = _columnar.tables_from_parts(split)
    tables["worst_order_quotes"] = _columnar.quotes_from_parts(split, tables["worst_orders"])
    disk = ExecutionReport.from_parts(split, tables)
    whole = dict(memory.tables)
    whole["data_checks"] = every
    held = ExecutionReport(whole)

    def never(self: StoredChecks) -> pd.DataFrame:
        raise AssertionError("every check row read for the page")

    with monkeypatch.context() as m:
        m.setattr(StoredChecks, "read", never)
        page = disk.to_html(figures=False)
        assert disk.coverage == held.coverage and repr(disk) == repr(held)
        disk._repr_html_()
    assert _page(page) == _page(held.to_html(figures=False))
    n = int((every["check"] == "average vs trades VWAP").sum())
    assert n > MAX_HTML_ROWS + 150 and f"First {MAX_HTML_ROWS} of {n:,} rows" in page
    # asked for, the table is every row; written, every row too
    pd.testing.assert_frame_equal(disk["data_checks"], held["data_checks"])
    disk.to_parquet(tmp_path / "set")
    back = ExecutionReport.read_parquet(tmp_path / "set")
    pd.testing.assert_frame_equal(back["data_checks"], every)
    disk.close()
