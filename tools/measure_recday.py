"""Figures of issue 28 part 3 (recordings compacted at day close, pruned by symbol).

1. A day of ``--rows`` ticker rows (4 pairs) in 60-s files, as a recorder leaves it: a read
   of one pair (``scan_recording(..., symbols=[...]).to_table()``) on the 60-s files, on
   the day compacted in time order (the compaction before this change) and compacted by
   symbol (now): seconds and bytes read (``rchar`` of ``/proc/self/io``: every byte the
   process read, page cache included), ``--rounds`` rounds, medians.
2. The recorder's message rate (``bench/bench_record.py``'s stream source and harness: the
   receiver is the bottleneck) on a root holding such a closed day, with ``compact="off"``
   and with ``compact="daily"`` (its start compacts that day on its thread while it
   records): rounds interleaved, medians, messages dropped.

    python tools/measure_recday.py [--rows 1000000] [--rounds 3] [--messages 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

T0 = 1_795_305_600 * 10**9  # 2026-11-22T00:00:00Z: a day long over
PAIRS = ("BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL")
MINUTE = 60 * 10**9


def rchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise RuntimeError("no rchar in /proc/self/io")


def write_day(root: Path, rows: int) -> None:
    """``rows`` ticker rows over one day, in 1,440 files of 60 s (as the converter names
    them), the pairs interleaved as a live stream has them."""
    import pyarrow as pa

    from toolkit.recording._files import write_parts
    from toolkit.recording._rows import NS_PER_DAY, recording_schema

    schema = recording_schema()
    per_file = rows // 1440
    step = MINUTE // per_file
    seq = 0
    for minute in range(1440):
        n = per_file if minute < 1439 else rows - per_file * 1439
        start = T0 + minute * MINUTE
        stamps = [start + i * step for i in range(n)]
        symbols = [PAIRS[(seq + i) % len(PAIRS)] for i in range(n)]
        prices = [350_000.0 + ((seq + i) % 997) for i in range(n)]
        raws = [
            f'{{"channel":"watchticker","message":{{"symbol":"{s}","bid":"{p}",'
            f'"ask":"{p + 1}","last":"{p + 0.5}","timestamp":{t // 10**6}}}}}'
            for s, p, t in zip(symbols, prices, stamps, strict=True)
        ]
        columns: dict[str, Any] = {
            "received_at": pa.array(stamps, pa.int64()).cast(schema.field("received_at").type),
            "connection_id": pa.array(["c1"] * n),
            "seq": pa.array(range(seq + 1, seq + n + 1), pa.int64()),
            "channel": pa.array(["watchticker"] * n),
            "symbol": pa.array(symbols),
            "updated_at": pa.array([t // 10**6 for t in stamps], pa.int64()).cast(
                schema.field("updated_at").type
            ),
            "bid": pa.array(prices),
            "ask": pa.array([p + 1 for p in prices]),
            "last": pa.array([p + 0.5 for p in prices]),
            "raw": pa.array(raws),
        }
        table = pa.table([columns.get(f.name, pa.nulls(n, f.type)) for f in schema], schema=schema)
        write_parts(root, {("watchticker", T0 // NS_PER_DAY): [table]}, f"{start:020d}-1-000000")
        seq += n


def time_ordered(write: Callable[[Any], None], tables: Callable[[], Iterator[Any]], *_: Any) -> int:
    """The compaction before this change: the run's rows in file order, 131,072-row groups."""
    import pyarrow as pa

    held: list[Any] = []
    rows = count = 0
    for table in tables():
        held.append(table)
        count += table.num_rows
        if count >= 131_072:
            write(pa.concat_tables(held))
            rows += count
            held, count = [], 0
    if held:
        write(pa.concat_tables(held))
        rows += count
    return rows


def scan_one(root: Path, pair: str) -> tuple[float, int, int]:
    from toolkit.recording import scan_recording

    before, t = rchar(), time.perf_counter()
    table = scan_recording(root, "watchticker", symbols=[pair]).to_table()
    return time.perf_counter() - t, rchar() - before, table.num_rows


