"""``core_metrics`` on DuckDB: the portable query's numbers are the report's own (per order
and per venue) on orders of every kind with a recording, and on each case the contract
allows (no ticker before an order, one too old, no type column, numeric ids, pairs in
another case, times in ns and in µs); bad input refused before anything is read."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _core_inputs import write_export, write_frames, write_recording, write_ticks
from _report_frames import T0_MS, closed_order, make_frames

from toolkit.errors import InvalidRequest
from toolkit.report import core_metrics, execution_report
from toolkit.report._core import Files, run_duckdb

#: the report's per-order columns the core metrics give
CORE = (
    "arrival_mid",
    "arrival_spread_bp",
    "quote_slippage_bp",
    "best_quote_slippage_bp",
    *(f"markout_{h}s_bp" for h in (-60, -20, 0, 20, 60, 120)),
)


def assert_same(got: pd.DataFrame, want: pd.DataFrame, columns: Any = CORE) -> None:
    """Equal within 1e-9 relative, NaN where NaN, order by order."""
    got = got.set_index("orderId")
    want = want.set_index("orderId")
    assert sorted(got.index) == sorted(want.index)
    for c in columns:
        a = got[c].to_numpy(dtype="float64")
        b = want.loc[got.index, c].to_numpy(dtype="float64")
        same = np.isclose(a, b, rtol=1e-9, atol=0) | (np.isnan(a) & np.isnan(b))
        assert same.all(), (c, got.index[~same].tolist()[:5], a[~same][:5], b[~same][:5])


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("core")
    return write_export(d / "export"), write_recording(d / "recording")


def test_the_portable_query_is_the_reports_numbers(files: tuple[Path, Path]) -> None:
    export, recording = files
    got = core_metrics(export, recording)
    report = execution_report(export, recording)
    po = report["per_order"]
    assert_same(got["per_order"], po)
    # every metric priced somewhere, and the recording's disconnect and the hole in
    # ETH leave executed orders unpriced (the rules are exercised, not vacuous)
    ex = got["per_order"][got["per_order"]["executed"]]
    assert ex[list(CORE)].notna().any().all()
    assert ex["arrival_mid"].isna().any()
    venues = got["venues"].set_index("venue")
    want = report["venues"].set_index("venue")
    assert list(venues.index) == sorted(want.index)
    assert (venues["orders"] == want.loc[venues.index, "orders"]).all()
    for c in ("notional", "quote_slippage_bp"):
        np.testing.assert_allclose(venues[c], want.loc[venues.index, c], rtol=1e-9)
    # the best-quote slippage per venue, notional-weighted as the report's aggregates
    ex = po[po["executed"]]
    ok = ex["best_quote_slippage_bp"].notna() & (ex["notional"] > 0)
    w = ex["notional"].where(ok)
    mean = (ex["best_quote_slippage_bp"] * w).groupby(ex["venue"]).sum() / w.groupby(
        ex["venue"]
    ).sum()
    np.testing.assert_allclose(venues["best_quote_slippage_bp"], mean.loc[venues.index], rtol=1e-9)


def test_the_bucket_join_is_the_reports_numbers_too(files: tuple[Path, Path]) -> None:
    export, recording = files
    for age in (60.0, 7.0):
        got = run_duckdb(Files(export, recording), age, "buckets")["per_order"]
        assert_same(got, execution_report(export, recording, max_quote_age=age)["per_order"])


def test_no_limit_on_the_quote_age_is_the_reports_too(files: tuple[Path, Path]) -> None:
    export, recording = files
    got = core_metrics(export, recording, max_quote_age=None)["per_order"]
    assert_same(got, execution_report(export, recording, max_quote_age=None)["per_order"])


def test_without_a_recording_only_the_quote_metrics(files: tuple[Path, Path]) -> None:
    export, _ = files
    got = core_metrics(export)["per_order"]
    assert_same(got, execution_report(export)["per_order"])
    assert got["arrival_mid"].isna().all() and got["quote_slippage_bp"].notna().any()


def one_order(tmp_path: Path, ticks: list[tuple[int, float]], **kw: Any) -> dict[str, Any]:
    """core_metrics and the report's per_order of one buy at 101, created at T0, executed
    2 s later, over ``ticks`` of BTC/BRL (spelled ``btc-brl``)."""
    frames = make_frames(
        [closed_order("b", "buy", 101.0)],
        quotes=[
            {"orderId": "b", "rank": 0, "exchange": "venueA", "price": 100.5, "quotedAt": T0_MS}
        ],
    )
    export = write_frames(tmp_path / "export", frames)
    recording = write_ticks(tmp_path / "recording", ticks, unit=kw.pop("unit", "ns"))
    got = core_metrics(export, recording, **kw)["per_order"]
    want = execution_report(export, recording, **kw)["per_order"]
    assert_same(got, want)
    return dict(got.iloc[0])


def test_an_order_before_the_first_ticker_has_no_arrival_mid(tmp_path: Path) -> None:
    got = one_order(tmp_path, [(T0_MS + 1_000, 100.0), (T0_MS + 200_000, 102.0)])
    assert math.isnan(got["arrival_mid"]) and math.isnan(got["markout_-20s_bp"])
    # +0 s at T0 + 2 s: the ticker of T0 + 1 s
    assert got["markout_0s_bp"] == pytest.approx((101 - 100) / 100 * 1e4)


def test_a_ticker_older_than_max_quote_age_is_no_price(tmp_path: Path) -> None:
    ticks = [(T0_MS - 60_000, 100.0), (T0_MS + 200_000, 102.0)]
    assert one_order(tmp_path / "a", ticks)["arrival_mid"] == pytest.approx(100.0)
    assert math.isnan(one_order(tmp_path / "b", ticks, max_quote_age=59.999)["arrival_mid"])
    assert one_order(tmp_path / "c", ticks, max_quote_age=None)["arrival_mid"] == 100.0


def test_times_in_nanoseconds_and_in_microseconds_give_the_same(tmp_path: Path) -> None:
    ticks = [(T0_MS - 1_500, 100.0), (T0_MS + 1_999, 100.7), (T0_MS + 200_000, 102.0)]
    old = one_order(tmp_path / "ns", ticks, unit="ns")
    new = one_order(tmp_path / "us", ticks, unit="us")
    assert old["arrival_mid"] == new["arrival_mid"] == pytest.approx(100.0)
    assert old["markout_0s_bp"] == new["markout_0s_bp"]
    assert old["arrival_spread_bp"] == pytest.approx(0.2 / 100 * 1e4)
    assert old["quote_slippage_bp"] == pytest.approx((101 - 100.5) / 100.5 * 1e4)


def test_numeric_ids_and_no_type_column(tmp_path: Path) -> None:
    frames = make_frames(
        [closed_order("7", "sell", 99.0), closed_order("8", "buy", 101.0, symbol="btc/brl")],
        quotes=[
            {"orderId": "7", "rank": 0, "exchange": "venueA", "price": 99.5, "quotedAt": T0_MS}
        ],
    )
    orders = frames.orders.drop(columns="type").assign(id=lambda o: o["id"].astype("int64"))
    quotes = frames.evaluated_tickers.assign(orderId=lambda q: q["orderId"].astype("int64"))
    frames.orders, frames.evaluated_tickers = orders, quotes
    export = write_frames(tmp_path / "export", frames)
    recording = write_ticks(tmp_path / "rec", [(T0_MS - 1_000, 100.0), (T0_MS + 200_000, 100.0)])
    got = core_metrics(export, recording)["per_order"]
    assert_same(got, execution_report(export, recording)["per_order"])
    assert got["orderId"].tolist() == ["7", "8"] and set(got["type"]) == {"market"}
    assert got["quote_slippage_bp"].iloc[0] == pytest.approx(-(99 - 99.5) / 99.5 * 1e4)
    # the pair spelled btc/brl by the order and btc-brl by the tickers
    assert got["arrival_mid"].tolist() == [100.0, 100.0]


def test_a_time_column_that_is_no_timestamp_is_named(tmp_path: Path) -> None:
    frames = make_frames([closed_order("b", "buy", 101.0)])
    frames.orders = frames.orders.assign(createdAt=T0_MS)
    export = write_frames(tmp_path / "export", frames)
    with pytest.raises(InvalidRequest, match=r"orders\.parquet: column createdAt is int64"):
        core_metrics(export)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"engine": "polars"}, "engine must be one of duckdb, spark"),
        ({"spark": object()}, "spark session is for engine='spark'"),
        ({"max_quote_age": -1.0}, "max_quote_age must be seconds >= 0"),
        ({"max_quote_age": float("nan")}, "max_quote_age must be seconds >= 0"),
    ],
)
def test_bad_arguments_are_refused(tmp_path: Path, kw: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidRequest, match=match):
        core_metrics(tmp_path, **kw)


def test_missing_inputs_are_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="folder of an export"):
        core_metrics(tmp_path / "nowhere")
    with pytest.raises(InvalidRequest, match=r"no orders\.parquet in"):
        core_metrics(tmp_path)
    export = write_frames(tmp_path / "export", make_frames([closed_order("b", "buy", 1.0)]))
    with pytest.raises(InvalidRequest, match="no recording at"):
        core_metrics(export, tmp_path / "no-recording")


def test_spark_without_pyspark_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    export = write_frames(tmp_path / "export", make_frames([closed_order("b", "buy", 1.0)]))
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(InvalidRequest, match=r"needs pyspark: pip install 'toolkit\[spark\]'"):
        core_metrics(export, engine="spark")
