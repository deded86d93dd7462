"""The source adapters: iterables, async iterables, pacing, and what is refused."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolkit.widgets._sources import aiter_events, describe_source, is_client


async def collect(source: object, **kw: Any) -> list[Any]:
    return [e async for e in aiter_events(source, (), **kw)]


def test_sync_and_async_iterables_in_order(ev: Any) -> None:
    events = [ev.ticker("BTC/BRL", float(i)) for i in range(600)]

    async def agen() -> AsyncIterator[Any]:
        for e in events:
            yield e

    assert asyncio.run(collect(events)) == events
    assert asyncio.run(collect(iter(events))) == events
    assert asyncio.run(collect(agen())) == events


def test_a_long_sync_replay_gives_the_loop_turns(ev: Any) -> None:
    events = [ev.ticker("BTC/BRL", float(i)) for i in range(2_000)]
    seen_by_other_task: list[int] = []

    async def main() -> None:
        consumed = 0

        async def other() -> None:
            while True:
                seen_by_other_task.append(consumed)
                await asyncio.sleep(0)

        task = asyncio.ensure_future(other())
        async for _ in aiter_events(events, ()):
            consumed += 1
        task.cancel()

    asyncio.run(main())
    # the other task ran while the 2,000 events were being consumed, not only after
    assert any(0 < n < 2_000 for n in seen_by_other_task)


def test_speed_paces_by_received_time(ev: Any) -> None:
    base = ev.ticker("BTC/BRL", 1.0)
    events = [
        type(base)(**{**{f: getattr(base, f) for f in base.__slots__}, "received_at_ns": t})
        for t in (0, 200_000_000, 400_000_000)  # 0.4 s of recording
    ]
    started = time.monotonic()
    out = asyncio.run(collect(events, speed=4.0))  # replayed in ~0.1 s
    elapsed = time.monotonic() - started
    assert out == events
    assert 0.09 <= elapsed < 2.0
    with pytest.raises(ValueError, match="speed"):
        asyncio.run(collect(events, speed=0))


def test_refuses_what_is_not_a_source() -> None:
    with pytest.raises(TypeError, match="needs a client"):
        asyncio.run(collect(42))


def test_describe_source() -> None:
    class FakeClient:
        def stream(self) -> None: ...
        async def afetch_order(self, order_id: str) -> None: ...

    assert is_client(FakeClient()) and describe_source(FakeClient()) == "live"
    assert describe_source("data/recordings") == "replay"
    assert describe_source([]) == "replay"
