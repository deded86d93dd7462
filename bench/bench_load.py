"""Benchmark of the loader: N orders fetched against the simulator with 50 ms latency,
compared with the ideal rate (concurrency / latency) and with a sequential loop.

Run: ``.venv/bin/python bench/bench_load.py [--orders N] [--concurrency C]`` (default
24: a speedup of 20x over a sequential loop is impossible below ~20 requests in flight).
The simulator runs in a child process so its CPU does not share our interpreter's GIL.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from multiprocessing.connection import Connection
from typing import Any


def serve(conn: Connection, history: int, latency_ms: float) -> None:
    from toolkit.sim import Simulator

    with Simulator(seed=7, engine=False, history_orders=history, latency_ms=latency_ms) as sim:
        conn.send(sim.base_url)
        conn.recv()  # until the parent says stop


def table(rows: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    lines = [f"| {'measure'.ljust(width)} | value |", f"|{'-' * (width + 2)}|-------|"]
    lines += [f"| {k.ljust(width)} | {v} |" for k, v in rows]
    return "\n".join(lines)


def sequential_rate(client: Any, ids: list[str]) -> float:
    started = time.perf_counter()
    for order_id in ids:
        client.fetch_order_raw(order_id)
    return len(ids) / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=10_000)
    # 20x a sequential loop needs more than 20 slots (each slot is at best one sequential
    # loop), so the bench runs 24 where the client's default is 16
    parser.add_argument("--concurrency", type=int, default=24)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--sequential-sample", type=int, default=200)
    args = parser.parse_args()

    from toolkit.client._client import Client
    from toolkit.sim import SimControl

    parent, child = mp.Pipe()
    ctx = mp.get_context("spawn")
    proc = ctx.Process(target=serve, args=(child, args.orders, args.latency_ms), daemon=True)
    t0 = time.perf_counter()
    proc.start()
    base_url = parent.recv()
    print(f"simulator with {args.orders} orders ready in {time.perf_counter() - t0:.1f}s")
    try:
        control = SimControl(base_url)
        ids = control.order_ids()[: args.orders]
        control.close()
        client = Client(
            base_url, api_key="demo", api_secret="demo-secret", concurrency=args.concurrency
        )
        with client:
            client.token()
            seq = sequential_rate(client, ids[: args.sequential_sample])
            started = time.perf_counter()
            frames = client.load_orders(ids=ids, progress=False)
            total_s = time.perf_counter() - started
            listed_started = time.perf_counter()
            listed = client.load_orders(progress=False)
            listed_s = time.perf_counter() - listed_started
    finally:
        parent.send("stop")
        proc.join(timeout=30)

    n = len(frames.orders)
    fetch_s = float(frames.attrs["fetch_seconds"])
    ideal = args.concurrency / (args.latency_ms / 1000.0)
    achieved = n / fetch_s
    end_to_end = n / total_s
    ceiling = args.concurrency / seq / (args.latency_ms / 1000.0)
    rows = [
        ("orders loaded (ids=, fetchOrder each)", f"{n:,}"),
        ("concurrency / latency", f"{args.concurrency} / {args.latency_ms:g} ms"),
        ("ideal rate (concurrency / latency)", f"{ideal:,.0f} orders/s"),
        ("achieved rate (fetch phase)", f"{achieved:,.0f} orders/s"),
        ("achieved / ideal", f"{achieved / ideal:.0%}"),
        ("end-to-end rate (incl. frames build)", f"{end_to_end:,.0f} orders/s"),
        ("frames build", f"{float(frames.attrs['build_seconds']):.2f} s"),
        (f"sequential loop ({args.sequential_sample} orders)", f"{seq:,.1f} orders/s"),
        ("speedup vs sequential", f"{achieved / seq:.1f}x"),
        # at best every one of `concurrency` slots does what the sequential loop does
        ("speedup ceiling (concurrency x seq. time / latency)", f"{ceiling:.1f}x"),
        (
            "listing + fetchOrder (limit orders)",
            f"{len(listed.orders):,} in {listed_s:.1f} s = {len(listed.orders) / listed_s:,.0f}/s",
        ),
    ]
    print(table(rows))
    print(f">= 90% of ideal: {'met' if achieved / ideal >= 0.9 else 'NOT met'}")
    print(f">= 20x sequential: {'met' if achieved / seq >= 20 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
