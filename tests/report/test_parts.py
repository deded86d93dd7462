"""The per-order table built out of core in chunks (toolkit/report/_parts.py): for every order
set of the report tests, written as an export, the parts of any chunk size concatenated are
today's per-order table, with the same makers, checks, contingencies and warnings."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _parts_cases import CASES, Case, export, market_frame, write_recording, write_ticker_file
from _report_frames import T0_MS

from toolkit.errors import InvalidRequest
from toolkit.report._checks import data_checks
from toolkit.report._fills import maker_by_order
from toolkit.report._inputs import export_frames
from toolkit.report._market import market_source
from toolkit.report._metrics import all_tables
from toolkit.report._parts import OrderParts, order_parts, parts_from_frames
from toolkit.report._per_order import deduplicate

# chunk sizes: 2 splits every set at most boundaries (duplicates across chunks included),
# 7 gives chunks of several orders; both cross the chunk edges the pass must handle
SIZES = (2, 7)


def whole_set(frames: Any, market: Any = None, **kw: Any) -> dict[str, Any]:
    """What the report computes today of ``frames``, in memory."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tables = all_tables(frames, market_source(market) if market is not None else None, **kw)
    checks = tables["data_checks"]
    makers = maker_by_order(deduplicate(frames).trades)
    return {
        "per_order": tables["per_order"],
        "makers": makers.reset_index() if len(makers) else None,
        "checks": checks[~checks["check"].str.startswith("outlier ")].reset_index(drop=True),
        "contingencies": tables["contingencies"],
        "contingency_reasons": tables["contingency_reasons"],
        "warnings": [str(w.message) for w in caught if w.category is RuntimeWarning],
    }


def read(files: list[Path]) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


def assert_same(parts: OrderParts, want: dict[str, Any]) -> None:
    po = read(parts.per_order)
    pd.testing.assert_frame_equal(po, want["per_order"])
    assert parts.orders == len(po)
    if want["makers"] is None:
        assert parts.makers == []
    else:
        got = read(parts.makers)
        assert not got["orderId"].duplicated().any()
        pd.testing.assert_frame_equal(
            got.sort_values("orderId", ignore_index=True),
            want["makers"].sort_values("orderId", ignore_index=True),
        )
    pd.testing.assert_frame_equal(parts.checks.read(), want["checks"])
    pd.testing.assert_frame_equal(parts.contingencies, want["contingencies"])
    pd.testing.assert_frame_equal(parts.contingency_reasons, want["contingency_reasons"])
    assert parts.warnings == want["warnings"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_chunk_size_gives_todays_tables(case: Case, tmp_path: Path) -> None:
    folder = export(case.frames(), tmp_path / "export")
    want = whole_set(export_frames(folder))
    for k in SIZES:
        parts = order_parts(folder, chunk_orders=k, folder=tmp_path)
        try:
            assert_same(parts, want)
            if want["per_order"].shape[0] > k:
                assert len(parts.per_order) > 1, k
        finally:
            parts.close()
    assert list(tmp_path.iterdir()) == [tmp_path / "export"]  # every part removed


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_frames_in_memory_are_one_part_of_todays_tables(case: Case, tmp_path: Path) -> None:
    frames = case.frames()
    parts = parts_from_frames(frames, folder=tmp_path)
    try:
        assert len(parts.per_order) == 1
        assert_same(parts, whole_set(frames))
    finally:
        parts.close()
        parts.close()  # again: nothing
    assert list(tmp_path.iterdir()) == []


MARKET_CASES = [
    (case, kind, age)
    for case in CASES
    if case.name in ("routing", "duplicates", "odd orders", "checks")
    for kind in ("frame", "root")
    for age in ((60.0, None) if case.name == "odd orders" else (60.0,))
]


@pytest.mark.parametrize(
    ("case", "kind", "age"), MARKET_CASES, ids=[f"{c.name}-{k}-{a}" for c, k, a in MARKET_CASES]
)
def test_with_a_market_every_chunk_size_gives_todays_tables(
    case: Case, kind: str, age: float | None, tmp_path: Path
) -> None:
    folder = export(case.frames(), tmp_path / "export")
    market: Any = market_frame() if kind == "frame" else write_recording(tmp_path / "rec")
    want = whole_set(export_frames(folder), market, max_quote_age=age)
    assert want["per_order"]["creation_mid"].notna().any()
    for k in (1, 3):
        with_parts = order_parts(folder, market, chunk_orders=k, max_quote_age=age)
        try:
            assert_same(with_parts, want)
        finally:
            with_parts.close()


def test_a_scanned_recording_is_the_market_of_its_root(tmp_path: Path) -> None:
    import toolkit as tk

    folder = export(CASES[0].frames(), tmp_path / "export")
    root = write_recording(tmp_path / "rec")
    ticks = [(T0_MS + s * 1_000, 100.0 + s / 100) for s in range(-90, 150, 2)]
    write_ticker_file(root, "2025-11-13", "part-0.parquet", ticks)
    want = whole_set(export_frames(folder), root)
    parts = order_parts(folder, tk.scan_recording(root, "watchticker"), chunk_orders=2)
    try:
        assert_same(parts, want)
    finally:
        parts.close()
    # a scan of a window the recording does not cover names no file: said so
    empty = tk.scan_recording(root, "watchticker", start="2030-01-01")
    with pytest.raises(InvalidRequest, match="no file"):
        order_parts(folder, empty, chunk_orders=2)


def test_data_checks_is_the_set_checks_and_the_outliers() -> None:
    frames = next(c for c in CASES if c.name == "checks").frames()
    d = deduplicate(frames)
    tables = all_tables(frames)
    got = data_checks(tables["per_order"], d.orders, d.trades)
    assert got["check"].tolist()[: len(got)] == tables["data_checks"]["check"].tolist()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_columns_the_pass_reads_are_all_the_per_order_code_reads(case: Case) -> None:
    # the pass reads only these columns of orders and trades: the per-order table, its
    # checks and the makers must be the same of them alone
    from toolkit.report._per_order import MAKER_FIELDS, ORDER_FIELDS, TRADE_FIELDS

    frames = case.frames()
    want = whole_set(frames)
    o, t = frames.orders, frames.trades
    frames.orders = o[[c for c in o.columns if c in ORDER_FIELDS]]
    frames.trades = t[[c for c in t.columns if c in (*TRADE_FIELDS, *MAKER_FIELDS)]]
    assert len(frames.orders.columns) < len(o.columns)
    got = whole_set(frames)
    for name in ("per_order", "makers", "checks"):
        if want[name] is not None:
            pd.testing.assert_frame_equal(got[name], want[name])
