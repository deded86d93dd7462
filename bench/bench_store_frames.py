"""``store.frames()`` on a large store: the typed tables (``ROOT/_tables``) against the JSON
path it replaced (every body read, listed, joined and parsed), in the same run.

    python bench/bench_store_frames.py [--orders 1000000] [--rounds 3] [--root DIR]

Builds a store of ``--orders`` closed market orders (``bench/_synthetic.py``: 3 trades and 5
quotes each, one a minute from 2026-11-01) the way a sync writes it (part files and their
typed tables, ``Writer._write``), then reads it in a fresh child process per round: the
full read and a one-week window (createdAt; updatedAt; BTC/BRL with three columns), before
(the JSON path) and after. Each child reports its wall time and its peak RSS (VmHWM from
/proc/self/status, imports included; an idle child's is printed as the floor). The median
over the rounds counts. Also the cost a sync pays for the tables: writing 5,000 new orders
with and without them.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _synthetic import T0_MS, _dumps, closed_order

WEEK_MS = 7 * 86_400_000


def peak_rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover - not Linux


def build(root: str, orders: int, batch: int = 50_000) -> None:
    """The store a sync of ``orders`` orders leaves (part files and their typed tables)."""
    from toolkit.profile import DEFAULT_PROFILE
    from toolkit.store._files import StoreFiles
    from toolkit.store._writer import Writer

    files = StoreFiles(root)
    writer = Writer(files, DEFAULT_PROFILE, batch, {})
    rng = random.Random(0)
    synced = int(time.time() * 1000)
    for start in range(0, orders, batch):
        pending: dict[str, list[dict[str, Any]]] = {}
        for i in range(start, min(orders, start + batch)):
            body = _dumps(closed_order(rng, i)).encode()
            month, row = writer.row(f"#{i}", body, "ids", synced)
            pending.setdefault(month, []).append(row)
        writer._write(pending)
        print(f"  built {min(orders, start + batch):,} orders", end="\r", flush=True)
    print()


def old_frames(root: str, since: int | None = None, until: int | None = None) -> Any:
    """``store.frames()`` as it was: its coverage counted, then the bodies of the months
    read, as ``str``, parsed at once by ``build_frames`` (the column, a ``str`` list, a
    ``bytes`` list, joined bytes)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from toolkit.frames import build_frames
    from toolkit.store import OrderStore
    from toolkit.store._files import StoreFiles, month_of

    store = OrderStore(root)
    files = StoreFiles(root)
    # its coverage(): the type and _source of every order counted row by row in Python
    counts: dict[tuple[Any, Any], int] = {}
    kinds = files.read(["type", "_source"])
    for key in zip(
        kinds.column("type").to_pylist(), kinds.column("_source").to_pylist(), strict=True
    ):
        counts[key] = counts.get(key, 0) + 1
    ts = pa.timestamp("ms", tz="UTC")
    expr, months = None, None
    if since is not None and until is not None:
        expr = (ds.field("createdAt") >= pa.scalar(since, ts)) & (
            ds.field("createdAt") < pa.scalar(until, ts)
        )
        months = [m for m in files.months() if month_of(since) <= m <= month_of(until)]
    table = files.read(["id", "_source", "body"], months=months, filter=expr)
    frames = build_frames(table.column("body").to_pylist(), profile=store.profile)
    sources = dict(
        zip(table.column("id").to_pylist(), table.column("_source").to_pylist(), strict=True)
    )
    orders = frames.orders
    orders.insert(list(orders.columns).index("id") + 1, "_source", orders["id"].map(sources))
    return frames


def read(root: str, how: str, since: int, until: int) -> Any:
    from toolkit.store import OrderStore

    store = OrderStore(root)
    if how == "idle":  # the floor: Python, pandas, pyarrow and the toolkit imported
        import toolkit.frames._frames  # noqa: F401

        return None
    if how == "before full":
        return old_frames(root)
    if how == "before week":
        return old_frames(root, since, until)
    if how == "after full":
        return store.frames()
    if how == "after week":
        return store.frames(since=since, until=until)
    if how == "after week updatedAt":
        return store.frames(since=since, until=until, on="updatedAt")
    if how == "after week BTC 3 cols":
        return store.frames(
            since=since, until=until, symbols="BTC/BRL", columns=["symbol", "price", "fee.cost"]
        )
    raise ValueError(how)


