"""Scale benchmark: the execution report on an order export and a ticker recording on disk,
time and peak RSS, each against DuckDB doing the same work over the same files in the run.

    python bench/bench_scale.py [--orders 100000] [--ticks 2000000] [--data DIR] [--no-market]
                                [--repeat 1]

The inputs (``bench/_synthetic.py`` closed market orders, 3 trades and 5 quotes each, one
per minute; a ``watchticker`` recording of 4 pairs over their span, one file per day, and
one two-minute gap) are built once into ``--data`` (default a temporary folder) and reused
when present. Each measured run is a child process: its peak RSS is its ``VmHWM``.

- ``report``: ``execution_report(export folder, recording root)`` (the export read into
  pandas, the market joined by the report's engine where it lies), tables only;
- ``duckdb``: DuckDB alone over the same files: cost by venue from the trades, slippage per
  order against its best quote, arrival mid and +60 s markout by ASOF JOIN.

Sizes of issue 28: ``--orders 1000000 --ticks 50000000``, ``--orders 3000000``,
``--orders 10000000 --ticks 200000000`` (building the inputs takes minutes per million
orders: the bodies go through ``build_frames``).
"""

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

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHUNK = 100_000  # orders built into frames at a time (build_frames holds each in memory)
FRAMES = ("orders", "trades", "evaluated_tickers")
DAY_NS = 86_400 * 1_000_000_000


def peak_rss_gib() -> float:
    """This process's peak resident set (VmHWM), GiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


# ------------------------------------------------------------------------- inputs


def build_export(out: Path, n: int) -> None:
    """``n`` synthetic closed orders as the frames export's files (one Parquet per frame)."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    from _synthetic import closed_order

    from toolkit.frames._frames import build_frames

    rng = random.Random(0)
    parts: dict[str, list[pa.Table]] = {name: [] for name in FRAMES}
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        for lo in range(0, n, CHUNK):
            bodies = [
                json.dumps(closed_order(rng, i), separators=(",", ":")).encode()
                for i in range(lo, min(n, lo + CHUNK))
            ]
            written = build_frames(bodies).to_parquet(Path(tmp) / str(lo))
            for name in FRAMES:
                parts[name].append(pq.read_table(written[name]))
            print(f"  built {min(n, lo + CHUNK):,} orders", flush=True)
        out.mkdir(parents=True, exist_ok=True)
        for name in FRAMES:
            table = pa.concat_tables(parts[name], promote_options="permissive")
            pq.write_table(table, out / f"{name}.parquet", compression="zstd")


def build_recording(root: Path, export: Path, n_ticks: int) -> None:
    """``n_ticks`` watchticker rows (4 pairs, evenly over the orders' span +- 10 minutes),
    one file per day, and the ``_session`` rows of one two-minute gap."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from _synthetic import SYMBOLS

    from toolkit.recording._rows import partition_dir, recording_schema

    created = pq.read_table(export / "orders.parquet", columns=["createdAt"]).column(0)
    lo = int(pa.compute.min(created).cast(pa.int64()).as_py()) * 1_000_000 - 600 * 10**9
    hi = int(pa.compute.max(created).cast(pa.int64()).as_py()) * 1_000_000 + 600 * 10**9
    schema = recording_schema()
    per_pair = max(2, n_ticks // len(SYMBOLS))
    step = (hi - lo) // per_pair
    rng = np.random.default_rng(0)
    walks = {
        s: p * np.exp(np.cumsum(rng.normal(0, 2e-5, per_pair)).astype("float64"))
        for s, p in SYMBOLS.items()
    }
    seq = 0
    for day in range(lo // DAY_NS, hi // DAY_NS + 1):
        first = max(0, -(-(day * DAY_NS - lo) // step))
        last = min(per_pair, -(-((day + 1) * DAY_NS - lo) // step))
        if last <= first:
            continue
        k = np.arange(first, last)
        t = lo + k * step
        cols: dict[str, list[pa.Array]] = {name: [] for name in schema.names}
        for symbol, walk in walks.items():
            m = walk[k]
            cols["received_at"].append(pa.array(t + 40_000_000, pa.timestamp("ns", tz="UTC")))
            cols["updated_at"].append(pa.array(t // 1_000_000, pa.timestamp("ms", tz="UTC")))
            cols["symbol"].append(pa.array(np.full(len(k), symbol, dtype=object), pa.string()))
            cols["bid"].append(pa.array(m * (1 - 1e-4)))
            cols["ask"].append(pa.array(m * (1 + 1e-4)))
            cols["last"].append(pa.array(m))
            cols["seq"].append(pa.array(seq + np.arange(len(k)), pa.int64()))
            seq += len(k)
        size = sum(len(a) for a in cols["bid"])
        arrays = {
            name: (
                pa.concat_arrays(cols[name])
                if cols[name]
                else pa.nulls(size, schema.field(name).type)
            )
            for name in schema.names
        }
        arrays["connection_id"] = pa.array(np.full(size, "c1", dtype=object), pa.string())
        arrays["channel"] = pa.array(np.full(size, "watchticker", dtype=object), pa.string())
        date = time.strftime("%Y-%m-%d", time.gmtime(day * 86_400))
        d = partition_dir(root, "watchticker", date)
        d.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(arrays, schema=schema), d / "part-0.parquet")
    _write_gap(root, (lo + hi) // 2)


def _write_gap(root: Path, at_ns: int) -> None:
    from toolkit.recording._rows import session_row
    from toolkit.recording._writer import RecordingWriter

    end = at_ns + 120 * 10**9
    with RecordingWriter(root) as writer:
        writer.add(session_row("disconnected", received_at_ns=at_ns, connection_id="c1"))
        writer.add(session_row("connected", received_at_ns=end, connection_id="c2"))
        writer.add(
            session_row(
                "gap", received_at_ns=end, connection_id="c2", gap_start_ns=at_ns, gap_end_ns=end
            )
        )


# --------------------------------------------------------------------- measured runs


def run_report(export: Path, root: Path | None) -> dict[str, object]:
    from toolkit.cli._report import load_frames
    from toolkit.report import execution_report

    t = time.perf_counter()
    report = execution_report(load_frames(export), root)
    seconds = time.perf_counter() - t
    po = report["per_order"]
    return {
        "seconds": seconds,
        "orders": len(po),
        "with_arrival": int(po["arrival_mid"].notna().sum()),
        "with_markout_60s": int(po["markout_60s_bp"].notna().sum()),
    }


DUCKDB_WORK = """
WITH o AS (
    SELECT id, symbol, side, average, cost, createdAt, executedAt,
           regexp_replace(upper(symbol), '[^A-Z0-9]', '', 'g') AS sym
    FROM read_parquet('{export}/orders.parquet')
),
q AS (
    SELECT orderId, min(price) AS best_buy, max(price) AS best_sell
    FROM read_parquet('{export}/evaluated_tickers.parquet') GROUP BY orderId
),
tk AS (
    SELECT regexp_replace(upper(symbol), '[^A-Z0-9]', '', 'g') AS sym, epoch_ns(updated_at) AS t,
           (bid + ask) / 2 AS mid
    FROM read_parquet('{root}/channel=watchticker/*/*.parquet')
),
a AS (
    SELECT o.id, tk.mid AS arrival_mid FROM o ASOF LEFT JOIN tk
    ON o.sym = tk.sym AND epoch_ns(o.createdAt) >= tk.t
),
m AS (
    SELECT o.id, tk.mid AS mid_60 FROM o ASOF LEFT JOIN tk
    ON o.sym = tk.sym AND epoch_ns(o.executedAt) + 60000000000 >= tk.t
)
SELECT o.id, (CASE WHEN o.side = 'buy' THEN 1 ELSE -1 END)
           * (o.average - CASE WHEN o.side = 'buy' THEN q.best_buy ELSE q.best_sell END)
           / CASE WHEN o.side = 'buy' THEN q.best_buy ELSE q.best_sell END * 1e4 AS slip_bp,
       a.arrival_mid, m.mid_60
