"""Regenerate ``data/sample-recording/``: a short recording of every channel of the local
simulator, with limit orders created, cancelled and triggered, and one forced drop (a gap).

    python bench/make_sample_recording.py [--out data/sample-recording] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

from toolkit.recording._read import read_recording
from toolkit.recording._recorder import Recorder
from toolkit.sim import Simulator
from toolkit.stream._channels import Backoff


async def _activity(sim: Simulator, client: object, seconds: float) -> None:
    """Orders through the toolkit itself, a price move that triggers one, and a drop."""
    from toolkit.client._client import Client

    assert isinstance(client, Client)
    await asyncio.sleep(1.0)
    opened = []
    for i, (side, price) in enumerate([("buy", "100000"), ("sell", "900000"), ("buy", "90000")]):
        order = await client.acreate_limit_order("BTC/BRL", side, price, amount=f"0.00{i + 1}")
        opened.append(order["id"])
    await asyncio.sleep(seconds * 0.2)
    await client.acancel_limit_order(opened[0], reason="sample: changed my mind")
    await asyncio.sleep(seconds * 0.2)
    await asyncio.to_thread(sim.control.drop_connections)  # the recording shows a gap
    await asyncio.sleep(seconds * 0.2)
    # a price through the second order's limit triggers and executes it
    await asyncio.to_thread(sim.control.move_price, "BTC/BRL", "950000")


async def record(out: Path, seconds: float) -> None:
    with Simulator(
        seed=2026, engine=True, tick_interval_s=0.25, order_interval_s=1.5, history_orders=40
    ) as sim:
        client = sim.client()
        rec = Recorder(
            client,
            out,
            flush_interval=0.5,
            rotate_interval=seconds / 2,
            stream_options={"backoff": Backoff(initial=0.05, maximum=0.5)},
        )
        rec.start()
        await _activity(sim, client, seconds)
        remaining = seconds - 1.0 - seconds * 0.6
        await asyncio.sleep(max(1.0, remaining))
        stats = await rec.stop()
        await client.aclose()
    print(stats.line())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("data/sample-recording"))
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args(argv)
    # keep the README beside the data; replace everything else
    if args.out.exists():
        for child in args.out.iterdir():
            if child.name != "README.md":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    asyncio.run(record(args.out, args.seconds))
    # the recorder is done: its (empty) write-ahead folder and lock file are not data
    shutil.rmtree(args.out / "_wal", ignore_errors=True)
    df = read_recording(args.out)
    print(df.groupby("channel").size().to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
