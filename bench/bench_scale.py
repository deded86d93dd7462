"""Scale benchmark: the execution report, ``store.frames`` (a window) and a recording read
on inputs on disk, time and peak RSS, each against DuckDB doing the same work over the
same files in the same run.

    python bench/bench_scale.py [--orders 100000] [--ticks 2000000] [--data DIR]
        [--work report,store,recording] [--sides ours,duckdb] [--repeat 1] [--no-market]
        [--bodies] [--files-per-day 4] [--store DIR] [--store-orders 1000000] [--build-only]

Inputs (built once into ``--data``, default a temporary folder, and reused when present):

- ``export/``: an order export (``OrderFrames.to_parquet``'s five files and manifest) of
  closed orders with the distributions of ``bench/_synthetic.py`` (one a minute, 3 trades
  and 5 quotes each, 5% limit orders), built vectorised (``bench/_scale_inputs.py``: 10M
  orders in minutes, memory flat), or with ``--bodies`` from JSON bodies through
  ``build_frames`` (about 7 min per million orders);
- ``recording/``: ``--ticks`` watchticker rows of 4 pairs over the orders' span +- 10
  minutes, ``--files-per-day`` range-named files a day as the recorder writes them, and
  the ``_session`` rows of one two-minute gap;
- ``store/`` (``--work store`` only): an order store as a sync leaves it (bodies and typed
  tables, ``bench_store_frames.build``) of at most ``--store-orders`` orders (a sync-like
  build runs about 10 min per million: a larger one is left out), or ``--store DIR``.

Each measured run is a child process; its peak RSS is its ``VmHWM`` (imports included):

- ``report``: ``execution_report(<export folder>, <recording root>)`` (the paths: whatever
  the report does with them), tables only; DuckDB: cost by venue from the trades,
  slippage per order against its best quote, arrival mid and +60 s markout by ASOF JOIN;
- ``store``: ``store.frames(since, until)`` of one week in the middle; DuckDB: the same
  week's five tables from the store's typed tables (``_tables``);
- ``recording``: ``tk.scan_recording`` of a 2-hour window to a table, and ``tk.replay``
  of the same window; DuckDB: the window (ordered, for replay) over the same files.

One line per measurement: what, size, median seconds (and every run), median CPU seconds
(user + system of the run's process and its children: on a shared machine the wall time
moves with the load, the CPU time much less), the 1-minute load average before -> after
the runs, peak RSS GiB (the largest of the runs; VmHWM of the run's process, and the
peak of its process tree sampled every 0.2 s: a worker pool included), and ours / DuckDB.

Sizes of issue 28: ``--orders 1000000 --ticks 8000000`` / ``50000000``, ``--orders
3000000 --ticks 24000000``, ``--orders 10000000 --ticks 200000000``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHUNK = 100_000  # orders built into frames at a time with --bodies
FRAMES = ("orders", "trades", "fees", "evaluated_tickers", "fills")
HOUR_NS = 3600 * 10**9
DAY_NS = 24 * HOUR_NS
WEEK_MS = 7 * 86_400_000
WORK = ("report", "store", "recording")
SIDES = ("ours", "duckdb")


def peak_rss_gib() -> float:
    """This process's peak resident set (VmHWM), GiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


# ------------------------------------------------------------------------- inputs


def build_export_bodies(out: Path, n: int) -> None:
    """``n`` synthetic closed orders' JSON bodies through ``build_frames`` (``CHUNK`` at a
    time), as one export folder: the fidelity path, slow."""
    import random

    import pyarrow.parquet as pq
    from _synthetic import closed_order

    from toolkit._atomic import atomic_files
    from toolkit.frames._frames import build_frames

    rng = random.Random(0)
    writers: dict[str, pq.ParquetWriter] = {}
    with (
        tempfile.TemporaryDirectory(dir=out.parent) as tmp,
        atomic_files(out, [f"{name}.parquet" for name in FRAMES]) as files,
    ):
        try:
            for lo in range(0, n, CHUNK):
                bodies = [
                    json.dumps(closed_order(rng, i), separators=(",", ":")).encode()
                    for i in range(lo, min(n, lo + CHUNK))
                ]
                written = build_frames(bodies).to_parquet(Path(tmp) / str(lo))
                for name in FRAMES:
                    table = pq.read_table(written[name])
                    if name not in writers:  # the first chunk's schema, its metadata too
                        path = files.path(f"{name}.parquet")
                        writers[name] = pq.ParquetWriter(path, table.schema, compression="zstd")
                    writers[name].write_table(table)
                shutil.rmtree(Path(tmp) / str(lo))
                print(f"  built {min(n, lo + CHUNK):,} orders", flush=True)
        finally:
            for writer in writers.values():
                writer.close()


