"""The scale benchmark's inputs (bench/_scale_inputs.py): the vectorised export has the
files, schemas and manifest of ``OrderFrames.to_parquet`` on bodies and reports with
plausible numbers; the recording is range-named files a day that the toolkit's readers and
DuckDB read alike; bench/bench_scale.py measures each work on them.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import _scale_inputs as scale
import bench_scale
import duckdb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from _synthetic import T0_MS, mixed_orders, synthetic_orders

import toolkit as tk
from toolkit.frames import build_frames
from toolkit.frames._frames import OrderFrames
from toolkit.recording._layout import file_range
from toolkit.report import execution_report
from toolkit.report._inputs import export_frames

ORDERS = 700


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scale") / "export"
    scale.build_export(out, ORDERS, chunk=300)  # three chunks, the last one short
    return out


def test_vectorised_export_has_the_schemas_of_a_bodies_export(export: Path, tmp_path: Path) -> None:
    bodies = synthetic_orders(30) + mixed_orders(13)[12:]  # market orders and a limit one
    written = build_frames(bodies).to_parquet(tmp_path / "bodies")
    assert sorted(p.name for p in export.iterdir()) == sorted(
        p.name for p in (tmp_path / "bodies").iterdir()
    )
    for name, path in written.items():
        theirs, ours = pq.read_schema(path), pq.read_schema(export / path.name)
        assert ours.names == theirs.names, name
        assert ours.types == theirs.types, name
        assert ours.equals(theirs, check_metadata=True), f"{name}: metadata differs"
    manifest = json.loads((export / "_manifest.json").read_text())
    assert manifest["complete"] is True
    assert manifest["files"] == {p: (export / p).stat().st_size for p in manifest["files"]}


def test_vectorised_export_reads_back_and_reports_plausibly(export: Path) -> None:
    frames = OrderFrames.read_parquet(export)  # the manifest is required and matches
    orders = frames.orders
    assert len(orders) == ORDERS and orders["id"].is_unique
    assert len(frames.trades) == len(frames.fills) == 3 * ORDERS
    assert len(frames.evaluated_tickers) == 5 * ORDERS
    assert set(orders["type"]) == {"market", "limit"}
    assert orders["limitPrice"].notna().sum() == (orders["type"] == "limit").sum()
    # one order a minute from T0, as bench/_synthetic.py
    minute = (orders["createdAt"] - pd.Timestamp(T0_MS, unit="ms", tz="UTC")) // pd.Timedelta(
        minutes=1
    )
    assert (minute.to_numpy() == np.arange(ORDERS)).all()
    assert orders["executedExchange"].isna().any() and orders["executedExchange"].notna().any()
    report = execution_report(export_frames(export))
    po = report["per_order"]
    assert len(po) == ORDERS and po["executed"].all()
    slippage = po["quote_slippage_bp"].to_numpy(dtype=float)
    assert np.isfinite(slippage).all()
    assert abs(float(np.median(slippage))) < 200  # quotes within 1% of the fill's price
    assert po["quotes_seen"].eq(5).all()
    assert set(po["venue"]) == {"binance", "coinbase", "kraken", "mercadobitcoin", "foxbit"}
    fill = po["fill_rate"].to_numpy(dtype=float)
    assert ((fill > 0.29) & (fill <= 1.0)).all() and (fill == 1.0).mean() > 0.8


def test_recording_is_range_named_files_a_day_that_readers_agree_on(
    export: Path, tmp_path: Path
) -> None:
    root = tmp_path / "rec"
    lo, hi = scale.orders_span_ns(export)
    ticks = 40_000
    files = scale.build_recording(root, lo, hi, ticks, files_per_day=4)
    paths = sorted((root / "channel=watchticker").glob("date=*/*.parquet"))
    assert len(paths) == files
    days = {p.parent.name for p in paths}
    assert files > len(days) > 0  # several files a day
    for path in paths:  # each name says the range of its rows, in its own day
        first, last = file_range(path) or (None, None)
        got = pq.read_table(path, columns=["received_at"]).column(0).cast("int64")
        assert first is not None and last is not None
        assert first // 1000 == got[0].as_py() and last // 1000 == got[-1].as_py()
        day = path.parent.name.removeprefix("date=")
        assert {str(np.datetime64(v, "us"))[:10] for v in (got[0].as_py(), got[-1].as_py())} == {
            day
        }
    table = tk.scan_recording(root, "watchticker").to_table()
    assert table.num_rows == ticks
    assert set(table.column("symbol").to_pylist()) == {"BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL"}
    glob = f"{root}/channel=watchticker/*/*.parquet"
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{glob}')").fetchall() == [(ticks,)]
    start, end = lo + 3_600 * 10**9, lo + 3 * 3_600 * 10**9
    window = tk.scan_recording(root, "watchticker", start=start, end=end).to_table()
    theirs = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{glob}') WHERE received_at >= "
        f"make_timestamp({start // 1000}) AND received_at < make_timestamp({end // 1000})"
    ).fetchall()
    assert theirs == [(window.num_rows,)] and window.num_rows > 0
    sessions = tk.scan_recording(root, "_session").to_table()
    assert sorted(sessions.column("kind").to_pylist()) == ["connected", "disconnected", "gap"]
    mids = (table.column("bid").to_numpy() + table.column("ask").to_numpy()) / 2
    assert all(math.isfinite(m) and m > 0 for m in mids)


def test_the_benchmark_measures_each_work_against_duckdb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    argv = ["--orders", "300", "--ticks", "30000", "--data", str(data), "--store-orders", "300"]
    assert bench_scale.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    measured = [line.split()[:2] for line in lines if " s (median of 1:" in line]
    assert measured == [
        [work, side]
        for work in ("report", "store", "recording", "replay")
        for side in ("ours", "duckdb")
    ]
    said = {tuple(line.split()[:2]): line for line in lines if " s (median of 1:" in line}
    # the CPU seconds beside the wall time, and the load the runs met
    for line in said.values():
        cpu = float(line.split(", CPU ")[1].split(" s,")[0])
        assert cpu > 0
        assert re.search(r", load \d+\.\d->\d+\.\d, peak RSS", line), line
        tree = float(line.split("(with its workers ")[1].split(" GiB")[0])
        assert tree > 0
    assert "'orders': 300" in said[("report", "ours")]
    assert "'orders': 300" in said[("report", "duckdb")]
    # the same rows on both sides
    for work, key in (("store", "'fills': "), ("recording", "'rows': "), ("replay", "'rows': ")):
        ours, theirs = (said[(work, side)].split(key)[1].split("}")[0] for side in SIDES)
        assert ours == theirs, work
    # the inputs are reused, not built again
    assert bench_scale.main([*argv, "--build-only"]) == 0
    assert "built:" not in capsys.readouterr().out


SIDES = ("ours", "duckdb")
