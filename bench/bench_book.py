"""Benchmark of the order book's reconcile after a drop: a book follows the simulator while
its connection is dropped ``--drops`` times during order activity, with ``--open`` open
limit orders that do not change, on a machine kept busy by ``--busy`` CPU-bound processes
the bench starts (``python -c "while True: pass"``).

Run: ``.venv/bin/python bench/bench_book.py [--drops 50] [--open 300] [--latency-ms 20]``.
For each strategy - the listing confirming limit orders by status and ``updatedAt`` (now)
and every order that is not final fetched by id (before: ``OrderBook._trust_listing =
False``) - a simulator runs in a child process (same seed, same activity), and the bench
prints the time from each drop to the book reconciled (median, p90, max), the reconcile
pass alone, and the fetchOrder calls per reconcile; then the ratio of the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import random
import statistics
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from typing import Any


def serve(conn: Connection, latency_ms: float) -> None:
    from toolkit.sim import Simulator

    with Simulator(seed=7, engine=False, history_orders=200, latency_ms=latency_ms) as sim:
        conn.send((sim.base_url, sim.ws_url))
        conn.recv()  # until the parent says stop


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


async def follow(base_url: str, ws_url: str, args: argparse.Namespace, trust: bool) -> dict:
    from toolkit.client._client import Client
    from toolkit.sim import SimControl
    from toolkit.stream._channels import Backoff
    from toolkit.stream._orderbook import OrderBook

    rng = random.Random(25)
    client = Client(
        base_url, ws_url=ws_url, api_key="demo", api_secret="demo-secret", profile_id="P1"
    )
    control = SimControl(base_url)
    gate = asyncio.Semaphore(16)

    async def create(symbol: str, price: str) -> str:
        async with gate:
            order = await client.acreate_limit_order(symbol, "buy", price, amount="0.001")
        return str(order["id"])

    def ctl(fn: Any, *a: Any, **kw: Any) -> Any:
        return asyncio.to_thread(fn, *a, **kw)

    moving: list[str] = []
    pending: list[str] = []

    async def activity() -> None:
        """A limit order created, one moved along its life, a market order placed (and
        the one left pending before closed)."""
        moving.append(await create(rng.choice(["BTC/BRL", "ETH/BRL"]), "10"))
        if len(moving) > 1:
            oid = moving.pop(rng.randrange(len(moving)))
            step = rng.choice(["TRIGGERED", "EXPIRED", "cancel"])
            if step == "cancel":
                await client.acancel_limit_order(oid)
            else:
                await ctl(control.advance, oid, step)
        if pending:
            await ctl(control.advance, pending.pop(), "CLOSED")
        outcome = rng.choice(["closed", "pending"])
        order = await ctl(
            control.market_order, symbol="BTC/BRL", side="buy", quoteAmount="100", outcome=outcome
        )
        if outcome == "pending":
            pending.append(order["id"])

    try:
        await asyncio.gather(*(create("SOL/BRL", "1") for _ in range(args.open)))
        book = OrderBook(client, reconcile_interval=None)
        book._trust_listing = trust
        waits: list[float] = []
        passes: list[float] = []
        fetched: list[int] = []
        loop = asyncio.get_running_loop()
        async with client.stream(
            backoff=Backoff(initial=0.0, maximum=0.0), ping_interval=None
        ) as session:
            runner = asyncio.create_task(book.run(session))

            async def reconciled_past(n: int) -> None:
                deadline = loop.time() + 120
                while book.reconciles <= n:
                    if runner.done():
                        runner.result()
                    if loop.time() > deadline:
                        raise RuntimeError(f"no reconcile after drop {len(waits)} in 120 s")
                    await asyncio.sleep(0.002)

            await reconciled_past(0)
            for _ in range(args.drops):
                await activity()
                before = book.reconciles
                started = time.perf_counter()
                await ctl(control.drop_connections)
                await activity()  # during the gap (or just after it)
                await reconciled_past(before)
                waits.append(time.perf_counter() - started)
                assert book.last_reconcile is not None
                passes.append(book.last_reconcile.seconds)
                fetched.append(book.last_reconcile.fetched)
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
        open_now = sum(1 for s in book.orders.values() if not s.final)
    finally:
        control.close()
        await client.aclose()
    return {"waits": waits, "passes": passes, "fetched": fetched, "open": open_now}


def run_strategy(args: argparse.Namespace, trust: bool) -> dict:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=serve, args=(child, args.latency_ms), daemon=True)
    proc.start()
    try:
        base_url, ws_url = parent.recv()
        return asyncio.run(follow(base_url, ws_url, args, trust))
    finally:
        parent.send("stop")
        proc.join(10)


def line(name: str, r: dict) -> str:
    w, p, f = r["waits"], r["passes"], r["fetched"]
    return (
        f"{name:>8}: drop -> reconciled median {statistics.median(w):.3f}s "
        f"p90 {p90(w):.3f}s max {max(w):.3f}s | pass median {statistics.median(p):.3f}s | "
        f"fetchOrder per reconcile median {statistics.median(f):.0f} p90 {p90(f):.0f} "
        f"max {max(f)} (book: {r['open']} open orders at the end)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drops", type=int, default=50)
    parser.add_argument("--open", type=int, default=300, help="open limit orders that stay")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound processes started")
    parser.add_argument("--only", choices=["new", "old"], default=None)
    args = parser.parse_args()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        print(
            f"{args.drops} drops during activity, {args.open} open limit orders, "
            f"{args.latency_ms:g} ms latency, {args.busy} busy processes",
            flush=True,
        )
        results = {}
        for name, trust in (("new", True), ("old", False)):
            if args.only in (None, name):
                results[name] = run_strategy(args, trust)
                print(line(name, results[name]), flush=True)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    if len(results) == 2:
        new, old = results["new"], results["old"]
        waits = statistics.median(old["waits"]) / statistics.median(new["waits"])
        worst = max(old["waits"]) / max(new["waits"])
        calls = statistics.median(old["fetched"]) / max(1, statistics.median(new["fetched"]))
        print(
            f"old / new: drop -> reconciled median {waits:.1f}x, max {worst:.1f}x; "
            f"fetchOrder per reconcile median {calls:.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
