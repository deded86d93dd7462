"""Execution-quality report benchmark: the report on 100,000 closed orders (3 trades and 5
quotes each) with a ticker recording, timing the metrics, the figures and the HTML.

    python bench/bench_report.py [--orders 100000] [--tick-seconds 30] [--out DIR] [--repeat 3]

The end to end run (``execution_report(frames, market).to_html(path)``, figures included)
is repeated; the best run counts, as other processes of a shared machine only add time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _synthetic import SYMBOLS, synthetic_orders

from toolkit.frames._frames import OrderFrames, build_frames
from toolkit.report import ExecutionReport
from toolkit.report._api import execution_report
from toolkit.report._metrics import all_tables


def synthetic_market(frames: OrderFrames, tick_seconds: float, seed: int = 0) -> pd.DataFrame:
    """A ticker per symbol every ``tick_seconds`` over the orders' span, a random walk, and
    the ``_session`` rows of one two-minute disconnect in the middle."""
    created = frames.orders["createdAt"]
    start = created.min().floor("min") - pd.Timedelta(minutes=5)
    end = created.max().ceil("min") + pd.Timedelta(minutes=5)
    times = pd.date_range(start, end, freq=pd.Timedelta(seconds=tick_seconds), tz="UTC")
    rng = np.random.default_rng(seed)
    parts = []
    for symbol, price in SYMBOLS.items():
        walk = price * np.exp(np.cumsum(rng.normal(0, 3e-5, len(times))))
        spread = walk * 2e-4
        parts.append(
            pd.DataFrame(
                {
                    "received_at": (times + pd.Timedelta(milliseconds=40)).astype(
                        "datetime64[ns, UTC]"
                    ),
                    "symbol": symbol,
                    "bid": walk - spread / 2,
                    "ask": walk + spread / 2,
                    "last": walk,
                    "timestamp": times.astype("datetime64[ms, UTC]"),
                }
            )
        )
    ticks = pd.concat(parts, ignore_index=True).assign(channel="watchticker")
    # one disconnect of 2 minutes in the middle, as a recording's _session rows say it
    mid_t = times[len(times) // 2]
    gap_start, gap_end = mid_t, mid_t + pd.Timedelta(minutes=2)
    session = pd.DataFrame(
        {
            "received_at": pd.to_datetime([gap_start, gap_end, gap_end]).astype(
                "datetime64[ns, UTC]"
            ),
            "channel": "_session",
            "kind": ["disconnected", "connected", "gap"],
            "gap_start": pd.to_datetime([pd.NaT, pd.NaT, gap_start]).astype("datetime64[ns, UTC]"),
            "gap_end": pd.to_datetime([pd.NaT, pd.NaT, gap_end]).astype("datetime64[ns, UTC]"),
        }
    )
    both = pd.concat([ticks, session], ignore_index=True)
    return both.sort_values("received_at", ignore_index=True)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--orders", type=int, default=100_000)
    p.add_argument("--tick-seconds", type=float, default=30.0)
    p.add_argument("--out", type=Path, default=None, help="keep report.html here")
    p.add_argument("--repeat", type=int, default=3, help="end-to-end runs (the best counts)")
    args = p.parse_args(argv)

    t = time.perf_counter()
    frames = build_frames(synthetic_orders(args.orders))
    market = synthetic_market(frames, args.tick_seconds)
    prep = time.perf_counter() - t
    print(
        f"input: {len(frames.orders):,} orders, {len(frames.trades):,} trades, "
        f"{len(frames.evaluated_tickers):,} quotes, {len(market):,} market rows "
        f"(prepared in {prep:.1f} s, not counted)"
    )

    t = time.perf_counter()
    tables = all_tables(frames)
    no_market = time.perf_counter() - t
    t = time.perf_counter()
    tables = all_tables(frames, market)
    metrics = time.perf_counter() - t
    report = ExecutionReport(tables)
    t = time.perf_counter()
    figures = report.figures
    figs = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.out or Path(tmp)
        t = time.perf_counter()
        report.to_html(out_dir / "report.html")
        html_s = time.perf_counter() - t
        size = (out_dir / "report.html").stat().st_size
        t = time.perf_counter()
        report.to_parquet(out_dir / "tables")
        parquet_s = time.perf_counter() - t
        runs = []
        for i in range(args.repeat):
            t = time.perf_counter()
            execution_report(frames, market).to_html(Path(tmp) / f"again-{i}.html")
            runs.append(time.perf_counter() - t)

    po = tables["per_order"]
    print(f"metrics, all tables without market:  {no_market:6.2f} s")
    print(f"metrics, all tables with market:     {metrics:6.2f} s")
    print(f"figures ({len(figures)}):                       {figs:6.2f} s")
    print(f"HTML with figures encoded ({size / 1e6:.1f} MB): {html_s:6.2f} s")
    print(f"tables to Parquet:                   {parquet_s:6.2f} s")
    print(
        f"execution_report + to_html, end to end: {min(runs):6.2f} s (best of {len(runs)}: "
        + ", ".join(f"{r:.2f}" for r in runs)
        + " s)"
    )
    m = tables["markouts"].set_index("horizon_s")["coverage"]
    print(
        f"check: {int(po['quote_slippage_bp'].notna().sum()):,} orders with a quote slippage, "
        f"{int(po['arrival_slippage_bp'].notna().sum()):,} with an arrival price, "
        f"{int(po['decomposed'].sum()):,} decomposed, markout coverage "
        + ", ".join(f"{h:+d} s {c:.1%}" for h, c in m.items())
        + f"; {len(tables['data_checks']):,} data-check rows"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
