"""Helpers for the live-view tests: a fake clock, synthetic events, and a count of the
ipywidgets alive in the process."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from toolkit.stream._events import OrderEvent, SessionEvent, TickerEvent, TickersEvent

_seq = itertools.count(1)


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def ticker(
    symbol: str, last: float, *, ts: int = 1_790_000_000_000, spread: float = 1.0
) -> TickerEvent:
    return TickerEvent(
        channel="watchticker",
        received_at_ns=ts * 1_000_000,
        connection_id="c1",
        seq=next(_seq),
        raw=None,
        symbol=symbol,
        bid=last - spread,
        ask=last + spread,
        last=last,
        timestamp=ts,
    )


def tickers(*items: TickerEvent) -> TickersEvent:
    return TickersEvent(
        channel="watchtickers",
        received_at_ns=items[0].received_at_ns,
        connection_id="c1",
        seq=next(_seq),
        raw=None,
        tickers=tuple(items),
    )


def session(kind: Any, detail: str = "", gap: tuple[int, int] | None = None) -> SessionEvent:
    return SessionEvent(
        channel="_session",
        received_at_ns=0,
        connection_id="c1",
        seq=next(_seq),
        raw=None,
        kind=kind,
        detail=detail,
        gap_start_ns=gap[0] if gap else None,
        gap_end_ns=gap[1] if gap else None,
    )


def order(
    order_id: str,
    status: str,
    updated_at: int,
    *,
    type_: str = "limit",
    symbol: str = "BTC/BRL",
    reconciled: bool = False,
) -> OrderEvent:
    body = {
        "id": order_id,
        "symbol": symbol,
        "side": "buy",
        "type": type_,
        "status": status,
        "updatedAt": updated_at,
        "createdAt": 1_790_000_000_000,
        "limitPrice": "100.00" if type_ == "limit" else None,
    }
    return OrderEvent(
        channel="watchorders",
        received_at_ns=updated_at * 1_000_000,
        connection_id="c1",
        seq=next(_seq),
        raw=None,
        order_id=order_id,
        status=status.upper(),
        status_raw=status,
        updated_at_ms=updated_at,
        order=body,
        reconciled=reconciled,
    )


def widget_count() -> int:
    """Widgets alive in the process (``Widget.widgets`` without its deprecation warning)."""
    from ipywidgets.widgets import widget

    return len(widget._instances)


class Events:
    """Factories of synthetic events, handed to tests by the ``ev`` fixture (conftest
    modules are not importable by name, fixtures are)."""

    ticker = staticmethod(ticker)
    tickers = staticmethod(tickers)
    session = staticmethod(session)
    order = staticmethod(order)
    widget_count = staticmethod(widget_count)


@pytest.fixture
def ev() -> type[Events]:
    return Events
