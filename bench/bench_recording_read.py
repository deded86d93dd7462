"""Benchmark of reading a recording back: the eager ``read_recording``, the lazy
``scan_recording`` of a 2-hour window and one symbol, ``replay`` of a 2-hour window, each
against DuckDB reading the same files in the same run; then ``compact_recording`` (files
before and after, its time) and the window reads again on the compacted recording.

Run: ``.venv/bin/python bench/bench_recording_read.py [--rows 1000000] [--days 2]
[--file-seconds 60] [--rounds 3] [--skip-full]``. The recording is built on disk as the recorder's
converter writes it (one file per ``--file-seconds`` and day, ticker rows spread evenly over
``--days`` days, three symbols, each row with its raw JSON). Every measure runs in a fresh
child process, so its peak RSS (``VmHWM``, imports included) is its own; times and peak
RSS are medians over ``--rounds`` rounds. Ratios are against DuckDB doing the same query in
the same run.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

T0 = 1_795_305_600 * 10**9  # 2026-11-22T00:00:00Z
HOUR = 3600 * 10**9
DAY = 24 * HOUR
SYMBOLS = ("BTC/BRL", "ETH/BRL", "SOL/BRL")
#: the window read: 2 hours from 10:00 of the first day, one symbol
WINDOW = (T0 + 10 * HOUR, T0 + 12 * HOUR)
SYMBOL = "BTC/BRL"


# ---------------------------------------------------------------------------- building


def build(root: Path, rows: int, days: int, file_seconds: int) -> int:
    """Write ``rows`` ticker rows over ``days`` days, one file per ``file_seconds``; the
    number of files."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from toolkit.recording._files import write_parts
    from toolkit.recording._rows import recording_schema, session_row

    schema = recording_schema()
    span = days * DAY
    step = span // rows
    per_file = max(1, file_seconds * 10**9 // step)
    files = 0
    write_parts(
        root,
        {("_session", T0 // DAY): [[session_row("connected", received_at_ns=T0, seq=0)]]},
        f"{T0:020d}-0-000000",
    )
    for k, first in enumerate(range(0, rows, per_file)):
        n = min(per_file, rows - first)
        seq = pa.array(range(first + 1, first + n + 1), pa.int64())
        received = pc.add(pc.multiply(pc.subtract(seq, 1), step), T0)
        symbol = pc.take(pa.array(SYMBOLS), pc.cast(pc.divide(seq, 1), pa.int64()).to_numpy() % 3)
        price = pc.add(pc.cast(seq, pa.float64()), 100.0)
        ms = pc.divide(received, 10**6)
        texts = [pc.cast(x, pa.string()) for x in (price, pc.add(price, 1.0), ms)]
        raw = pc.binary_join_element_wise(
            '{"channel":"watchticker","message":{"symbol":"',
            symbol,
            '","bid":"',
            texts[0],
            '","ask":"',
            texts[1],
            '","last":"',
            texts[0],
            '","timestamp":',
            texts[2],
            "}}",
            "",
        )
        nulls = {f.name: pa.nulls(n, f.type) for f in schema}
        columns = {
            **nulls,
            "received_at": pc.cast(received, schema.field("received_at").type),
            "connection_id": pa.array(["c1"] * n),
            "seq": seq,
            "channel": pa.array(["watchticker"] * n),
            "symbol": symbol,
            "updated_at": pc.cast(ms, schema.field("updated_at").type),
            "bid": price,
            "ask": pc.add(price, 1.0),
            "last": price,
            "raw": raw,
        }
        table = pa.table([columns[f.name] for f in schema], schema=schema)
        day = received[0].as_py() // DAY
        last_day = received[-1].as_py() // DAY
        name = f"{received[0].as_py():020d}-1-{k:06d}"
        if day == last_day:
            parts = {("watchticker", day): [table]}
        else:  # a file across midnight: one per day, as the converter writes it
            cut = pc.less(received, last_day * DAY)
            parts = {
                ("watchticker", day): [table.filter(cut)],
                ("watchticker", last_day): [table.filter(pc.invert(cut))],
            }
        files += len(write_parts(root, parts, name))
    return files


# ---------------------------------------------------------------------------- measures


def _measure(op: str, root: str) -> dict[str, float]:
    """Run one operation in this process: its rows, seconds (imports done before)."""
    import duckdb
    import pandas  # noqa: F401
    import pyarrow.dataset  # noqa: F401

    import toolkit.recording._read
    import toolkit.recording._replay
    import toolkit.recording._scan  # noqa: F401

    start_ns, end_ns = WINDOW
    began = time.perf_counter()
    if op == "eager":
        from toolkit.recording import read_recording

        rows = len(read_recording(root, "watchticker"))
    elif op == "eager_window":
        from toolkit.recording import read_recording

        rows = len(
            read_recording(root, "watchticker", start=start_ns, end=end_ns, symbols=[SYMBOL])
        )
    elif op == "lazy_window":
        from toolkit.recording import scan_recording

        lazy = scan_recording(root, "watchticker", start=start_ns, end=end_ns, symbols=[SYMBOL])
        rows = lazy.to_table().num_rows
    elif op == "replay_window":
        from toolkit.recording import replay

        rows = sum(1 for _ in replay(root, channels="watchticker", start=start_ns, end=end_ns))
    elif op == "compact":
        from toolkit.recording import compact_recording

        rows = compact_recording(root, clock_ns=lambda: T0 + 3650 * DAY).rows
    elif op.startswith("duckdb"):
        import duckdb

        glob = f"{root}/channel=watchticker/date=*/*.parquet"
        query = f"select * from read_parquet('{glob}', hive_partitioning = true)"
        if op != "duckdb_all":
            first = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(start_ns / 1e9))
            last = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(end_ns / 1e9))
            query += f" where received_at >= '{first}+00' and received_at < '{last}+00'"
            if op == "duckdb_window_symbol":
                query += f" and symbol = '{SYMBOL}'"
            else:  # what replay reads: every column of the window, in order
                query += " order by received_at, connection_id, seq"
        rows = duckdb.sql(query).to_arrow_table().num_rows
    else:
        raise SystemExit(f"unknown op {op}")
    seconds = time.perf_counter() - began
    return {"rows": rows, "seconds": seconds}


def peak_mib() -> float:
    """This process's peak RSS: ``VmHWM`` (ru_maxrss on Linux keeps the high-water mark of
    the parent the child was forked from, across exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(op: str, root: str) -> None:
    result = _measure(op, root)
    result["peak_mib"] = peak_mib()
    print(json.dumps(result))


def run_op(op: str, root: Path, rounds: int) -> dict[str, float]:
    results = []
    for _ in range(rounds):
        out = subprocess.run(
            [sys.executable, __file__, "--child", op, "--root", str(root)],
            capture_output=True,
            text=True,
            check=True,
        )
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "rows": results[0]["rows"],
        "seconds": statistics.median(r["seconds"] for r in results),
        "peak_mib": statistics.median(r["peak_mib"] for r in results),
    }


def count_files(root: Path) -> int:
    return len(list(root.glob("channel=*/date=*/*.parquet")))


# ---------------------------------------------------------------------------- main

PAIRS = (
    ("eager", "duckdb_all", "eager read, whole channel"),
    ("eager_window", "duckdb_window_symbol", "eager read, 2 h + symbol"),
    ("lazy_window", "duckdb_window_symbol", "lazy scan, 2 h + symbol"),
    ("replay_window", "duckdb_window", "replay, 2 h window"),
)


def report(stage: str, root: Path, rounds: int, ops: Sequence[tuple[str, str, str]]) -> None:
    print(f"\n{stage}: {count_files(root):,} files")
    print(f"{'measure':28} {'rows':>10} {'s':>8} {'MiB':>7} | {'duckdb s':>8} {'MiB':>7} | ratio")
    for ours, theirs, label in ops:
        a = run_op(ours, root, rounds)
        b = run_op(theirs, root, rounds)
        ratio = a["seconds"] / b["seconds"] if b["seconds"] else float("nan")
        print(
            f"{label:28} {a['rows']:>10,} {a['seconds']:>8.2f} {a['peak_mib']:>7.0f} | "
            f"{b['seconds']:>8.2f} {b['peak_mib']:>7.0f} | {ratio:5.1f}x"
            + ("" if a["rows"] == b["rows"] else f"  (duckdb rows {b['rows']:,})")
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=2)
    parser.add_argument("--file-seconds", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--skip-full",
        action="store_true",
        help="leave out the eager read of the whole channel (its memory grows with --rows)",
    )
    parser.add_argument(
        "--root", help="a folder to build in, kept (a recording already there is reused)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.root)
        return 0
    base = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="bench-rec-"))
    root = base / "rec"
    try:
        began = time.perf_counter()
        if root.exists():
            print(f"reusing {root} ({count_files(root):,} files)")
        else:
            files = build(root, args.rows, args.days, args.file_seconds)
            print(
                f"built {args.rows:,} ticker rows over {args.days} day(s) in {files:,} files "
                f"({args.file_seconds} s each) in {time.perf_counter() - began:.1f} s"
            )
        print(f"medians of {args.rounds} round(s), each measure in a fresh process")
        pairs = PAIRS[1:] if args.skip_full else PAIRS
        report("as recorded", root, args.rounds, pairs)
        before = count_files(root)
        done = run_op("compact", root, 1)  # once: a second run has nothing to do
        print(
            f"\ncompact_recording: {before:,} files -> {count_files(root):,} "
            f"({done['rows']:,} rows) in {done['seconds']:.1f} s, peak {done['peak_mib']:.0f} MiB"
        )
        report("compacted", root, args.rounds, pairs)
    finally:
        if not args.root:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