def inputs(args: argparse.Namespace, data: Path) -> tuple[Path, Path | None]:
    """The export and the recording root in ``data``, built when absent."""
    import _scale_inputs as scale

    export, root = data / "export", data / "recording"
    data.mkdir(parents=True, exist_ok=True)
    if not (export / "_manifest.json").is_file():
        if args.bodies:
            build = lambda: build_export_bodies(export, args.orders)  # noqa: E731
        else:
            build = lambda: scale.build_export(export, args.orders, progress=print)  # noqa: E731
        scale.timed(f"export of {args.orders:,} orders built", build)
    if args.no_market:
        return export, None
    done = data / "recording.done"  # an interrupted build is started again
    if not done.is_file():
        shutil.rmtree(root, ignore_errors=True)
        lo, hi = scale.orders_span_ns(export)
        files, _ = scale.timed(
            f"recording of {args.ticks:,} ticker rows built",
            lambda: scale.build_recording(
                root, lo, hi, args.ticks, files_per_day=args.files_per_day, progress=print
            ),
        )
        done.write_text(json.dumps({"ticks": args.ticks, "files": files}))
    return export, root


def store_of(args: argparse.Namespace, data: Path) -> Path | None:
    """The store measured: ``--store``, or ``data/store`` (built when absent), or None
    when the orders are more than ``--store-orders``."""
    if args.store is not None:
        return Path(args.store)
    store = data / "store"
    if (data / "store.done").is_file():
        return store
    if args.orders > args.store_orders:
        return None
    import _scale_inputs as scale
    from bench_store_frames import build

    shutil.rmtree(store, ignore_errors=True)
    scale.timed(f"store of {args.orders:,} orders built", lambda: build(str(store), args.orders))
    (data / "store.done").write_text(str(args.orders))
    return store


def store_orders(store: Path) -> int:
    import pyarrow.dataset as ds

    return int(ds.dataset(store / "_tables" / "orders", format="parquet").count_rows())