FROM o LEFT JOIN q ON q.orderId = o.id LEFT JOIN a USING (id) LEFT JOIN m USING (id)
"""

VENUE_COST = """
SELECT coalesce(nullif(o.executedExchange, ''), o.exchange) AS venue, sum(t.cost) AS cost,
       sum(t."fee.cost") AS fees, count(*) AS trades
FROM read_parquet('{export}/trades.parquet') t
JOIN read_parquet('{export}/orders.parquet') o ON o.id = t.orderId
GROUP BY venue
"""


def run_duckdb(export: Path, root: Path | None) -> dict[str, object]:
    from toolkit.report._engine import connection

    t = time.perf_counter()
    with connection() as con:
        venues = con.execute(VENUE_COST.format(export=export)).fetchall()
        if root is None:
            work = DUCKDB_WORK.split("\ntk AS")[0].rstrip(",\n") + (
                "\nSELECT o.id, o.average / q.best_buy AS r FROM o LEFT JOIN q ON q.orderId = o.id"
            )
        else:
            work = DUCKDB_WORK
        got = con.execute(f"SELECT count(*) FROM ({work.format(export=export, root=root)})")
        rows = got.fetchone()
    return {"seconds": time.perf_counter() - t, "orders": rows[0] if rows else 0} | {
        "venues": len(venues)
    }


def child(kind: str, export: Path, root: Path | None) -> int:
    out = (run_report if kind == "report" else run_duckdb)(export, root)
    print(json.dumps(out | {"peak_rss_gib": peak_rss_gib()}))
    return 0


def measure(kind: str, export: Path, root: Path | None) -> dict[str, object]:
    argv = [sys.executable, __file__, "--child", kind, "--data", str(export.parent)]
    if root is None:
        argv.append("--no-market")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} run failed:\n{done.stderr[-3000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--orders", type=int, default=100_000)
    p.add_argument("--ticks", type=int, default=2_000_000, help="watchticker rows")
    p.add_argument("--data", type=Path, default=None, help="build (or reuse) the inputs here")
    p.add_argument("--no-market", action="store_true", help="the report without a recording")
    p.add_argument("--repeat", type=int, default=1, help="runs of each (the median counts)")
    p.add_argument("--child", choices=["report", "duckdb"], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        export, root = args.data / "export", args.data / "recording"
        return child(args.child, export, None if args.no_market else root)

    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or Path(tmp)
        data = data / f"o{args.orders}-t{args.ticks}" if args.data is None else data
        export, root = data / "export", data / "recording"
        t = time.perf_counter()
        if not (export / "orders.parquet").is_file():
            build_export(export, args.orders)
        if not args.no_market and not root.is_dir():
            build_recording(root, export, args.ticks)
        print(f"inputs in {data} (built or found in {time.perf_counter() - t:.0f} s, not counted)")
        market = None if args.no_market else root
        for kind in ("report", "duckdb"):
            runs = [measure(kind, export, market) for _ in range(max(1, args.repeat))]
            seconds = sorted(float(str(r["seconds"])) for r in runs)
            rss = max(float(str(r["peak_rss_gib"])) for r in runs)
            print(
                f"{kind:7s} {args.orders:>10,} orders, "
                f"{0 if args.no_market else args.ticks:>12,} ticks: "
                f"{statistics.median(seconds):7.1f} s (median of {len(runs)}: "
                + ", ".join(f"{x:.1f}" for x in seconds)
                + f"), peak RSS {rss:5.2f} GiB  {runs[-1]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
