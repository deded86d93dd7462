"""A report built from per-order parts on disk: the same page, figures, charts and
Parquet set as the report in memory, while only the declared columns (and the worst
orders' rows) of the parts are ever read, and the parts' folder lives as long as it."""

from __future__ import annotations

import gc
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from _split_parts import split_parts
from _tables_cases import CASES

from toolkit.errors import InvalidRequest
from toolkit.report import _api, _columnar
from toolkit.report._api import ExecutionReport, execution_report
from toolkit.report._columnar import TABLE_COLUMNS, WORST_KEY
from toolkit.report._columns import PER_ORDER_COLUMNS
from toolkit.report._figures import FIGURE_COLUMNS
from toolkit.report._orders_on_disk import _STATS_COLUMNS, PAGE_COLUMNS

CASE = "mixed 300 with market"
#: the column sets the report may read of every order: a table's, a figure's, the page's,
#: the scope line's, the outliers' orderIds (then taken by position)
DECLARED = {
    *(frozenset(c) for c in TABLE_COLUMNS.values()),
    *(frozenset(c) for c in FIGURE_COLUMNS.values()),
    frozenset(PAGE_COLUMNS),
    frozenset(_STATS_COLUMNS),
    frozenset({"orderId"}),
    frozenset(WORST_KEY),
    frozenset(),
}


def _reports(name: str = CASE, parts: int = 3) -> tuple[ExecutionReport, ExecutionReport]:
    frames, market = CASES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = execution_report(frames, market)
        split = split_parts(frames, market, parts=parts)
        tables = _columnar.tables_from_parts(split)
    tables["worst_order_quotes"] = _columnar.quotes_from_parts(split, tables["worst_orders"])
    return memory, ExecutionReport.from_parts(split, tables)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any, Any]]]:
    """Every read of a Parquet file through pyarrow: (file name, columns, filters)."""
    seen: list[tuple[str, Any, Any]] = []
    real = pq.read_table

    def spy(source: Any, *args: Any, **kw: Any) -> Any:
        seen.append((Path(str(source)).name, kw.get("columns"), kw.get("filters")))
        return real(source, *args, **kw)

    monkeypatch.setattr(pq, "read_table", spy)
    yield seen


def _page(html: str) -> str:
    return re.sub(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "Generated -", html)


def test_a_report_from_parts_shows_what_the_report_in_memory_shows(
    reads: list[tuple[str, Any, Any]],
) -> None:
    memory, disk = _reports()
    assert repr(disk) == repr(memory)
    assert disk.describe() == memory.describe()
    assert disk.coverage == memory.coverage
    assert _page(disk.to_html(figures=False)) == _page(memory.to_html(figures=False))
    assert _page(disk.to_html()) == _page(memory.to_html())
    assert disk._repr_html_() == memory._repr_html_()
    assert list(disk.figures) == list(memory.figures)
    worst = str(disk["worst_orders"]["orderId"].iloc[0])
    chart = disk.order_chart(worst)
    assert chart.axes[0].get_title() == memory.order_chart(worst).axes[0].get_title()
    for name, table in memory.tables.items():
        if name != "per_order":
            pd.testing.assert_frame_equal(disk[name], table, obj=name)
    # neither the tables nor the page read every column of the orders: each read is a
    # declared set of columns, or the rows of the worst orders by id
    orders = [(c, f) for n, c, f in reads if n.startswith("per_order")]
    assert len(orders) > len(TABLE_COLUMNS)
    for columns, filters in orders:
        if filters is None:
            assert columns is not None and frozenset(columns) in DECLARED, columns
        else:
            assert filters[0][:2] == ("orderId", "in") and len(filters[0][2]) <= 20
    disk.close()


def test_per_order_of_a_report_from_parts_is_every_order_read_on_demand(
    reads: list[tuple[str, Any, Any]],
) -> None:
    memory, disk = _reports(parts=7)
    reads.clear()
    po = disk["per_order"]
    whole = [c for n, c, _ in reads if n.startswith("per_order")]
    assert len(whole) == 7 and all(list(c) == list(PER_ORDER_COLUMNS) for c in whole)
    pd.testing.assert_frame_equal(pd.DataFrame(po), pd.DataFrame(memory["per_order"]))
    assert "per_order" in disk.tables and list(disk.tables) == list(memory.tables)
    disk.close()


def test_a_report_from_parts_round_trips_through_parquet(tmp_path: Path) -> None:
    memory, disk = _reports(parts=3)
    memory.to_parquet(tmp_path / "memory")
    disk.to_parquet(tmp_path / "disk")
    assert sorted(p.name for p in (tmp_path / "disk").iterdir()) == sorted(
        p.name for p in (tmp_path / "memory").iterdir()
    )
    back = ExecutionReport.read_parquet(tmp_path / "disk")
    want = ExecutionReport.read_parquet(tmp_path / "memory")
    assert list(back.tables) == list(want.tables)
    for name, table in want.tables.items():
        pd.testing.assert_frame_equal(back[name], table, obj=name)
    pd.testing.assert_frame_equal(
        pd.DataFrame(back["per_order"]), pd.DataFrame(memory["per_order"])
    )
    assert _page(back.to_html(figures=False)) == _page(memory.to_html(figures=False))
    disk.close()


