"""Benchmark of a service that stops answering: the time from the fault to the one error
that ends a load (or a store sync), as a ratio to the client's timeout (target: about 3x).

The fault is the simulator's black hole (``silent_after_requests``: the server answers N
requests, then takes every request and never answers), in the middle of
``load_orders(ids=...)`` and of ``OrderStore.sync``; and a closed loopback port (refused),
timed from the first attempt. The fault moment of a black hole is the last answer the
client received. Several rounds each; the median is what counts.

Run: ``.venv/bin/python bench/bench_faults.py [--rounds 5] [--timeout 1.0]``
(``--baseline`` adds one round of the load with the breaker off, capped at 120 s).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def table(rows: list[tuple[str, ...]]) -> str:
    head = ("scenario", "rounds", "median s", "x timeout", "max s")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"  # noqa: E731
    return "\n".join(
        [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows]
    )


class LastAnswer:
    """A response hook keeping the moment of the last answer (the fault's moment)."""

    def __init__(self) -> None:
        self.at = time.perf_counter()

    async def __call__(self, response: Any) -> None:
        self.at = time.perf_counter()


def black_hole(sim: Any, run: Callable[[Any], None], timeout: float, answered: int) -> float:
    """Seconds from the last answer to the error of ``run(client)``."""
    from toolkit.errors import TransportError

    last = LastAnswer()
    with sim.client(timeout=timeout, event_hooks={"response": [last]}) as client:
        client.signin()
        sim.control.set_knobs(silent_after_requests=answered)
        try:
            run(client)
        except TransportError:
            return time.perf_counter() - last.at
        finally:
            sim.control.set_knobs(silent=False)
    raise RuntimeError("the run ended without an error")


def refused(timeout: float) -> float:
    from toolkit.client import Client
    from toolkit.errors import TransportError

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ids = [f"o-{i}" for i in range(1000)]
    with Client(base_url=f"http://127.0.0.1:{port}", timeout=timeout) as client:
        started = time.perf_counter()
        try:
            client.load_orders(ids=ids, progress=False)
        except TransportError:
            return time.perf_counter() - started
    raise RuntimeError("a load from a closed port did not fail")


def row(name: str, seconds: list[float], timeout: float) -> tuple[str, ...]:
    median = statistics.median(seconds)
    return (
        name,
        str(len(seconds)),
        f"{median:.2f}",
        f"{median / timeout:.2f}",
        f"{max(seconds):.2f}",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--orders", type=int, default=400)
    parser.add_argument("--answered", type=int, default=100, help="answers before the fault")
    parser.add_argument("--baseline", action="store_true", help="one load with the breaker off")
    args = parser.parse_args()

    from toolkit.sim import Simulator
    from toolkit.store import OrderStore

    rows: list[tuple[str, ...]] = []
    with Simulator(seed=7, engine=False, history_orders=args.orders) as sim:
        ids = sim.control.order_ids()

        def load(client: Any) -> None:
            client.load_orders(ids=ids, progress=False)

        loads = [black_hole(sim, load, args.timeout, args.answered) for _ in range(args.rounds)]
        rows.append(row("black hole mid load_orders", loads, args.timeout))

        syncs = []
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as folder:
                store = OrderStore(Path(folder) / "store")

                def sync(client: Any, store: Any = store) -> None:
                    store.sync(client, ids=ids, listing=False)

                syncs.append(black_hole(sim, sync, args.timeout, args.answered))
        rows.append(row("black hole mid store sync", syncs, args.timeout))

        if args.baseline:
            from toolkit.errors import TransportError

            last = LastAnswer()
            with sim.client(
                timeout=args.timeout, breaker_after_s=0, event_hooks={"response": [last]}
            ) as client:
                client.signin()
                sim.control.set_knobs(silent_after_requests=args.answered)
                try:
                    client.load_orders(ids=ids, progress=False)
                except TransportError:
                    rows.append(
                        row("same load, breaker off", [time.perf_counter() - last.at], args.timeout)
                    )
                finally:
                    sim.control.set_knobs(silent=False)

    rows.append(
        row(
            "closed port (refused)",
            [refused(args.timeout) for _ in range(args.rounds)],
            args.timeout,
        )
    )
    print(f"fault to error, timeout={args.timeout:g}s, breaker_after_s default (2 x timeout)")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
