"""``core_metrics(engine="spark")``: the portable query, transpiled by SQLGlot, gives on
Spark local mode the numbers DuckDB gives over the same files (orders of every kind with a
recording in ns and µs files and a disconnect; numeric ids, no type column, pairs in
another case), on a given session and on one it builds and stops. Skipped without pyspark,
SQLGlot or a Java runtime (``pip install 'toolkit[spark]'`` and a JRE)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _core_inputs import write_export, write_frames, write_recording, write_ticks
from _report_frames import T0_MS, closed_order, make_frames
from test_core_metrics import CORE, assert_same

from toolkit.report import core_metrics

pytest.importorskip("pyspark")
pytest.importorskip("sqlglot")
# a Spark session takes about a minute to start on a busy 2-core machine
pytestmark = pytest.mark.timeout(900)
if not (shutil.which("java") or os.environ.get("JAVA_HOME")):  # pragma: no cover
    pytest.skip("Spark needs a Java runtime", allow_module_level=True)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from toolkit.report._spark import local_session

    session = local_session()
    yield session
    session.stop()


def assert_engines_agree(spark: Any, export: Path, recording: Path | None, **kw: Any) -> Any:
    duck = core_metrics(export, recording, **kw)
    got = core_metrics(export, recording, engine="spark", spark=spark, **kw)
    assert_same(got["per_order"], duck["per_order"], (*CORE, "average", "notional", "quote"))
    assert got["per_order"]["orderId"].tolist() == duck["per_order"]["orderId"].tolist()
    for c in ("executed", "venue", "type"):
        assert got["per_order"][c].tolist() == duck["per_order"][c].tolist(), c
    v, w = got["venues"], duck["venues"]
    assert v["venue"].tolist() == w["venue"].tolist()
    assert v["orders"].tolist() == w["orders"].tolist()
    for c in ("notional", "quote_slippage_bp", "best_quote_slippage_bp"):
        np.testing.assert_allclose(v[c], w[c], rtol=1e-9)
    return got


def test_spark_equals_duckdb_on_an_export_and_a_recording(spark: Any, tmp_path: Path) -> None:
    export = write_export(tmp_path / "export")
    recording = write_recording(tmp_path / "recording")
    got = assert_engines_agree(spark, export, recording)
    ex = got["per_order"][got["per_order"]["executed"]]
    assert ex[list(CORE)].notna().any().all() and ex["arrival_mid"].isna().any()
    assert_engines_agree(spark, export, recording, max_quote_age=None)
    assert_engines_agree(spark, export, None)


def test_spark_equals_duckdb_on_the_contract_cases(spark: Any, tmp_path: Path) -> None:
    frames = make_frames(
        [
            closed_order("7", "sell", 99.0),
            closed_order("8", "buy", 101.0, symbol="btc/brl", createdAt=T0_MS - 10_000),
        ],
        quotes=[{"orderId": "7", "rank": 0, "exchange": "venueA", "price": 99.5}],
    )
    frames.orders = frames.orders.drop(columns="type").assign(id=lambda o: o["id"].astype(int))
    frames.evaluated_tickers = frames.evaluated_tickers.assign(orderId=7)
    export = write_frames(tmp_path / "export", frames)
    ticks = [(T0_MS - 1_000, 100.0), (T0_MS + 1_999, 100.5), (T0_MS + 200_000, 100.0)]
    for unit in ("ns", "us"):
        recording = write_ticks(tmp_path / unit, ticks, unit=unit)
        got = assert_engines_agree(spark, export, recording)["per_order"]
        # 8 was created before the first ticker; 7 priced by it
        assert np.isnan(got["arrival_mid"].iloc[1]) and got["arrival_mid"].iloc[0] == 100.0
        assert_engines_agree(spark, export, recording, max_quote_age=0.5)


def test_spark_builds_its_own_session_when_given_none(spark: Any, tmp_path: Path) -> None:
    # the module's session is the active one: the call's getOrCreate finds it; what is
    # checked is that the call runs without a session given, and leaves none running
    spark.stop()
    export = write_frames(tmp_path / "export", make_frames([closed_order("b", "buy", 101.0)]))
    got = core_metrics(export, engine="spark")
    assert got["per_order"]["orderId"].tolist() == ["b"]
    from pyspark.sql import SparkSession

    assert SparkSession.getActiveSession() is None