def test_an_empty_report_from_parts(tmp_path: Path) -> None:
    memory, disk = _reports("empty", parts=2)
    assert repr(disk) == repr(memory)
    assert _page(disk.to_html()) == _page(memory.to_html())
    disk.to_parquet(tmp_path / "set")
    back = ExecutionReport.read_parquet(tmp_path / "set")
    assert back["per_order"].empty and list(back["per_order"].columns) == list(
        memory["per_order"].columns
    )
    disk.close()


def test_the_report_owns_the_parts_folder_until_closed_or_collected() -> None:
    _, disk = _reports("routing", parts=2)
    parts = disk._parts
    assert parts is not None and parts.folder is not None and parts.folder.is_dir()
    first = parts.folder
    disk.close()
    disk.close()
    assert not first.exists() and parts.folder is None
    _, other = _reports("routing", parts=2)
    folder = other._parts.folder if other._parts is not None else None
    assert folder is not None and folder.is_dir()
    del other
    gc.collect()
    assert not folder.exists()


def test_the_tables_of_a_dropped_report_still_read_its_orders() -> None:
    # execution_report(path).tables: the report is collected at once, its tables are not;
    # the folder goes with the parts they read per_order from, not with the report
    memory, disk = _reports("routing", parts=2)
    tables = disk.tables
    parts = disk._parts
    folder = parts.folder if parts is not None else None
    del disk, parts
    gc.collect()
    assert folder is not None and folder.is_dir()
    pd.testing.assert_frame_equal(tables["per_order"], memory["per_order"])
    del tables
    gc.collect()
    assert not folder.exists()


def test_execution_report_through_parts_equals_the_report_in_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frames, market = CASES[CASE]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = execution_report(frames, market)
    made: list[Any] = []

    def parts_for(frames: Any, market: Any, *, max_quote_age: float | None) -> Any:
        made.append(split_parts(frames, market, parts=2, max_quote_age=max_quote_age))
        return made[-1]

    monkeypatch.setattr(_api, "_order_parts_for", parts_for)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        disk = execution_report(frames, market)
    assert made and disk._parts is made[0]
    for name, table in memory.tables.items():
        if name != "per_order":
            pd.testing.assert_frame_equal(disk[name], table, obj=name)
    assert repr(disk) == repr(memory)
    disk.close()


def test_execution_report_of_order_parts_keeps_them(tmp_path: Path) -> None:
    frames, market = CASES["duplicate ids"]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = execution_report(frames, market)
        parts = split_parts(frames, market, parts=2)
        disk = execution_report(parts)
    assert disk._parts is parts and repr(disk) == repr(memory)
    for name, table in memory.tables.items():
        pd.testing.assert_frame_equal(pd.DataFrame(disk[name]), pd.DataFrame(table), obj=name)
    folder = parts.folder
    disk.close()
    assert folder is not None and not folder.exists() and parts.folder is None
    other = split_parts(frames, parts=1, folder=tmp_path)
    with pytest.raises(InvalidRequest, match="market's metrics; give market= when"):
        execution_report(other, pd.DataFrame())


def test_the_tables_from_parts_hand_pandas_no_makers_checks_nor_every_orders_breakdown(
    reads: list[tuple[str, Any, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the makers are summed and the breakdown grouped by the engine over the files, the
    # checks stay on disk, the worst orders' rows alone are read whole
    frames, market = CASES[CASE]()
    handed: list[tuple[tuple[str, ...], int]] = []
    real = _columnar.read_columns

    def spy(paths: Any, columns: Any = None, **kw: Any) -> pd.DataFrame:
        got = real(paths, columns, **kw)
        handed.append((tuple(PER_ORDER_COLUMNS if columns is None else columns), len(got)))
        return got

    monkeypatch.setattr(_columnar, "read_columns", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        split = split_parts(frames, market, parts=3)
        reads.clear()
        _columnar.tables_from_parts(split)
    assert not [n for n, _, _ in reads if n.startswith(("makers", "checks"))]
    orders = split.orders
    # a few columns of every order at a time (none: an empty read)
    assert orders > 20 and all(n == orders for c, n in handed if c)
    whole = {frozenset(c) for c, _ in handed}
    assert frozenset(TABLE_COLUMNS["breakdown"]) not in whole
    assert frozenset(TABLE_COLUMNS["worst_orders"]) not in whole
    split.close()
