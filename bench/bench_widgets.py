"""Benchmark of the live views at 5,000 updates per second: repaints per second (target at
most 10) and memory (target bounded), for TickerView and OrderStatusView.

Two clocks: a fake one (the updates are stamped 1/5,000 s apart on simulated time, so the
throttle is measured exactly, independent of this machine's speed) and the real one (a
producer paces 5,000 updates/s in wall time into a view running as a task on the loop).

    python bench/bench_widgets.py [--seconds 10] [--rate 5000] [--max-hz 10]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from toolkit.stream._events import OrderEvent, TickerEvent
from toolkit.widgets import OrderStatusView, TickerView

_seq = itertools.count()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def ticker_events(pairs: int) -> Iterator[TickerEvent]:
    symbols = [f"C{i:03d}/BRL" for i in range(pairs)]
    for n in itertools.count():
        last = 100.0 + (n % 997) * 0.01
        yield TickerEvent(
            "watchticker",
            n,
            "c1",
            n,
            None,
            symbols[n % pairs],
            last - 0.5,
            last + 0.5,
            last,
            1_790_000_000_000 + n,
        )


def order_events(orders: int) -> Iterator[OrderEvent]:
    statuses = ("OPEN", "TRIGGERED", "PROCESSING", "closed")
    for n in itertools.count():
        oid = f"l-{n % orders:06d}-{n // (orders * len(statuses))}"
        status = statuses[(n // orders) % len(statuses)]
        body = {
            "id": oid,
            "symbol": "BTC/BRL",
            "side": "buy",
            "type": "limit",
            "status": status,
            "updatedAt": n,
            "limitPrice": "100",
        }
        yield OrderEvent("watchorders", n, "c1", n, None, oid, status.upper(), status, n, body)


Case = tuple[str, Callable[[Any], Any], Callable[[], Iterator[Any]]]
CASES: list[Case] = [
    (
        "TickerView, 4 pairs",
        lambda c: TickerView([], clock=c, autostart=False),
        lambda: ticker_events(4),
    ),
    (
        "TickerView, 200 pairs",
        lambda c: TickerView([], clock=c, autostart=False),
        lambda: ticker_events(200),
    ),
    (
        "OrderStatusView, 500 orders",
        lambda c: OrderStatusView([], clock=c, autostart=False, history_limit=1_000),
        lambda: order_events(500),
    ),
]


def fake_clock_run(
    name: str,
    make: Callable[[Any], Any],
    events: Callable[[], Iterator[Any]],
    seconds: float,
    rate: int,
    max_hz: float,
) -> dict[str, Any]:
    clock = FakeClock()
    view = make(clock)
    view._throttle = type(view._throttle)(max_hz, clock)
    paints = _record_paints(view, clock)
    stream = events()
    total = int(seconds * rate)
    half = total // 2
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    mid_mem = 0
    for n in range(1, total + 1):
        clock.now = n / rate
        view.apply(next(stream))
        view.repaint()
        if n == half:
            gc.collect()
            mid_mem = tracemalloc.get_traced_memory()[0]
    wall = time.perf_counter() - started
    gc.collect()
    end_mem, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    worst = _worst_second(paints)
    view.stop()
    return {
        "view": name,
        "clock": "fake",
        "updates": total,
        "seconds": seconds,
        "repaints/s": len(paints) / seconds,
        "worst 1 s": worst,
        "memory growth 2nd half (KiB)": (end_mem - mid_mem) / 1024,
        "peak traced (MiB)": peak / 2**20,
        "updates/s (traced)": total / wall,
    }


def _record_paints(view: Any, clock: Callable[[], float]) -> list[float]:
    """Times of the view's repaints (however they were triggered)."""
    times: list[float] = []
    paint = view._paint

    def recorded() -> None:
        times.append(clock())
        paint()

    view._paint = recorded
    return times


def _worst_second(times: list[float]) -> int:
    """Most repaints in any window of one second (1 µs short, so float noise in the
    stamps cannot count the repaint that opens the next second)."""
    return max((sum(1 for t in times if s <= t < s + 1.0 - 1e-6) for s in times), default=0)


async def _paced(events: Iterator[Any], rate: int, seconds: float) -> AsyncIterator[Any]:
    """``rate`` events per wall second in 10 ms batches, for ``seconds``."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    batch = max(1, rate // 100)
    sent = 0
    while sent < rate * seconds:
        for _ in range(batch):
            yield next(events)
        sent += batch
        wait = start + sent / rate - loop.time()
        await asyncio.sleep(max(0.0, wait))


def real_clock_run(
    name: str, events: Callable[[], Iterator[Any]], seconds: float, rate: int, max_hz: float
) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        source = _paced(events(), rate, seconds)
        view: Any = (
            OrderStatusView(source, max_hz=max_hz, history_limit=1_000)
            if name.startswith("Order")
            else TickerView(source, max_hz=max_hz)
        )
        paints = _record_paints(view, time.monotonic)
        started = time.perf_counter()
        cpu = time.process_time()
        await view.task
        wall = time.perf_counter() - started
        cpu_s = time.process_time() - cpu
        view.stop()
        return {
            "view": name,
            "clock": "real",
            "updates": int(rate * seconds),
            "seconds": wall,
            "repaints/s": len(paints) / wall,
            "worst 1 s": _worst_second(paints),
            "memory growth 2nd half (KiB)": "-",
            "peak traced (MiB)": "-",
            "updates/s (traced)": f"CPU {100 * cpu_s / wall:.0f}%",
        }

    return asyncio.run(main())


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=10.0, help="simulated seconds (fake clock)")
    p.add_argument("--real-seconds", type=float, default=3.0, help="wall seconds (real clock)")
    p.add_argument("--rate", type=int, default=5_000, help="updates per second")
    p.add_argument("--max-hz", type=float, default=10.0)
    args = p.parse_args(argv)
    rows = [fake_clock_run(n, m, e, args.seconds, args.rate, args.max_hz) for n, m, e in CASES]
    rows += [real_clock_run(n, e, args.real_seconds, args.rate, args.max_hz) for n, _m, e in CASES]
    cols = list(rows[0])
    width = {c: max(len(c), *(len(_fmt(r[c])) for r in rows)) for c in cols}
    print(f"live views at {args.rate:,} updates/s, max_hz={args.max_hz:g}")
    print("  ".join(c.ljust(width[c]) for c in cols))
    for r in rows:
        print("  ".join(_fmt(r[c]).ljust(width[c]) for c in cols))
    ok = all(r["worst 1 s"] <= args.max_hz for r in rows) and all(
        r["memory growth 2nd half (KiB)"] == "-" or r["memory growth 2nd half (KiB)"] < 256
        for r in rows
    )
    print("target (<= max_hz repaints/s, flat memory):", "met" if ok else "NOT met")
    return 0 if ok else 1


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


if __name__ == "__main__":
    raise SystemExit(main())
