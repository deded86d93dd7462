"""Benchmark of the order store: first sync vs a full ``load_orders()``, a second sync after
1 % changed and 1 % added vs a full reload (the new market orders' ids given by hand; and
again with a ``Recorder`` of the account running while the orders change, the sync reading
its recording), ``load_orders(since=last week)`` vs paging the whole listing, the adaptive
limiter under a 100 req/s rate limit, peak memory of a sync.

Run: ``.venv/bin/python bench/bench_store.py [--orders 100000] [--rounds 3]``. The
simulator (``--latency-ms`` 50) runs in a child process; the first sync and the full load
each run in a fresh child process so their peak RSS is their own. Every figure is a
median over ``--rounds`` rounds (the two 100k-order baselines: ``--full-rounds``, 1 by
default) and every ratio is against a baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import resource
import shutil
import statistics
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

DAY_S = 86_400.0


def serve(conn: Connection, history: int, latency_ms: float) -> None:
    from toolkit.sim import Simulator

    with Simulator(seed=7, engine=False, history_orders=history, latency_ms=latency_ms) as sim:
        conn.send(sim.base_url)
        conn.recv()  # until the parent says stop


def client_for(base_url: str, concurrency: int) -> Any:
    from toolkit.client._client import Client

    return Client(
        base_url,
        api_key="demo",
        api_secret="demo-secret",
        profile_id="P1",
        concurrency=concurrency,
        page_size=100,
    )


def market_ids(base_url: str) -> list[str]:
    from toolkit.sim import SimControl

    control = SimControl(base_url)
    try:
        return [i for i in control.order_ids() if i.startswith("m-")]
    finally:
        control.close()


def child_first_sync(base_url: str, root: str, concurrency: int, out: Connection) -> None:
    """A first sync of an empty store (market ids as a recording would give them)."""
    from toolkit.store import OrderStore

    ids = market_ids(base_url)
    with client_for(base_url, concurrency) as client:
        client.token()
        started = time.perf_counter()
        result = OrderStore(root).sync(client, ids=ids)
        seconds = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.send({"seconds": seconds, "fetched": result.fetched, "rss_mib": rss, "pages": result.pages})


def child_full_load(base_url: str, concurrency: int, out: Connection) -> None:
    """What a reload without a store costs: every limit order of the listing plus every
    market order by id, all fetched again."""
    ids = market_ids(base_url)
    with client_for(base_url, concurrency) as client:
        client.token()
        started = time.perf_counter()
        limit = client.load_orders(progress=False)
        market = client.load_orders(ids=ids, progress=False)
        seconds = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.send(
        {
            "seconds": seconds,
            "fetched": len(limit) + len(market),
            "rss_mib": rss,
            "pages": limit.attrs["pages"],
        }
    )


def in_child(target: Any, *args: Any) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=target, args=(*args, child))
    proc.start()
    result: dict[str, Any] = parent.recv()
    proc.join()
    return result


async def make_changes(base_url: str, client: Any, store: Any, share: float) -> dict[str, Any]:
    """``share`` of the orders changed (OPEN limit orders expired through the control API)
    and ``share`` added (half limit orders created through the client, half market
    orders, whose ids are returned as a recording would give them)."""
    from toolkit.sim import SimControl

    total = len(store)
    n = max(1, int(total * share))
    orders = store.frames(types="limit").orders
    open_ids = list(orders.loc[orders["status"] == "OPEN", "id"])[:n]
    control = SimControl(base_url)
    try:
        for oid in open_ids:
            control.advance(oid, "EXPIRED")
        new_market = [
            control.market_order(symbol="BTC/BRL", side="buy", amount="0.001")["id"]
            for _ in range(n // 2)
        ]
    finally:
        control.close()
    gate = asyncio.Semaphore(16)

    async def create(i: int) -> None:
        async with gate:
            await client.acreate_limit_order("ETH/BRL", "buy", f"{1000 + i}.00", amount="0.01")

    await asyncio.gather(*(create(i) for i in range(n - n // 2)))
    return {"changed": len(open_ids), "added": n, "market_ids": new_market}


def fetch_counter() -> tuple[list[int], Any]:
    count = [0]

    async def hook(request: Any) -> None:
        if request.url.path == "/orders/fetchOrder":
            count[0] += 1

    return count, hook


def table(rows: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    lines = [f"| {'measure'.ljust(width)} | value |", f"|{'-' * (width + 2)}|-------|"]
    lines += [f"| {k.ljust(width)} | {v} |" for k, v in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--full-rounds", type=int, default=1)
    parser.add_argument("--rate-limit", type=float, default=100.0)
    parser.add_argument("--rate-orders", type=int, default=3000)
    args = parser.parse_args()

    from toolkit.client._client import Client
    from toolkit.sim import SimControl
    from toolkit.store import OrderStore

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=serve, args=(child, args.orders, args.latency_ms), daemon=True)
    t0 = time.perf_counter()
    proc.start()
    base_url = parent.recv()
    print(f"simulator with {args.orders:,} orders ready in {time.perf_counter() - t0:.1f}s")
    tmp = Path(tempfile.mkdtemp(prefix="bench_store_"))
    rows: list[tuple[str, str]] = []
    try:
        # -- 1. first sync vs a full load, each in a fresh process -------------------------
        firsts, fulls = [], []
        for r in range(args.full_rounds):
            firsts.append(
                in_child(child_first_sync, base_url, str(tmp / f"s{r}"), args.concurrency)
            )
            print(f"first sync: {firsts[-1]}", flush=True)
            fulls.append(in_child(child_full_load, base_url, args.concurrency))
            print(f"full load: {fulls[-1]}", flush=True)
        first_s = statistics.median(f["seconds"] for f in firsts)
        full_s = statistics.median(f["seconds"] for f in fulls)
        store = OrderStore(tmp / "s0")

        # -- 2. second sync after share changed + share added, vs the full reload ---------
        count, hook = fetch_counter()
        client = Client(
            base_url,
            api_key="demo",
            api_secret="demo-secret",
            profile_id="P1",
            concurrency=args.concurrency,
            page_size=100,
            event_hooks={"request": [hook]},
        )
        seconds, calls, expected, stats = [], [], [], []
        with client:
            for _ in range(args.rounds):
                held = store.frames().orders
                active = ~held["status"].isin(_final())
                # re-read by id: still-active orders the listing does not show (market)
                active_before = int((active & (held["type"] != "limit")).sum())
                change = client._run(make_changes(base_url, client, store, 0.01))
                count[0] = 0
                started = time.perf_counter()
                result = store.sync(client, ids=change["market_ids"])
                seconds.append(time.perf_counter() - started)
                calls.append(count[0])
                expected.append(active_before + change["changed"] + change["added"])
                stats.append(result)
                print(f"second sync: {result.summary()}", flush=True)
            resync_s = statistics.median(seconds)

            # -- 2b. the same with a recorder of the account running during the changes ---
            rec_seconds, rec_calls, rec_stats = [], [], []
            for r in range(args.rounds):
                root = tmp / f"rec{r}"
                recorder = client._run(_start_recorder(client, root))
                change = client._run(make_changes(base_url, client, store, 0.01))
                # every notification of the changes recorded: EXPIRED, the new limit
                # orders' OPEN, the market orders' pending, executed and closed
                expected_messages = change["changed"] + 3 * len(change["market_ids"])
                expected_messages += change["added"] - len(change["market_ids"])
                client._run(_stop_recorder(recorder, expected_messages))
                count[0] = 0
                started = time.perf_counter()
                result = store.sync(client, recordings=[root])
                rec_seconds.append(time.perf_counter() - started)
                rec_calls.append(count[0])
                rec_stats.append(result)
                print(f"second sync, recorded: {result.summary()}", flush=True)
            rec_resync_s = statistics.median(rec_seconds)

            # -- 3. load_orders(since=last week) vs paging the whole listing -------------
            since = time.time() - 7 * DAY_S
            early, whole = [], []
            for _ in range(args.rounds):
                started = time.perf_counter()
                part = client.load_orders(since=since, progress=False)
                early.append((time.perf_counter() - started, part.attrs["pages"], len(part)))
                started = time.perf_counter()
                # the loader before this issue: every page read, since= filtered client-side
                old = client._run(_load_whole(client, since))
                whole.append((time.perf_counter() - started, old.attrs["pages"], len(old)))
        early_s = statistics.median(e[0] for e in early)
        whole_s = statistics.median(w[0] for w in whole)

        # -- 4. under a rate limit -------------------------------------------------------
        control = SimControl(base_url)
        control.set_knobs(rate_limit_per_s=args.rate_limit)
        ids = market_ids(base_url)[: args.rate_orders]
        rates, shares, peaks = [], [], []
        try:
            for _ in range(args.rounds):
                with client_for(base_url, 64) as limited:
                    limited.token()
                    time.sleep(1.5)  # let the service's bucket refill between rounds
                    sent_before = limited.rest.sent
                    started = time.perf_counter()
                    frames = limited.load_orders(ids=ids, progress=False)
                    elapsed = time.perf_counter() - started
                    sent = limited.rest.sent - sent_before
                rates.append(len(frames) / elapsed)
                shares.append(frames.attrs["rate_limited"] / sent)
                peaks.append(frames.attrs["concurrency_peak"])
        finally:
            control.set_knobs(rate_limit_per_s=None)
            control.close()
    finally:
        parent.send("stop")
        proc.join(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)

    median_calls = statistics.median(calls)
    rows += [
        ("orders in the simulator (A1)", f"{args.orders:,} at {args.latency_ms:g} ms latency"),
        ("first sync (empty store)", f"{first_s:.1f} s, {firsts[0]['fetched']:,} fetched"),
        ("full load_orders() + ids (baseline)", f"{full_s:.1f} s, {fulls[0]['fetched']:,} fetched"),
        ("first sync / full load", f"{first_s / full_s:.2f}x the time"),
        (
            "peak RSS: first sync / full load",
            f"{firsts[0]['rss_mib']:.0f} / {fulls[0]['rss_mib']:.0f} MiB",
        ),
        ("second sync (1 % changed, 1 % added)", f"{resync_s:.2f} s (median of {args.rounds})"),
        ("speed-up vs full reload", f"{full_s / resync_s:.1f}x (target >= 50x)"),
        (
            "fetchOrder calls of the second sync",
            f"{median_calls:,.0f} (changed + added + still-active market orders = "
            f"{statistics.median(expected):,.0f})",
        ),
        (
            "still-active limit orders confirmed by the listing",
            f"{statistics.median(s.reconciled for s in stats):,.0f} (not fetched)",
        ),
        (
            "bound at equal concurrency (full-load fetches / these)",
            f"{fulls[0]['fetched'] / median_calls:.0f}x",
        ),
        ("listing pages, second sync", f"{statistics.median(s.pages for s in stats):.0f}"),
        (
            "second sync, a recorder running during the changes",
            f"{rec_resync_s:.2f} s (median of {args.rounds}) = {full_s / rec_resync_s:.1f}x "
            "a full reload (target >= 50x)",
        ),
        (
            "  fetchOrder calls / states taken from the recording",
            f"{statistics.median(rec_calls):,.0f} / "
            f"{statistics.median(s.from_recordings for s in rec_stats):,.0f}",
        ),
        (
            "load_orders(since=last week)",
            f"{early_s:.1f} s, {statistics.median(e[1] for e in early):.0f} pages, "
            f"{early[0][2]:,} orders",
        ),
        (
            "same, paging the whole listing (before)",
            f"{whole_s:.1f} s, {statistics.median(w[1] for w in whole):.0f} pages, "
            f"{whole[0][2]:,} orders",
        ),
        ("since= speed-up", f"{whole_s / early_s:.1f}x"),
        (
            f"rate limit {args.rate_limit:g} req/s: achieved",
            f"{statistics.median(rates):.1f} orders/s = "
            f"{statistics.median(rates) / args.rate_limit:.0%} of the limit (target >= 90 %)",
        ),
        ("429 share of requests", f"{statistics.median(shares):.1%} (target < 5 %)"),
        ("limiter peak (max 64)", f"{statistics.median(peaks):.0f}"),
    ]
    print(table(rows))
    return 0


async def _start_recorder(client: Any, root: Path) -> Any:
    from toolkit.recording import Recorder

    recorder = Recorder(client, root, channels=["watchOrders"])
    recorder.start()
    await recorder.wait_subscribed(timeout=60)
    return recorder


async def _stop_recorder(recorder: Any, messages: int, timeout: float = 120.0) -> None:
    """Stop once ``messages`` notifications are recorded (or after ``timeout``: the
    summary then shows what was fetched instead)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while recorder.stats.messages < messages and loop.time() < deadline:
        await asyncio.sleep(0.05)
    await recorder.stop()


def _final() -> frozenset[str]:
    from toolkit.store._files import FINAL_STATUSES

    return FINAL_STATUSES


async def _load_whole(client: Any, since: float) -> Any:
    from toolkit.client._loaders import aload_orders

    # an overlap wider than the history: the stop never comes, as before this issue
    return await aload_orders(client, since=since, progress=False, overlap_s=3650 * DAY_S)


if __name__ == "__main__":
    raise SystemExit(main())