def window_ms(store: Path) -> tuple[int, int]:
    """One week from the middle order of the store (one order a minute from T0)."""
    from _synthetic import T0_MS

    since = T0_MS + (store_orders(store) // 2) * 60_000
    return since, since + WEEK_MS


def window_ns(root: Path) -> tuple[int, int]:
    """2 hours from the hour in the middle of the recording (the orders' span)."""
    import _scale_inputs as scale

    lo, hi = scale.orders_span_ns(root.parent / "export")
    start = (lo + hi) // 2 // HOUR_NS * HOUR_NS
    return start, start + 2 * HOUR_NS


# --------------------------------------------------------------------- measured runs


def report_ours(export: Path, root: Path | None) -> dict[str, object]:
    from toolkit.report import execution_report

    report = execution_report(export, root)
    parts = getattr(report.tables, "parts", None)
    if parts is not None:  # out of core: the three figures' columns only, not all 88
        from toolkit.report._columnar import read_columns

        po = read_columns(parts.per_order, ["orderId", "arrival_mid", "markout_60s_bp"])
    else:
        po = report["per_order"]
    return {
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


def report_duckdb(export: Path, root: Path | None) -> dict[str, object]:
    from toolkit.report._engine import connection

    with connection() as con:
        venues = con.execute(VENUE_COST.format(export=export)).fetchall()
        if root is None:
            work = DUCKDB_WORK.split("\ntk AS")[0].rstrip(",\n") + (
                "\nSELECT o.id, o.average / q.best_buy AS r FROM o LEFT JOIN q ON q.orderId = o.id"
            )
        else:
            work = DUCKDB_WORK
        got = con.execute(
            f"SELECT count(*), count(arrival_mid), count(mid_60) FROM "
            f"({work.format(export=export, root=root)})"
            if root is not None
            else f"SELECT count(*) FROM ({work.format(export=export)})"
        ).fetchone()
    assert got is not None
    out: dict[str, object] = {"orders": got[0], "venues": len(venues)}
    if root is not None:
        out |= {"with_arrival": got[1], "with_markout_60s": got[2]}
    return out


def store_ours(store: Path) -> dict[str, object]:
    from toolkit.store import OrderStore

    since, until = window_ms(store)
    frames = OrderStore(store).frames(since=since, until=until)
    return {name: len(getattr(frames, name)) for name in FRAMES}


def store_duckdb(store: Path) -> dict[str, object]:
    import duckdb

    from toolkit.store._files import month_of

    since, until = window_ms(store)
    months = f"month BETWEEN '{month_of(since)}' AND '{month_of(until)}'"

    def table(name: str) -> str:
        return f"read_parquet('{store}/_tables/{name}/*/*.parquet', hive_partitioning = true)"

    con = duckdb.connect()
    con.execute(
        f"CREATE TEMP TABLE o AS SELECT * EXCLUDE (month) FROM {table('orders')} WHERE {months}"
        f" AND epoch_ms(createdAt) >= {since} AND epoch_ms(createdAt) < {until}"
    )
    out: dict[str, object] = {"orders": con.sql("SELECT * FROM o").to_arrow_table().num_rows}
    for name in FRAMES[1:]:
        rel = con.sql(
            f"SELECT * EXCLUDE (month) FROM {table(name)} WHERE {months}"
            " AND orderId IN (SELECT id FROM o)"
        )
        out[name] = rel.to_arrow_table().num_rows
    return out


def recording_ours(root: Path, replay: bool) -> dict[str, object]:
    import toolkit as tk

    start, end = window_ns(root)
    if replay:
        return {
            "rows": sum(1 for _ in tk.replay(root, channels="watchticker", start=start, end=end))
        }
    lazy = tk.scan_recording(root, "watchticker", start=start, end=end)
    return {"rows": lazy.to_table().num_rows}


def recording_duckdb(root: Path, replay: bool) -> dict[str, object]:
    import duckdb

    start, end = window_ns(root)
    glob = f"{root}/channel=watchticker/date=*/*.parquet"
    query = (
        f"SELECT * FROM read_parquet('{glob}', hive_partitioning = true)"
        f" WHERE received_at >= make_timestamp({start // 1000})"
        f" AND received_at < make_timestamp({end // 1000})"
    )
    if replay:
        query += " ORDER BY received_at, connection_id, seq"
    return {"rows": duckdb.sql(query).to_arrow_table().num_rows}


def child(op: str, data: Path, store: Path | None, market: bool) -> int:
    export, root = data / "export", (data / "recording" if market else None)
    began = time.perf_counter()
    work, side = op.split(":")
    if work == "report":
        out = (report_ours if side == "ours" else report_duckdb)(export, root)
    elif work == "store":
        assert store is not None
        out = (store_ours if side == "ours" else store_duckdb)(store)
    else:
        assert root is not None
        out = (recording_ours if side == "ours" else recording_duckdb)(root, work == "replay")
    seconds = time.perf_counter() - began
    print(json.dumps(out | {"seconds": seconds, "peak_rss_gib": peak_rss_gib()}))
    return 0


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's waited-for children and theirs."""
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _tree_rss(pid: int) -> int:
    """Resident bytes of process ``pid`` and all its descendants now (0: gone)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, grew = {pid}, True
    while grew:
        more = {p for p, pp in parents.items() if pp in tree} - tree
        tree |= more
        grew = bool(more)
    total = 0
    for p in tree:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def measure(op: str, data: Path, store: Path | None, market: bool) -> dict[str, Any]:
    """One run of ``op`` in a child process: its result, wall seconds, peak RSS, its CPU
    seconds and the peak resident memory of its process tree (the child's and its own
    children's: a worker pool counts; sampled every 0.2 s)."""
    import threading

    argv = [sys.executable, __file__, "--child", op, "--data", str(data)]
    if store is not None:
        argv += ["--store", str(store)]
    if not market:
        argv.append("--no-market")
    cpu = _children_cpu()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            peak[0] = max(peak[0], _tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{op} run failed:\n{err[-3000:]}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result | {"cpu_seconds": _children_cpu() - cpu, "tree_rss_gib": peak[0] / 2**30}


def load_average() -> str:
    """The 1-minute load average (a shared machine's times are read against it)."""
    return f"{os.getloadavg()[0]:.1f}"


def _names(text: str, allowed: Sequence[str], what: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    wrong = [n for n in names if n not in allowed]
    if wrong or not names:
        raise SystemExit(f"{what}: {', '.join(wrong) or 'none'} (choose from {', '.join(allowed)})")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--orders", type=int, default=100_000)
    p.add_argument("--ticks", type=int, default=2_000_000, help="watchticker rows")
    p.add_argument("--data", type=Path, default=None, help="build (or reuse) the inputs here")
    p.add_argument("--work", default=",".join(WORK), help="report, store, recording")
    p.add_argument("--sides", default=",".join(SIDES), help="ours, duckdb")
    p.add_argument("--no-market", action="store_true", help="the report without a recording")
    p.add_argument("--repeat", type=int, default=1, help="runs of each (the median counts)")
    p.add_argument("--bodies", action="store_true", help="build the export from JSON bodies")
    p.add_argument("--files-per-day", type=int, default=4, help="recording files a day")
    p.add_argument("--store", type=Path, default=None, help="an order store to measure")
    p.add_argument("--store-orders", type=int, default=1_000_000, help="largest store built")
    p.add_argument("--build-only", action="store_true", help="build the inputs, measure none")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args.child, args.data, args.store, not args.no_market)
    work = _names(args.work, WORK, "--work")
    sides = _names(args.sides, SIDES, "--sides")

    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or Path(tmp) / f"o{args.orders}-t{args.ticks}"
        began = time.perf_counter()
        _, root = inputs(args, data)
        store = store_of(args, data) if "store" in work else None
        print(f"inputs in {data} (built or found in {time.perf_counter() - began:.0f} s)")
        if args.build_only:
            return 0
        ops: list[tuple[str, str]] = []
        if "report" in work:
            ticks = 0 if root is None else args.ticks
            ops.append(("report", f"{args.orders:,} orders, {ticks:,} ticks"))
        if "store" in work:
            if store is None:
                print(f"store: none of {args.orders:,} orders (over --store-orders); left out")
            else:
                ops.append(("store", f"1 week of {store_orders(store):,} orders"))
        if "recording" in work and root is not None:
            ops.append(("recording", f"2 h of {args.ticks:,} ticks"))
            ops.append(("replay", f"2 h of {args.ticks:,} ticks"))
        for what, size in ops:
            medians: dict[str, float] = {}
            for side in sides:
                load = load_average()
                runs = [
                    measure(f"{what}:{side}", data, store, root is not None)
                    for _ in range(max(1, args.repeat))
                ]
                load += f"->{load_average()}"
                seconds = sorted(float(r["seconds"]) for r in runs)
                medians[side] = statistics.median(seconds)
                cpu = statistics.median(float(r["cpu_seconds"]) for r in runs)
                rss = max(float(r["peak_rss_gib"]) for r in runs)
                tree = max(float(r["tree_rss_gib"]) for r in runs)
                ratio = (
                    f"  {medians['ours'] / medians['duckdb']:5.1f}x DuckDB"
                    if side == "duckdb" and "ours" in medians
                    else ""
                )
                measured = ("seconds", "peak_rss_gib", "cpu_seconds", "tree_rss_gib")
                said = {k: v for k, v in runs[-1].items() if k not in measured}
                print(
                    f"{what:9s} {side:6s} {size:>34s}: {medians[side]:7.1f} s (median of "
                    f"{len(runs)}: {', '.join(f'{x:.1f}' for x in seconds)}), CPU "
                    f"{cpu:.1f} s, load {load}, peak RSS {rss:5.2f} GiB (with its workers "
                    f"{tree:5.2f} GiB){ratio}  {said}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