def child(root: str, how: str, since: int, until: int, out: Any) -> None:
    started = time.perf_counter()
    frames = read(root, how, since, until)
    seconds = time.perf_counter() - started
    rows = 0 if frames is None else len(frames.orders)
    out.send((seconds, peak_rss_mib(), rows))


def measure(root: str, how: str, since: int, until: int) -> tuple[float, float, int]:
    ctx = mp.get_context("spawn")
    parent, end = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=child, args=(root, how, since, until, end))
    proc.start()
    end.close()
    got: tuple[float, float, int] = parent.recv()
    proc.join()
    return got


def sync_cost(rounds: int) -> tuple[float, float]:
    """Median seconds to write 5,000 new orders (one part file) with and without their
    typed tables."""
    from toolkit.profile import DEFAULT_PROFILE
    from toolkit.store._files import StoreFiles
    from toolkit.store._writer import Writer

    rng = random.Random(1)
    bodies = [_dumps(closed_order(rng, i)).encode() for i in range(5_000)]
    timings: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for tables in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                files = StoreFiles(tmp)
                writer = Writer(files, DEFAULT_PROFILE, 10_000, {})
                if not tables:
                    no_refresh: Callable[..., bool] = lambda *a, **k: True  # noqa: E731
                    writer.tables.refresh = no_refresh  # type: ignore[method-assign]
                pending: dict[str, list[dict[str, Any]]] = {}
                for i, body in enumerate(bodies):
                    month, row = writer.row(f"#{i}", body, "ids", 0)
                    pending.setdefault(month, []).append(row)
                started = time.perf_counter()
                writer._write(pending)
                timings[tables].append(time.perf_counter() - started)
    return statistics.median(timings[False]), statistics.median(timings[True])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--root", help="a store built by an earlier run (else a temp folder)")
    args = parser.parse_args()
    holder = None
    if args.root is None:
        holder = tempfile.TemporaryDirectory(prefix="bench-store-frames-")
        root = holder.name
    else:
        root = args.root
    if not list(Path(root).glob("month=*/part-*.parquet")):
        started = time.perf_counter()
        build(root, args.orders)
        print(f"store of {args.orders:,} orders built in {time.perf_counter() - started:.0f} s")
    # a week in the middle of the orders (one a minute)
    since = T0_MS + (args.orders // 2) * 60_000
    until = since + WEEK_MS
    cases = [
        "idle",
        "before full",
        "after full",
        "before week",
        "after week",
        "after week updatedAt",
        "after week BTC 3 cols",
    ]
    results: dict[str, list[tuple[float, float, int]]] = {c: [] for c in cases}
    for r in range(args.rounds):
        for case in cases:  # interleaved: a busy moment hits both sides alike
            results[case].append(measure(root, case, since, until))
            seconds, mib, rows = results[case][-1]
            print(f"  round {r + 1} {case}: {seconds:.2f} s, {mib:,.0f} MiB, {rows:,} orders")
    print(f"\nstore.frames() on {args.orders:,} orders, median of {args.rounds} rounds")
    print(f"{'read':<24} {'orders':>10} {'seconds':>9} {'peak RSS MiB':>13}")
    median: dict[str, tuple[float, float]] = {}
    for case in cases:
        seconds = statistics.median(x[0] for x in results[case])
        mib = statistics.median(x[1] for x in results[case])
        median[case] = (seconds, mib)
        rows = results[case][-1][2]
        print(f"{case:<24} {rows:>10,} {seconds:>9.2f} {mib:>13,.0f}")
    for what in ("full", "week"):
        (bs, bm), (as_, am) = median[f"before {what}"], median[f"after {what}"]
        floor = median["idle"][1]
        print(
            f"{what}: before / after time {bs / as_:.1f}x, peak RSS {bm / am:.1f}x "
            f"(above the idle floor {(bm - floor) / max(1.0, am - floor):.1f}x)"
        )
    without, with_tables = sync_cost(args.rounds)
    print(
        f"a sync writing 5,000 new orders: {without:.2f} s without the typed tables, "
        f"{with_tables:.2f} s with them ({with_tables / without:.1f}x)"
    )
    if holder is not None:
        holder.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
