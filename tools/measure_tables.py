"""Time and peak memory of the report's tables from per-order parts on disk, at 1M and
10M orders: ``tables_from_parts`` + ``ExecutionReport.from_parts`` + ``to_html()``.

A realistic per-order table (the report of an export and its recording, by default the
100k orders of ``/tmp/engine-bench/default``) is tiled with fresh orderIds into Parquet
parts of 250k orders (its makers, quotes and checks tiled alike); each round then runs
in a child process, whose peak RSS (``VmHWM``) is read when it ends::

    PYTHONPATH=$PWD .venv/bin/python tools/measure_tables.py [--sizes 1000000 10000000]
        [--rounds 3 1] [--export DIR] [--recording DIR] [--work /tmp/measure-tables]
        [--no-checks]

Prints one line per round and the median of each size (wall and CPU seconds, GiB). The
measured parts carry the base set's data checks tiled, one file on disk as the parts keep
them (the report's ``data_checks`` table has as many rows; the page reads the first rows
of each check and their counts). The tiles repeat
the same orders (same times, prices and costs), so the tables' groups are those of the
base set; the worst orders are copies of its worst ones.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
PART_ORDERS = 250_000


def _base(export: Path, recording: Path, work: Path) -> Path:
    """The base set's parts (one part), written once and reused."""
    base = work / "base"
    if (base / "done").exists():
        return base
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    # the in-memory split of the report tests (the parts build replaces it at merge)
    sys.path.insert(0, str(ROOT / "tests" / "report"))
    from _split_parts import split_parts  # type: ignore[import-not-found]

    from toolkit.report._inputs import frames_source
    from toolkit.report._market import market_source

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = split_parts(frames_source(export), market_source(recording), folder=base)
    parts.checks.read().to_parquet(base / "checks.parquet", index=False)
    parts.contingencies.to_parquet(base / "contingencies.parquet", index=False)
    parts.contingency_reasons.to_parquet(base / "contingency_reasons.parquet", index=False)
    (base / "warnings.json").write_text(json.dumps(parts.warnings))
    (base / "done").write_text("")
    return base


