"""What the live views say when they cannot be trusted, on a fake clock and without a
network (issue #27): prices greyed with their age while offline, a flash that marks a
change and is over before the next tick, "change" that says since when, errors on one
line with the detail on demand, and the stream's and book's warnings on the status line
instead of printed into the cell."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import pytest

from toolkit.widgets import TickerView
from toolkit.widgets._theme import STYLE, status_html
from toolkit.widgets._ticker_view import flash_seconds


def prices(ev: Any, clock: Any) -> TickerView:
    view = TickerView([], symbols=["BTC/BRL", "ETH/BRL"], clock=clock, autostart=False)
    view.apply(ev.ticker("BTC/BRL", 100.0, ts=1_790_000_000_000))
    view.apply(ev.ticker("ETH/BRL", 50.0, ts=1_790_000_000_000))
    view.repaint(force=True)
    return view


def test_offline_prices_are_greyed_with_their_age(ev: Any, clock: Any) -> None:
    view = prices(ev, clock)
    view._set_state("connected")
    clock.advance(12)
    view._set_state("reconnecting", "connection lost")
    view.repaint(force=True)
    row = view._row_widgets["BTC/BRL"].value
    assert "tk-stale" in row and ">12 s old</span>" in row
    assert "last price at 2026-09-21 14:13:20.000 UTC" in row  # the time on hover
    assert ".tk-stale" in STYLE
    clock.advance(60)
    view._on_age_timer()  # what the view's one-second timer does while offline
    view.repaint(force=True)
    assert ">72 s old</span>" in view._row_widgets["BTC/BRL"].value
    view._set_state("connected")
    view.repaint(force=True)
    row = view._row_widgets["BTC/BRL"].value
    assert "tk-stale" not in row and "s old" not in row


def test_a_stopped_view_keeps_its_prices_and_times(ev: Any, clock: Any) -> None:
    """Stopped is no lost connection: the state line says "stopped" and the prices keep
    their times (an age frozen at the stop would read wrong in a saved notebook)."""
    view = prices(ev, clock)
    clock.advance(3)
    view.stop()
    row = view._row_widgets["ETH/BRL"].value
    assert "tk-stale" not in row and "2026-09-21 14:13:20.000" in row


def test_the_flash_marks_a_change_and_ends_before_the_next_tick(ev: Any, clock: Any) -> None:
    view = TickerView([], symbols=["BTC/BRL"], clock=clock, autostart=False)
    view.apply(ev.ticker("BTC/BRL", 100.0))
    view.repaint(force=True)
    clock.advance(0.5)  # the simulator's tick interval
    view.apply(ev.ticker("BTC/BRL", 101.0))
    view.repaint(force=True)
    row = view._row_widgets["BTC/BRL"].value
    flashes = re.findall(r"tk-up' style='animation-duration: ([\d.]+)s'", row)
    assert flashes and all(float(d) < 0.5 for d in flashes)
    clock.advance(0.5)
    view.apply(ev.ticker("BTC/BRL", 101.0))  # a tick without a change
    view.repaint(force=True)
    assert "tk-up" not in view._row_widgets["BTC/BRL"].value
    assert flash_seconds(0.2) == pytest.approx(0.1) and flash_seconds(float("nan")) <= 0.4
    # the flash's colour fades with its tint: no cell stays coloured after it
    assert re.search(r"\.tk-up \{animation: tk-flash-up [\d.]+s ease-out;\}", STYLE)


def test_change_says_since_when(ev: Any, clock: Any) -> None:
    view = prices(ev, clock)
    view.apply(ev.ticker("BTC/BRL", 110.0, ts=1_790_000_001_000))
    view.repaint(force=True)
    caption = view._caption.value
    assert "change: since the first price this view received, 2026-09-21 14:13:20.000" in (caption)
    assert "title='since 100.0000 at 2026-09-21 14:13:20.000 UTC'" in (
        view._row_widgets["BTC/BRL"].value
    )


def test_a_long_error_is_one_line_with_the_detail_on_demand() -> None:
    detail = "TransportError: " + "the service did not answer " * 5
    line = status_html("error", detail)
    assert "<details" in line and "<summary>TransportError: the service" in line
    assert detail in line  # the whole of it, on a click
    assert "<details" not in status_html("reconnecting", "gap of 2.5 s")


class _Source:
    """A source that logs what the order book logs when a re-read fails, then idles."""

    def __init__(self) -> None:
        self.logged = asyncio.Event()

    def __aiter__(self) -> Any:
        return self._events()

    async def _events(self) -> Any:
        logging.getLogger("toolkit.orderbook").warning(
            "reconcile: fetchOrder %s failed: %s", "l-1", "TransportError: timed out"
        )
        self.logged.set()
        await asyncio.Event().wait()
        yield None  # pragma: no cover


def test_warnings_go_to_the_status_line_not_into_the_cell(
    ev: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a notebook without logging set up, Python's last-resort handler prints a
    warning into the cell's output; a running view takes its stream's and book's
    warnings onto its status line instead."""
    printed: list[str] = []

    class LastResort(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            printed.append(record.getMessage())

    monkeypatch.setattr(logging, "lastResort", LastResort(logging.WARNING))
    monkeypatch.setattr(logging.root, "handlers", [])  # pytest's own capture, removed

    async def main() -> TickerView:
        source = _Source()
        view = TickerView(source, autostart=False)
        view.start()
        await asyncio.wait_for(source.logged.wait(), 30)
        await view.astop()
        return view

    view = asyncio.run(main())
    assert printed == []
    assert view.warnings == 1
    assert "reconcile: fetchOrder l-1 failed: TransportError: timed out" in view._status.value
    # once the view has stopped, a warning is the user's logging's again
    logging.getLogger("toolkit.orderbook").warning("after the view")
    assert printed == ["after the view"]


@pytest.mark.parametrize("state", ["connecting", "reconnecting", "error"])
def test_a_lost_connection_is_a_banner_that_says_what_it_means(state: str) -> None:
    """Not a small orange dot: the line is tinted and says the view acts on nothing."""
    line = status_html(state, "gap of 2.5 s")
    assert "tk-offline" in line
    assert "not live" in line and "Cancel disabled" in line
    assert ".tk-status.tk-offline" in STYLE


@pytest.mark.parametrize("state", ["connected", "gap reconciled", "stopped"])
def test_a_live_or_stopped_view_has_no_banner(state: str) -> None:
    line = status_html(state, "")
    assert "tk-offline" not in line and "not live" not in line
