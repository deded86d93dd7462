"""Time the report's core metrics (``tk.report.core_metrics``) on DuckDB and on Spark local
mode over the same export and recording, and check that they agree.

    python tools/measure_spark.py --export DIR --recording DIR [--rounds 3] [--engines duckdb,spark]

Each round of each engine runs in a fresh process (a cold engine, as a user's call is);
the Spark round counts its session's start (printed apart). Prints every round, the
median per engine, and the largest relative difference of Spark's per-order metrics from
DuckDB's (the last round of each)."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(engine: str, export: str, recording: str, out: str) -> None:
    """One timed run, its results written to ``out`` (Parquet) and its times printed."""
    sys.path.insert(0, str(ROOT))
    from toolkit.report import core_metrics

    t0 = time.perf_counter()
    spark = None
    if engine == "spark":
        from toolkit.report._spark import local_session

        spark = local_session()
    started = time.perf_counter()
    got = core_metrics(export, recording, engine=engine, spark=spark)
    done = time.perf_counter()
    if spark is not None:
        spark.stop()
    got["per_order"].to_parquet(out)
    print(
        json.dumps(
            {"start_s": started - t0, "query_s": done - started, "rows": len(got["per_order"])}
        )
    )


def compare(a: str, b: str) -> float:
    import numpy as np
    import pandas as pd

    x = pd.read_parquet(a).set_index("orderId")
    y = pd.read_parquet(b).set_index("orderId").loc[x.index]
    worst = 0.0
    for c in x.columns:
        if not pd.api.types.is_float_dtype(x[c]):
            continue
        u, v = x[c].to_numpy(dtype="float64"), y[c].to_numpy(dtype="float64")
        if not np.array_equal(np.isnan(u), np.isnan(v)):
            return float("inf")
        ok = ~np.isnan(u)
        rel = np.abs(u[ok] - v[ok]) / np.maximum(np.abs(u[ok]), 1e-300)
        worst = max(worst, float(rel.max()) if ok.any() else 0.0)
    return worst


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--export", required=True)
    p.add_argument("--recording", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--engines", default="duckdb,spark")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.export, args.recording, args.out)
        return 0
    engines = args.engines.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        last: dict[str, str] = {}
        times: dict[str, list[float]] = {e: [] for e in engines}
        for r in range(args.rounds):
            for engine in engines:
                out = str(Path(tmp) / f"{engine}.parquet")
                cmd = [sys.executable, __file__, "--child", engine, "--out", out]
                cmd += ["--export", args.export, "--recording", args.recording]
                run = subprocess.run(cmd, capture_output=True, text=True, check=False)
                lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
                if run.returncode or not lines:
                    print(run.stderr[-3000:], file=sys.stderr)
                    return 1
                got = json.loads(lines[-1])
                times[engine].append(got["query_s"])
                last[engine] = out
                print(
                    f"round {r + 1} {engine:>6}: {got['query_s']:7.1f} s "
                    f"(session start {got['start_s']:.1f} s), {got['rows']:,} orders",
                    flush=True,
                )
        for engine in engines:
            print(f"median {engine:>6}: {statistics.median(times[engine]):7.1f} s")
        if len(last) == 2:
            print(f"largest relative difference: {compare(*last.values()):.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