def _tile(table: pa.Table, start: int, stop: int, n: int) -> pa.Table:
    """Rows [start, stop) of ``table`` repeated: row g is row g % n, orderId + ~copy."""
    g = np.arange(start, stop)
    out = table.take(pa.array(g % n))
    at = out.schema.get_field_index("orderId")
    kind = out.schema.field("orderId").type
    copy = pa.array((g // n).astype(str)).cast(kind)
    ids = pc.binary_join_element_wise(out.column("orderId"), copy, pa.scalar("~", kind))
    return out.set_column(at, "orderId", ids)


def _copies(table: pa.Table, copies: range) -> pa.Table:
    """Copies ``copies`` of a table keyed by orderId (makers, quotes, checks)."""
    n = table.num_rows
    return _tile(table, copies.start * n, copies.stop * n, n) if n else table


def _build(base: Path, orders: int, work: Path) -> Path:
    out = work / f"parts-{orders}"
    if (out / "done").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    po = pq.read_table(base / "per_order-000.parquet")
    n = po.num_rows
    makers = pq.read_table(base / "makers-000.parquet")
    quotes = (
        pq.read_table(base / "quotes-000.parquet")
        if (base / "quotes-000.parquet").exists()
        else None
    )
    for j, start in enumerate(range(0, orders, PART_ORDERS)):
        stop = min(orders, start + PART_ORDERS)
        pq.write_table(_tile(po, start, stop, n), out / f"per_order-{j:04d}.parquet")
    # makers and quotes by whole copies of the base set (an order in one part)
    copies = -(-orders // n)
    for k in range(copies):
        pq.write_table(_copies(makers, range(k, k + 1)), out / f"makers-{k:04d}.parquet")
        if quotes is not None:
            pq.write_table(_copies(quotes, range(k, k + 1)), out / f"quotes-{k:04d}.parquet")
    checks = pq.read_table(base / "checks.parquet")
    pq.write_table(_copies(checks, range(copies)), out / "checks.parquet")
    for name in ("contingencies.parquet", "contingency_reasons.parquet", "warnings.json"):
        shutil.copy(base / name, out / name)
    (out / "orders").write_text(str(orders))
    (out / "done").write_text("")
    return out


def _peak_gib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 2**20
    return float("nan")


def _child(folder: Path, checks: bool) -> None:
    from toolkit.report._api import ExecutionReport
    from toolkit.report._columnar import quotes_from_parts, tables_from_parts
    from toolkit.report._parts import OrderParts
    from toolkit.report._stored_checks import StoredChecks

    t0 = time.perf_counter()
    parts = OrderParts(
        per_order=sorted(folder.glob("per_order-*.parquet")),
        makers=sorted(folder.glob("makers-*.parquet")),
        quotes=sorted(folder.glob("quotes-*.parquet")),
        # the checks stay on disk, as order_parts keeps them
        checks=StoredChecks((folder / "checks.parquet",) if checks else ()),
        contingencies=pd.read_parquet(folder / "contingencies.parquet"),
        contingency_reasons=pd.read_parquet(folder / "contingency_reasons.parquet"),
        warnings=json.loads((folder / "warnings.json").read_text()),
        orders=int((folder / "orders").read_text()),
        folder=None,  # the measured parts stay for the next round
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tables = tables_from_parts(parts)
    t1 = time.perf_counter()
    tables["worst_order_quotes"] = quotes_from_parts(parts, tables["worst_orders"])
    report = ExecutionReport.from_parts(parts, tables)
    page = report.to_html()
    t2 = time.perf_counter()
    print(
        json.dumps(
            {
                "tables_s": t1 - t0,
                "total_s": t2 - t0,
                # CPU seconds of the child: the machine is shared, wall time is rough
                "cpu_s": time.process_time(),
                "peak_gib": _peak_gib(),
                "page_chars": len(page),
                "orders": report.describe().split(" orders")[0],
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--rounds", type=int, nargs="+", default=[3, 1])
    ap.add_argument("--export", type=Path, default=Path("/tmp/engine-bench/default/export"))
    ap.add_argument("--recording", type=Path, default=Path("/tmp/engine-bench/default/recording"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/measure-tables"))
    ap.add_argument(
        "--no-checks",
        action="store_true",
        help="parts without data checks (a set whose orders agree with their trades): "
        "the tables alone, without the checks kept on disk beside the parts",
    )
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        _child(args.child, not args.no_checks)
        return
    base = _base(args.export, args.recording, args.work)
    for size, rounds in zip(args.sizes, args.rounds, strict=True):
        folder = _build(base, size, args.work)
        got = []
        for r in range(rounds):
            run = subprocess.run(
                [sys.executable, __file__, "--child", str(folder)]
                + (["--no-checks"] if args.no_checks else []),
                capture_output=True,
                text=True,
                check=False,
            )
            if run.returncode:
                print(f"{size:,} orders, round {r + 1}: failed\n{run.stderr[-2000:]}")
                break
            got.append(json.loads(run.stdout.strip().splitlines()[-1]))
            g = got[-1]
            print(
                f"{size:,} orders, round {r + 1}: tables {g['tables_s']:.1f} s, tables + "
                f"report + to_html {g['total_s']:.1f} s ({g['cpu_s']:.1f} s CPU), peak RSS "
                f"{g['peak_gib']:.2f} GiB "
                f"({g['orders']} orders)",
                flush=True,
            )
        if got:
            print(
                f"{size:,} orders: median of {len(got)}: "
                f"{statistics.median(g['total_s'] for g in got):.1f} s "
                f"({statistics.median(g['cpu_s'] for g in got):.1f} s CPU), peak RSS "
                f"{statistics.median(g['peak_gib'] for g in got):.2f} GiB",
                flush=True,
            )


if __name__ == "__main__":
    main()