def part_scans(base: Path, rows: int, rounds: int) -> Path:
    from toolkit.recording import _compact, compact_recording

    day = base / "files"
    t = time.perf_counter()
    write_day(day, rows)
    print(
        f"a day of {rows:,} rows in 1,440 files of 60 s written in {time.perf_counter() - t:.1f} s"
    )
    layouts = {"60-s files": day}
    for name, merge in (("compacted, time order", time_ordered), ("compacted, by symbol", None)):
        target = base / name.replace(" ", "").replace(",", "-")
        shutil.copytree(day, target)
        real = _compact.write_by_symbol
        if merge is not None:
            _compact.write_by_symbol = merge  # type: ignore[assignment]
        try:
            t = time.perf_counter()
            stats = compact_recording(target, clock_ns=lambda: T0 + 3 * 86_400 * 10**9)
            took = time.perf_counter() - t
        finally:
            _compact.write_by_symbol = real
        print(f"{name}: {stats.line()} in {took:.1f} s")
        layouts[name] = target
    size = {
        name: sum(p.stat().st_size for p in root.rglob("*.parquet"))
        for name, root in layouts.items()
    }
    print(f"\nscan_recording(root, 'watchticker', symbols=['ETH/BRL']).to_table(), {rounds} rounds")
    results: dict[str, list[tuple[float, int, int]]] = {name: [] for name in layouts}
    for _ in range(rounds):
        for name, root in layouts.items():
            results[name].append(scan_one(root, "ETH/BRL"))
    print(f"{'layout':<24}{'files MiB':>10}{'median s':>10}{'median MiB read':>17}{'rows':>10}")
    for name, runs in results.items():
        secs = statistics.median(r[0] for r in runs)
        read = statistics.median(r[1] for r in runs) / 2**20
        print(f"{name:<24}{size[name] / 2**20:>10.1f}{secs:>10.3f}{read:>17.1f}{runs[0][2]:>10,}")
        print(
            f"{'':<24}rounds: " + ", ".join(f"{r[0]:.3f} s / {r[1] / 2**20:.1f} MiB" for r in runs)
        )
    return day


async def record(client: Any, root: Path, n: int, compact: str) -> tuple[float, Any, int, int]:
    """(seconds to receive n messages, final stats, day partitions compacted by then, peak
    RSS of this process meanwhile)."""
    from bench_record import _poll, _rss

    from toolkit.recording._recorder import Recorder

    rec = Recorder(
        client,
        root,
        channels=["watchTicker:BTC/BRL"],
        flush_interval=1.0,
        stream_options={"reconnect": False, "ping_interval": None},
        compact=compact,
    )
    task = rec.start()

    def connected() -> bool:
        if task.done():
            task.result()
        return rec.stats.session_rows > 0

    await _poll(connected, lambda: None)
    start = time.perf_counter()
    peak = [0]

    def sample() -> None:
        peak[0] = max(peak[0], _rss())

    await _poll(lambda: rec.stats.messages + rec.stats.dropped >= n, sample)
    elapsed = time.perf_counter() - start
    compacted = rec.stats.compacted
    stats = await rec.stop()
    sample()
    return elapsed, stats, compacted, peak[0]


def part_recorder(base: Path, day: Path, n: int, rounds: int) -> None:
    from bench_record import _server_main

    from toolkit.client._client import Client
    from toolkit.sim import Simulator

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    server = ctx.Process(target=_server_main, args=(child, 0.1), daemon=True)
    server.start()
    port = parent.recv()
    rates: dict[str, list[float]] = {"off": [], "daily": []}
    dropped: dict[str, int] = {"off": 0, "daily": 0}
    overlap = 0
    try:
        with Simulator(seed=1, engine=False, history_orders=10) as sim:

            def client() -> Any:
                return Client(
                    sim.base_url,
                    ws_url=f"ws://127.0.0.1:{port}/n{n}",
                    api_key="demo",
                    api_secret="demo-secret",
                )

            warm = base / "warm"
            c = client()
            asyncio.run(record(c, warm, n, "off"))
            c.close()
            for r in range(rounds):
                for mode in ("off", "daily"):
                    root = base / f"rec-{mode}-{r}"
                    shutil.copytree(day, root)  # the closed day a previous run left
                    c = client()
                    elapsed, stats, compacted, rss = asyncio.run(record(c, root, n, mode))
                    c.close()
                    rates[mode].append(stats.messages / elapsed)
                    dropped[mode] += stats.dropped
                    if mode == "daily":
                        overlap += compacted == 0  # still compacting when n arrived
                    print(
                        f"round {r + 1} compact={mode:<5} {stats.messages / elapsed:>10,.0f} msg/s"
                        f"  dropped {stats.dropped}  compacted {stats.compacted} (by the "
                        f"last message: {compacted})  peak RSS {rss / 2**20:,.0f} MiB"
                    )
                    shutil.rmtree(root, ignore_errors=True)
    finally:
        server.kill()
    off, daily = statistics.median(rates["off"]), statistics.median(rates["daily"])
    print(
        f"\nrecorder, {n:,} messages, {rounds} rounds: median {off:,.0f} msg/s with compact=off, "
        f"{daily:,.0f} msg/s while compacting the closed day (compact=daily): "
        f"{daily / off:.0%}; dropped {dropped['off']} / {dropped['daily']}; rounds in which "
        f"the compaction was still running at the last message: {overlap} of {rounds}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--skip-recorder", action="store_true")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="measure-recday-"))
    try:
        day = part_scans(base, args.rows, args.rounds)
        if not args.skip_recorder:
            print()
            part_recorder(base, day, args.messages, args.rounds)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
