"""Every error of a call about one order names that order in ``exc.order_id``
(docs/src/guide/errors.md): fetchOrder and its twins, cancel (404, another profile, the
limit routes inactive, a refused id), and a network failure on fetchOrder."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import pytest

from toolkit.client._client import Client
from toolkit.errors import (
    InvalidRequest,
    OrderNotFound,
    RouteNotActive,
    ToolkitError,
    TransportError,
)
from toolkit.sim import Simulator

UNKNOWN_MARKET = "m-000001-zzzz"
UNKNOWN_LIMIT = "l-000001-zzzz"


def _raised(call: Callable[[], Any]) -> ToolkitError:
    with pytest.raises(ToolkitError) as info:
        call()
    return info.value


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.fetch_order(UNKNOWN_MARKET),
        lambda c: c.fetch_order_raw(UNKNOWN_MARKET),
        lambda c: asyncio.run(c.afetch_order(UNKNOWN_MARKET)),
    ],
    ids=["fetch_order", "fetch_order_raw", "afetch_order"],
)
def test_a_fetch_order_404_names_the_order(sim: Simulator, call: Callable[[Client], Any]) -> None:
    with sim.client() as client:
        exc = _raised(lambda: call(client))
    assert isinstance(exc, OrderNotFound) and exc.status == 404
    assert exc.order_id == UNKNOWN_MARKET


def test_a_cancel_404_names_the_order(sim: Simulator) -> None:
    with sim.client() as client:
        unknown = _raised(lambda: client.cancel_limit_order(UNKNOWN_LIMIT))
        mine = sim.control.order_ids(type="limit")[0]
        elsewhere = _raised(lambda: client.cancel_limit_order(mine, profile_id="P2"))
        refused = _raised(lambda: client.cancel_limit_order("a/b"))
    assert isinstance(unknown, OrderNotFound) and unknown.order_id == UNKNOWN_LIMIT
    assert isinstance(elsewhere, OrderNotFound) and elsewhere.order_id == mine
    assert isinstance(refused, InvalidRequest) and refused.order_id == "a/b"


def test_a_cancel_on_inactive_limit_routes_names_the_order(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(limit_routes_active=False)
    with fresh_sim.client() as client:
        exc = _raised(lambda: client.cancel_limit_order(UNKNOWN_LIMIT))
    assert isinstance(exc, RouteNotActive) and exc.order_id == UNKNOWN_LIMIT


def test_a_network_failure_on_fetch_order_names_the_order() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Client(f"http://127.0.0.1:{port}", max_retries=0, timeout=2.0) as client:
        exc = _raised(lambda: client.fetch_order(UNKNOWN_MARKET))
    assert isinstance(exc, TransportError) and exc.order_id == UNKNOWN_MARKET


def test_a_call_about_no_single_order_names_none(sim: Simulator) -> None:
    with sim.client() as client:
        exc = _raised(lambda: client.list_limit_orders(status="BOGUS"))
    assert exc.order_id is None
