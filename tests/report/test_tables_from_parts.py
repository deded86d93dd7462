"""The report's tables from per-order parts on disk equal ``all_tables`` on every case of
``_tables_cases`` split into 1, 2, 3 and 7 parts, and each table reads only the columns
``TABLE_COLUMNS`` declares for it."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _split_parts import split_parts
from _tables_cases import CASES

from toolkit.report import _columnar, _metrics
from toolkit.report._columnar import (
    TABLE_COLUMNS,
    _Given,
    compute_table,
    quotes_from_parts,
    tables_from_parts,
)
from toolkit.report._daily import daily_cost
from toolkit.report._drilldown import worst_order_quotes
from toolkit.report._fills import maker_sums


def _quiet_all_tables(frames: Any, market: Any) -> tuple[dict[str, pd.DataFrame], list[str]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tables = _metrics.all_tables(frames, market)
    return tables, [str(w.message) for w in seen if w.category is RuntimeWarning]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", list(CASES))
def test_tables_from_parts_equal_all_tables(
    name: str, threads: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one table at a time (a budget nothing fits in) and two side by side
    if threads == 1:
        monkeypatch.setattr(_columnar, "TABLES_BUDGET", 0)
    frames, market = CASES[name]()
    want, said = _quiet_all_tables(frames, market)
    for n in (1, 3):  # one part (the whole set) and several
        folder = tmp_path / f"p{n}"
        folder.mkdir()
        parts = split_parts(frames, market, parts=n, folder=folder)
        assert _columnar.table_threads(parts.orders) == threads
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            got = tables_from_parts(parts)
        assert [str(w.message) for w in seen if w.category is RuntimeWarning] == said
        assert list(got) == [t for t in want if t != "per_order"] + ["daily_cost"]
        for table in want:
            if table != "per_order":
                pd.testing.assert_frame_equal(got[table], want[table], obj=f"{name}/{n}: {table}")
        pd.testing.assert_frame_equal(got["daily_cost"], daily_cost(want["per_order"]))
        quotes = quotes_from_parts(parts, got["worst_orders"])
        pd.testing.assert_frame_equal(quotes, worst_order_quotes(frames, want["worst_orders"]))


def test_the_comparison_from_parts_equals_all_tables() -> None:
    frames, market = CASES["mixed 300 with market"]()
    compare = ((None, "2026-11-01 02:00"), ("2026-11-01 02:00", None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _metrics.all_tables(frames, market, compare=compare)["comparison"]
        parts = split_parts(frames, market, parts=3)
        folder = parts.folder
        try:
            got = tables_from_parts(parts, compare=compare)["comparison"]
        finally:
            parts.close()
    assert want["a_orders"].sum() > 0 and want["b_orders"].sum() > 0
    pd.testing.assert_frame_equal(got, want)
    assert folder is not None and not folder.exists()


@pytest.mark.parametrize("name", ["duplicate ids", "limits with market", "mixed 300 with market"])
def test_each_table_reads_only_its_declared_columns(name: str) -> None:
    # the declared map is complete: a table on exactly its columns is the table on all
    frames, market = CASES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = _metrics.deduplicate(frames)
        po = _metrics.per_order(d, market)
    # data_checks reads the outliers' orderIds alone, by row (as from the parts)
    given = _Given(
        maker_sums(_metrics.maker_by_order(d.trades), po),
        po.iloc[:0][[]],
        None,
        lambda at: po.loc[at, "orderId"],
    )
    for table, columns in TABLE_COLUMNS.items():
        assert set(columns) <= set(po.columns), table
        full = compute_table(table, po, given)
        only = compute_table(table, po[list(dict.fromkeys(columns))], given)
        for key in full:
            pd.testing.assert_frame_equal(only[key], full[key], obj=f"{name}: {key}")


def test_maker_share_counts_an_order_without_a_venue_under_one_label() -> None:
    # "a" on a venue spelled like the label, "b" without a venue, "zz" no order of the set
    po = pd.DataFrame({"orderId": ["a", "b", "c"], "venue": ["(none)", None, "v"]}, dtype="str")
    makers = pd.DataFrame(
        {
            "trades": [1, 2, 3, 4],
            "maker_trades": [1, 0, 1, 1],
            "cost": [1.0, 2.0, 3.0, 4.0],
            "maker_cost": [1.0, 0.0, 3.0, 4.0],
        },
        index=pd.Index(["a", "b", "c", "zz"], name="orderId"),
    )
    got = _metrics.maker_share(None, po, makers).set_index("venue")
    assert got.index.tolist() == ["(all)", "(none)", "v"]
    assert got["trades"].tolist() == [10, 7, 3]
    assert got.loc["(none)", "maker_cost_share"] == pytest.approx(5.0 / 7.0)


def test_two_tables_side_by_side_only_while_their_columns_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    widest = max(len(c) for c in TABLE_COLUMNS.values())
    fits = (_columnar.TABLES_BUDGET - 1) // (2 * widest * 16)
    assert _columnar.table_threads(1_000_000) == 2  # 1M orders: side by side
    assert _columnar.table_threads(fits) == 2
    assert _columnar.table_threads(fits + 1) == 1
    assert _columnar.table_threads(10_000_000) == 1  # 10M: one table's columns at a time
    monkeypatch.setattr(_columnar.os, "cpu_count", lambda: 1)
    assert _columnar.table_threads(1000) == 1
