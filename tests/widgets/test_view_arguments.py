"""Bad constructor arguments of the live views (0, negative, NaN, infinity, a wrong type, an
unknown filter, a symbol not written BASE/QUOTE) are ``tk.InvalidRequest`` naming the
argument, raised before any widget is made or any task started."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from toolkit.errors import InvalidRequest, ToolkitError
from toolkit.widgets import OrderStatusView, TickerView

NAN, INF = math.nan, math.inf

#: (keyword arguments, the name the error must say), for both views
COMMON = [
    ({"max_hz": 0}, "max_hz"),
    ({"max_hz": -5}, "max_hz"),
    ({"max_hz": NAN}, "max_hz"),
    ({"max_hz": INF}, "max_hz"),
    ({"max_hz": "10"}, "max_hz"),
    ({"max_hz": True}, "max_hz"),
    ({"speed": 0}, "speed"),
    ({"speed": -1.0}, "speed"),
    ({"speed": NAN}, "speed"),
    ({"speed": INF}, "speed"),
    ({"speed": "2"}, "speed"),
    ({"clock": 1000.0}, "clock"),
    ({"autostart": "no"}, "autostart"),
]
ORDER_VIEW = [
    *COMMON,
    ({"status": "BOGUS"}, "status"),
    ({"status": None}, "status"),
    ({"max_rows": 0}, "max_rows"),
    ({"max_rows": -3}, "max_rows"),
    ({"max_rows": 2.5}, "max_rows"),
    ({"max_rows": NAN}, "max_rows"),
    ({"max_rows": "20"}, "max_rows"),
    ({"history_limit": -1}, "history_limit"),
    ({"history_limit": NAN}, "history_limit"),
    ({"history_limit": None}, "history_limit"),
]
TICKER_VIEW = [
    *COMMON,
    ({"symbols": []}, "symbols"),
    ({"symbols": ["BTC/BRL", 5]}, "symbols"),
    ({"symbols": ["BTCBRL"]}, "symbols"),
    ({"symbols": [""]}, "symbols"),
    ({"symbols": 5}, "symbols"),
    ({"spark_len": 0}, "spark_len"),
    ({"spark_len": -1}, "spark_len"),
    ({"spark_len": NAN}, "spark_len"),
    ({"only_priority": "yes"}, "only_priority"),
]


def _ids(cases: list[tuple[dict[str, Any], str]]) -> list[str]:
    return [",".join(f"{k}={v!r}" for k, v in kwargs.items()) for kwargs, _ in cases]


def refused(make: Any, kwargs: dict[str, Any], name: str, widget_count: Any) -> InvalidRequest:
    """Build the view inside a running loop (where it would start itself) and check that
    it is refused with nothing made or started."""

    async def build() -> InvalidRequest:
        widgets_before, tasks_before = widget_count(), asyncio.all_tasks()
        with pytest.raises(InvalidRequest, match=name) as caught:
            make([], **kwargs)
        assert widget_count() == widgets_before
        assert asyncio.all_tasks() == tasks_before
        return caught.value

    error = asyncio.run(build())
    assert isinstance(error, ToolkitError) and isinstance(error, ValueError)
    return error


@pytest.mark.parametrize(("kwargs", "name"), ORDER_VIEW, ids=_ids(ORDER_VIEW))
def test_order_view_refuses_bad_arguments(kwargs: dict[str, Any], name: str, ev: Any) -> None:
    refused(OrderStatusView, kwargs, name, ev.widget_count)


@pytest.mark.parametrize(("kwargs", "name"), TICKER_VIEW, ids=_ids(TICKER_VIEW))
def test_ticker_view_refuses_bad_arguments(kwargs: dict[str, Any], name: str, ev: Any) -> None:
    refused(TickerView, kwargs, name, ev.widget_count)


def test_the_unknown_status_filter_is_named_with_the_known_ones(ev: Any) -> None:
    error = refused(OrderStatusView, {"status": "BOGUS"}, "status", ev.widget_count)
    assert "'BOGUS'" in str(error) and "ACTIVE" in str(error)


def test_good_edge_values_are_taken(clock: Any) -> None:
    # any case of a filter; no finished order kept; an int rate; one pair as a string
    orders = OrderStatusView([], status="active", history_limit=0, max_hz=1, autostart=False)
    assert orders.filter.value == "ACTIVE"
    prices = TickerView([], symbols=" btc/brl ", clock=clock, spark_len=1, autostart=False)
    assert list(prices.rows) == ["BTC/BRL"]
    prices = TickerView([], symbols=("eth/brl", "ETH/BRL"), speed=0.5, autostart=False)
    assert list(prices.rows) == ["ETH/BRL"]
