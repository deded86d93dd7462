"""Connections do not leak: close()/aclose() close every pool the client opened, on any
loop; a client used through several asyncio.run() calls leaves nothing open; the sync
close() inside a running loop (a Jupyter cell) closes that loop's pool too. Counted from
the kernel's socket table (/proc), against the simulator on loopback."""

from __future__ import annotations

import asyncio
import gc
import os
from pathlib import Path

import pytest

from toolkit.client import _transport
from toolkit.sim import Simulator

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc")


def established_to(port: int) -> int:
    """ESTABLISHED TCP connections of this process whose remote port is ``port``."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            remote_port = int(cols[2].rsplit(":", 1)[1], 16)
            if remote_port == port and cols[3] == "01" and cols[9] in inodes:
                count += 1
    return count


def _port(sim: Simulator) -> int:
    return int(sim.base_url.rsplit(":", 1)[1].split("/")[0])


def test_six_asyncio_runs_then_close_leave_no_connection(fresh_sim: Simulator) -> None:
    port = _port(fresh_sim)
    ids = fresh_sim.control.order_ids()[:8]
    before = established_to(port)  # the simulator's control client keeps its own
    client = fresh_sim.client(concurrency=4)

    async def burst() -> None:
        await asyncio.gather(*(client.afetch_order(i) for i in ids))

    for _ in range(6):
        asyncio.run(burst())
    client.close()
    gc.collect()
    assert established_to(port) == before


def test_sync_close_inside_a_running_loop_closes_that_loops_pool(fresh_sim: Simulator) -> None:
    port = _port(fresh_sim)
    ids = fresh_sim.control.order_ids()[:8]

    before = established_to(port)

    async def cell() -> tuple[int, int]:
        client = fresh_sim.client(concurrency=4)
        client.fetch_order(ids[0])  # a sync call: the private loop's pool
        await asyncio.gather(*(client.afetch_order(i) for i in ids))  # this loop's pool
        opened = established_to(port)
        client.close()  # sync, inside the running loop, as in a Jupyter cell
        await asyncio.gather(*list(_transport._PENDING_CLOSES))  # the cell yields
        return opened, established_to(port)

    opened, left = asyncio.run(cell())
    assert opened >= before + 2 and left == before


def test_aclose_closes_the_pool_of_the_sync_calls_too(fresh_sim: Simulator) -> None:
    port = _port(fresh_sim)
    oid = fresh_sim.control.order_ids()[0]

    before = established_to(port)

    async def main() -> int:
        client = fresh_sim.client()
        client.fetch_order(oid)  # private loop thread
        await client.afetch_order(oid)  # this loop
        await client.aclose()
        return established_to(port)

    assert asyncio.run(main()) == before
