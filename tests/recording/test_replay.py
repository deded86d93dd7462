"""Tests of replay: recorded order, the same typed events as the live stream, pacing on an
injected clock, and an OrderBook rebuilt from a recording equal to the live one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from toolkit.errors import InvalidRequest
from toolkit.recording._recorder import Recorder
from toolkit.recording._replay import replay
from toolkit.recording._rows import row_from_message, session_row
from toolkit.recording._wal import Row
from toolkit.recording._writer import RecordingWriter
from toolkit.sim import Simulator
from toolkit.stream._events import OrderEvent, SessionEvent, TickerEvent, event_from_message
from toolkit.stream._orderbook import OrderBook

S = 10**9
T0 = 1_795_305_590 * S  # ten seconds before a midnight (UTC)


def _tick(t: int, conn: str, seq: int, bid: float = 1.0) -> Row:
    msg = {
        "channel": "watchticker",
        "message": {
            "symbol": "BTC/BRL",
            "bid": str(bid),
            "ask": "2",
            "last": "1.5",
            "timestamp": 9,
        },
    }
    return row_from_message(msg, received_at_ns=t, connection_id=conn, seq=seq)


def _order(t: int, conn: str, seq: int, oid: str, status: str, upd: int) -> Row:
    msg = {"channel": "watchorders", "message": {"id": oid, "status": status, "updatedAt": upd}}
    return row_from_message(msg, received_at_ns=t, connection_id=conn, seq=seq)


def _write(root: Path, rows: list[Row]) -> None:
    with RecordingWriter(root) as writer:
        for row in rows:
            writer.add(row)


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    rows = [
        # written out of order, across two connections and two days
        _order(T0 + 20 * S, "b", 2, "m-1", "closed", 3000),
        _tick(T0 + 1 * S, "a", 2),
        session_row("connected", received_at_ns=T0, connection_id="a", seq=1, detail="hi"),
        _tick(T0 + 3 * S, "b", 1, bid=7.0),
        _tick(T0 + 3 * S, "a", 3, bid=6.0),  # same instant: connection id breaks the tie
        session_row(
            "gap",
            received_at_ns=T0 + 2 * S,
            connection_id="b",
            seq=0,
            gap_start_ns=T0 + S,
            gap_end_ns=T0 + 2 * S,
        ),
        _order(T0 + 12 * S, "b", 1, "m-1", "pending", 1000),
    ]
    _write(tmp_path, rows)
    return tmp_path


def test_replay_yields_typed_events_in_recorded_order(recording: Path) -> None:
    events = list(replay(recording))
    assert [(e.received_at_ns - T0) // S for e in events] == [0, 1, 2, 3, 3, 12, 20]
    assert [(e.connection_id, e.seq) for e in events][3:5] == [("a", 3), ("b", 1)]
    first, tick, gap = events[0], events[1], events[2]
    assert isinstance(first, SessionEvent) and first.kind == "connected" and first.detail == "hi"
    assert first.raw is None and first.channel == "_session"
    assert isinstance(gap, SessionEvent) and gap.kind == "gap"
    assert (gap.gap_start_ns, gap.gap_end_ns) == (T0 + S, T0 + 2 * S)
    assert isinstance(tick, TickerEvent) and tick.bid == 1.0 and tick.symbol == "BTC/BRL"
    # exactly what the live stream builds from the same message
    assert tick.raw is not None
    assert tick == event_from_message(
        tick.raw, received_at_ns=tick.received_at_ns, connection_id="a", seq=2
    )
    orders = [e for e in events if isinstance(e, OrderEvent)]
    assert [(o.order_id, o.status, o.status_raw) for o in orders] == [
        ("m-1", "PENDING", "pending"),
        ("m-1", "CLOSED", "closed"),
    ]


def test_async_replay_equals_sync_replay(recording: Path) -> None:
    async def collect() -> list[object]:
        return [e async for e in replay(recording)]

    assert asyncio.run(collect()) == list(replay(recording))


def test_replay_filters(recording: Path) -> None:
    only_orders = list(replay(recording, channels="watchOrders"))
    assert {type(e) for e in only_orders} == {OrderEvent}
    window = list(replay(recording, start=T0 + S, end=T0 + 4 * S))
    assert [(e.received_at_ns - T0) // S for e in window] == [1, 2, 3, 3]
    with pytest.raises(InvalidRequest, match="no recording at"):
        replay(recording.parent / "nothing-here")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


@pytest.mark.parametrize(("speed", "factor"), [(1.0, 1.0), (4.0, 0.25)])
def test_paced_replay_keeps_the_recorded_spacing(
    recording: Path, speed: float, factor: float
) -> None:
    clock = FakeClock()
    stamps = []
    for event in replay(recording, speed=speed, clock=clock, sleep=clock.sleep):
        stamps.append(clock.now - 100.0)
        assert event is not None
    assert stamps == [x * factor for x in [0, 1, 2, 3, 3, 12, 20]]
    assert clock.sleeps == [x * factor for x in [1, 1, 1, 9, 8]]


def test_paced_async_replay_uses_the_injected_sleep(recording: Path) -> None:
    clock = FakeClock()

    async def run() -> list[float]:
        out = []
        async for _ in replay(recording, speed=2.0, clock=clock, asleep=clock.asleep):
            out.append(clock.now - 100.0)
        return out

    assert asyncio.run(run()) == [0, 0.5, 1, 1.5, 1.5, 6, 10]


def test_slow_consumer_is_not_made_to_wait_again(recording: Path) -> None:
    clock = FakeClock()
    it = iter(replay(recording, speed=1.0, clock=clock, sleep=clock.sleep))
    next(it)
    clock.now += 50  # the consumer took longer than the whole recording
    rest = list(it)
    assert len(rest) == 6 and clock.sleeps == []


def test_speed_must_be_positive(recording: Path) -> None:
    with pytest.raises(ValueError, match="speed"):
        replay(recording, speed=0)


# -------------------------------------------------- replay rebuilds the live order book


async def _until(cond: Callable[[], bool], timeout: float = 120.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


def _snapshot(book: OrderBook) -> dict[str, tuple[object, ...]]:
    return {
        oid: (s.status, s.status_raw, s.updated_at_ms, tuple(t.status for t in s.history))
        for oid, s in book.orders.items()
    }


def test_replay_rebuilds_the_live_order_book(fresh_sim: Simulator, tmp_path: Path) -> None:
    client = fresh_sim.client()
    live = OrderBook()

    async def main() -> None:
        rec = Recorder(client, tmp_path, channels=["watchOrders"], flush_interval=0.1)
        async with client.stream() as session:
            session.add_callback(lambda e: live.apply(e) if isinstance(e, OrderEvent) else None)
            await session.subscribe("watchOrders")
            rec.start()
            await _until(lambda: rec.stats.session_rows >= 2)  # connected + subscribed
            ids = []
            for i, outcome in enumerate(["closed", "rejected", "closed", "pending"]):
                side = "buy" if i % 2 else "sell"
                order = fresh_sim.control.market_order(
                    symbol="BTC/BRL", side=side, amount="0.001", outcome=outcome
                )
                ids.append(order["id"])
            await _until(lambda: all(i in live.orders for i in ids))
            await _until(lambda: live.orders[ids[0]].final and live.orders[ids[2]].final)
            expected = sum(len(s.history) for s in live.orders.values())
            await _until(lambda: rec.stats.messages >= expected)
            await rec.stop()

    asyncio.run(main())
    client.close()

    rebuilt = OrderBook()
    for event in replay(tmp_path):
        if isinstance(event, OrderEvent):
            rebuilt.apply(event)
    assert len(live.orders) == 4
    assert _snapshot(rebuilt) == _snapshot(live)
    assert (
        rebuilt.to_frame()
        .drop(columns=["transitions"], errors="ignore")
        .equals(live.to_frame().drop(columns=["transitions"], errors="ignore"))
    )


def test_the_shipped_sample_recording_reads_and_replays() -> None:
    sample = Path(__file__).resolve().parents[2] / "data" / "sample-recording"
    events = list(replay(sample))
    kinds = {e.kind for e in events if isinstance(e, SessionEvent)}
    assert {"connected", "subscribed", "gap"} <= kinds
    book = OrderBook()
    for event in events:
        if isinstance(event, OrderEvent):
            book.apply(event)
    statuses = {s.status for s in book.orders.values()}
    assert "CANCELLED" in statuses and "CLOSED" in statuses
    assert {type(e) for e in events} >= {TickerEvent, OrderEvent, SessionEvent}
