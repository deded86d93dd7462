"""``Recorder.wait_subscribed``: from the moment it returns, what the service publishes
is recorded (the simulator on loopback), and a run that ends first raises its error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from toolkit.recording._read import read_recording
from toolkit.recording._recorder import Recorder
from toolkit.sim import Simulator


def test_an_order_placed_once_subscribed_is_recorded(fresh_sim: Simulator, tmp_path: Path) -> None:
    async def main(client: object) -> str:
        rec = Recorder(client, tmp_path, channels=["watchOrders"])
        rec.start()
        await rec.wait_subscribed(timeout=20)
        order = fresh_sim.control.market_order(symbol="BTC/BRL", side="buy", amount="0.001")
        # its three notifications (pending, executed, closed)
        while rec.stats.messages < 3:
            await asyncio.sleep(0.02)
        await rec.stop()
        return str(order["id"])

    with fresh_sim.client() as client:
        oid = client._run(main(client))
    assert oid in set(read_recording(tmp_path, "watchorders")["order_id"])


def test_a_run_that_ends_first_raises_its_error(tmp_path: Path) -> None:
    """A service that cannot be reached: the wait ends with the run's error, not a hang."""

    async def main() -> None:
        with Simulator() as sim:
            client = sim.client()
            rec = Recorder(
                client,
                tmp_path,
                channels=["watchOrders"],
                reconnect=False,
                stream_options={"ws_url": "ws://127.0.0.1:9"},  # a closed port on loopback
            )
            rec.start()
            with pytest.raises(Exception) as info:
                await rec.wait_subscribed(timeout=20)
            assert not isinstance(info.value, TimeoutError)
            client.close()

    asyncio.run(main())


def test_a_wait_that_times_out_says_so(tmp_path: Path) -> None:
    async def main() -> None:
        rec = Recorder(object(), tmp_path, channels=["watchOrders"])
        with pytest.raises(TimeoutError, match=r"not confirmed within 0\.01 s"):
            await rec.wait_subscribed(timeout=0.01)

    asyncio.run(main())
