"""A live recording from the simulator serving profiles/alt.toml, with a client of the same
profile: the extracted columns come through the alt payload mapping, watchTickers reads
back one row per pair, and the order book's dates (bodies stamped in seconds) are true."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from toolkit.profile import load_profile
from toolkit.recording._read import read_recording, recording_profile
from toolkit.recording._recorder import Recorder
from toolkit.recording._replay import replay
from toolkit.sim import Simulator
from toolkit.stream._events import RawEvent, TickerEvent
from toolkit.stream._orderbook import OrderBook

ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")

pytestmark = pytest.mark.skipif(
    "profile" not in inspect.signature(Simulator).parameters,
    reason="this toolkit.sim.Simulator cannot serve another profile yet",
)


@pytest.fixture(scope="module")
def alt_sim() -> Iterator[Simulator]:
    with Simulator(
        seed=11,
        profile=ALT,
        engine=True,
        tick_interval_s=0.02,
        order_interval_s=0.1,
        history_orders=20,
    ) as sim:
        yield sim


def test_live_recording_under_alt_has_the_right_columns(alt_sim: Simulator, tmp_path: Path) -> None:
    client = alt_sim.client()
    assert client.profile is ALT
    rec = Recorder(
        client,
        tmp_path,
        channels=["watchOrders", "watchTicker:BTC/BRL", "watchTickers", "watchBalance"],
        flush_interval=0.1,
    )
    assert rec.profile is ALT

    async def main() -> None:
        rec.start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while loop.time() < deadline:
            await asyncio.sleep(0.1)
            if rec.stats.messages >= 60:
                break
        await rec.stop()

    asyncio.run(main())
    client.close()
    assert recording_profile(tmp_path).payloads == ALT.payloads

    ticks = read_recording(tmp_path, "watchticker")
    assert len(ticks) > 0
    assert (ticks["symbol"] == "BTC/BRL").all()
    for column in ("bid", "ask", "last", "updated_at"):
        assert ticks[column].notna().all(), column
    assert (ticks["updated_at"].dt.year >= 2025).all()

    pairs = read_recording(tmp_path, "watchtickers")
    assert len(pairs) > 0 and pairs["symbol"].notna().all() and pairs["bid"].notna().all()
    assert pairs["symbol"].nunique() > 1  # one row per pair
    assert (pairs["updated_at"].dt.year >= 2025).all()

    orders = read_recording(tmp_path, "watchorders")
    assert len(orders) > 0
    assert orders["order_id"].notna().all() and orders["status"].notna().all()
    assert (orders["updated_at"].dt.year >= 2025).all()

    events = [e for e in replay(tmp_path) if e.channel != "_session"]
    # every payload matched the alt mapping: no event came out as an error
    assert not [e for e in events if isinstance(e, RawEvent) and e.error]
    assert any(isinstance(e, TickerEvent) and e.symbol == "BTC/BRL" for e in events)


def test_order_book_under_alt_shows_true_dates(alt_sim: Simulator) -> None:
    client = alt_sim.client()

    async def main() -> pd.DataFrame:
        book = OrderBook(client)
        assert book.profile is ALT
        task = asyncio.ensure_future(book.run())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while loop.time() < deadline and (book.reconciles < 1 or len(book) < 3):
            if task.done():
                # run() only ends by itself on an error: that error is the failure
                raise AssertionError(f"OrderBook.run() ended early: {task.exception()!r}")
            await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return book.to_frame()

    frame = asyncio.run(main())
    client.close()
    assert len(frame) >= 1
    assert frame["updatedAt"].notna().all()
    assert (frame["updatedAt"].dt.year >= 2025).all()  # bodies in seconds: never 1970
    assert frame["status"].str.isupper().all()
