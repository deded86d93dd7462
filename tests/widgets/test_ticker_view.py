"""TickerView: throttled repaints on a fake clock, final values, bounded memory, a constant
number of widgets, connection states, and a run from an iterable source."""

from __future__ import annotations

import asyncio
import gc
import math
import tracemalloc
from typing import Any

import pytest

from toolkit.widgets import TickerView
from toolkit.widgets._ticker_view import sparkline

SYMBOLS = ("BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL")


def flood(
    view: TickerView, clock: Any, ev: Any, *, seconds: float, rate: int = 5_000, start_tick: int = 0
) -> tuple[list[float], dict[str, float]]:
    """Feed ``rate`` ticks per simulated second round-robin over SYMBOLS, asking for a
    repaint after each; return the times of the repaints and the last price per pair."""
    painted: list[float] = []
    last: dict[str, float] = {}
    base = clock.now
    for n, i in enumerate(range(start_tick, start_tick + int(seconds * rate)), 1):
        clock.now = base + n / rate  # not +=, so float drift cannot squeeze in a repaint
        symbol = SYMBOLS[i % len(SYMBOLS)]
        price = 100.0 * (1 + SYMBOLS.index(symbol)) + math.sin(i / 50.0)
        last[symbol] = price
        view.apply(ev.ticker(symbol, price, ts=1_790_000_000_000 + i))
        if view.repaint():
            painted.append(clock.now)
    return painted, last


def test_flood_repaints_at_most_max_hz_and_ends_on_the_final_values(clock: Any, ev: Any) -> None:
    view = TickerView([], max_hz=10, clock=clock, autostart=False)
    painted, last = flood(view, clock, ev, seconds=3.0)
    start = painted[0]
    for second in range(3):
        in_window = [t for t in painted if start + second <= t < start + second + 1]
        assert len(in_window) <= 10, f"second {second}: {len(in_window)} repaints"
    assert 25 <= len(painted) <= 31  # the throttle does let ~10/s through
    assert view.repaints == len(painted)

    clock.advance(1.0)
    assert view.repaint()  # the tail of the burst is painted once the slot opens
    for symbol, price in last.items():
        row = view.rows[symbol]
        assert row.last == price
        assert row.bid == price - 1.0 and row.ask == price + 1.0
        shown = view._row_widgets[symbol].value
        assert f"{price:.4f}" in shown and symbol in shown


def test_widget_count_is_constant_and_memory_bounded(clock: Any, ev: Any) -> None:
    view = TickerView([], max_hz=10, clock=clock, autostart=False, spark_len=16)
    flood(view, clock, ev, seconds=0.2)  # warm-up: every pair seen once
    widgets_before = ev.widget_count()
    gc.collect()
    tracemalloc.start()
    try:
        flood(view, clock, ev, seconds=2.0, start_tick=1_000)
        gc.collect()
        after_10k, _ = tracemalloc.get_traced_memory()
        flood(view, clock, ev, seconds=6.0, start_tick=20_000)
        gc.collect()
        after_40k, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ev.widget_count() == widgets_before
    assert set(view.rows) == set(SYMBOLS)
    assert all(len(row.spark) <= 16 for row in view.rows.values())
    # 30,000 more ticks must not grow what the view holds (allow allocator noise)
    assert after_40k - after_10k < 64 * 1024, (after_10k, after_40k)


def test_only_dirty_rows_are_pushed(clock: Any, ev: Any) -> None:
    view = TickerView([], max_hz=10, clock=clock, autostart=False)
    for symbol in SYMBOLS:
        view.apply(ev.ticker(symbol, 10.0))
    view.repaint(force=True)
    pushes: dict[str, int] = dict.fromkeys(SYMBOLS, 0)
    for symbol, w in view._row_widgets.items():
        w.observe(lambda _c, s=symbol: pushes.__setitem__(s, pushes[s] + 1), names="value")
    clock.advance(1.0)
    view.apply(ev.ticker("ETH/BRL", 11.0))
    assert view.repaint()
    assert pushes == {"BTC/BRL": 0, "ETH/BRL": 1, "SOL/BRL": 0, "USDT/BRL": 0}
    assert "tk-up" in view._row_widgets["ETH/BRL"].value
    clock.advance(1.0)
    view.apply(ev.ticker("ETH/BRL", 9.0))
    view.repaint()
    assert "tk-down" in view._row_widgets["ETH/BRL"].value
    assert not view.repaint()  # nothing dirty, nothing pushed
    assert pushes["ETH/BRL"] == 2


def test_symbols_filter_rows_created_up_front(clock: Any, ev: Any) -> None:
    view = TickerView([], symbols=["BTC/BRL", "SOL/BRL"], clock=clock, autostart=False)
    assert view.subscriptions == [
        ("watchTicker", {"symbol": "BTC/BRL"}),
        ("watchTicker", {"symbol": "SOL/BRL"}),
    ]
    count = ev.widget_count()
    assert len(view._body.children) == 2
    assert not view.apply(ev.ticker("ETH/BRL", 5.0))
    assert view.apply(ev.ticker("SOL/BRL", 5.0))
    assert set(view.rows) == {"BTC/BRL", "SOL/BRL"}
    assert ev.widget_count() == count


def test_all_pairs_use_watch_tickers_and_change_since_start(clock: Any, ev: Any) -> None:
    view = TickerView([], clock=clock, autostart=False)
    assert view.subscriptions == [("watchTickers", {})]
    assert TickerView([], only_priority=True, autostart=False).subscriptions == [
        ("watchTickers", {"onlyPriority": True})
    ]
    view.apply(ev.tickers(ev.ticker("BTC/BRL", 200.0), ev.ticker("ETH/BRL", 50.0)))
    view.apply(ev.tickers(ev.ticker("BTC/BRL", 210.0), ev.ticker("ETH/BRL", 45.0)))
    view.repaint()
    assert view.rows["BTC/BRL"].change == pytest.approx(0.05)
    assert view.rows["ETH/BRL"].change == pytest.approx(-0.10)
    assert "+5.00%" in view._row_widgets["BTC/BRL"].value
    assert "-10.00%" in view._row_widgets["ETH/BRL"].value
    assert list(view.rows["BTC/BRL"].spark) == [200.0, 210.0]


def test_connection_states(clock: Any, ev: Any) -> None:
    view = TickerView([], clock=clock, autostart=False)
    view.apply(ev.session("connected"))
    assert view.state == "connected"
    view.apply(ev.session("dropped", "connection lost"))
    assert view.state == "reconnecting"
    view.apply(ev.session("resubscribed"))
    view.apply(ev.session("gap", gap=(1_000_000_000, 3_500_000_000)))
    assert view.state == "gap reconciled"
    assert view.state_detail == "gap of 2.5 s"
    assert "gap reconciled" in view._status.value


def test_sparkline() -> None:
    assert sparkline([]) == ""
    assert sparkline([1.0, 1.0]) == "▄▄"
    assert sparkline([0.0, 7.0, 3.5]) == "▁█▅"


def test_runs_as_a_task_stop_freezes_and_close_removes_its_widgets(ev: Any) -> None:
    base = ev.widget_count()
    events = [ev.ticker(SYMBOLS[i % 4], 100.0 + i) for i in range(2_000)]

    async def main() -> TickerView:
        view = TickerView(events, max_hz=10)  # autostarts on the running loop
        assert view.task is not None
        await asyncio.wait_for(view.task, 10)
        return view

    view = asyncio.run(main())
    assert view.state == "replay finished"
    assert view.rows["USDT/BRL"].last == 100.0 + 1999
    assert "2,099.00" in view._row_widgets["USDT/BRL"].value  # the final tick was painted
    assert ev.widget_count() > base
    view.stop()
    assert view.state == "stopped" and "stopped" in view._status.value
    assert "2,099.00" in view._row_widgets["USDT/BRL"].value  # the last state stays
    assert ev.widget_count() > base
    view.close()
    assert ev.widget_count() == base


def test_stop_cancels_a_running_task(ev: Any) -> None:
    async def endless() -> Any:
        i = 0
        while True:
            i += 1
            yield ev.ticker("BTC/BRL", float(i))
            await asyncio.sleep(0)

    async def main() -> None:
        view = TickerView(endless(), max_hz=50)
        task = view.start()
        deadline = asyncio.get_running_loop().time() + 5
        while view.repaints < 3 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        assert view.repaints >= 3
        await view.astop()
        assert task.cancelled()

    asyncio.run(main())


def test_a_failing_source_shows_in_the_widget_and_is_logged_once(
    ev: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken() -> Any:
        yield ev.ticker("BTC/BRL", 1.0)
        raise RuntimeError("feed broke")

    unhandled: list[dict[str, Any]] = []

    async def main() -> TickerView:
        asyncio.get_running_loop().set_exception_handler(lambda _l, c: unhandled.append(c))
        view = TickerView(broken(), max_hz=10)
        assert view.task is not None
        await asyncio.wait({view.task}, timeout=10)
        assert view.task.done() and view.task.exception() is None
        return view

    with caplog.at_level("ERROR", logger="toolkit.widgets"):
        view = asyncio.run(main())
    gc.collect()
    assert view.state == "error" and "feed broke" in view.state_detail
    assert "feed broke" in view._status.value  # where the analyst looks
    assert [r.getMessage() for r in caplog.records] == [
        "TickerView stopped: RuntimeError: feed broke"
    ]
    assert not unhandled
    view.stop()
