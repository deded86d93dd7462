"""A service that stops answering, against the real simulator: a black hole in the middle
of a load (the ``silent_after_requests`` knob: the server takes the requests and never
answers) and a closed port on loopback (refused). The load stops with one TransportError
saying the service is not answering, after a bounded number of attempts (the breaker:
``breaker_after_s``), and keeps what it fetched on the error."""

from __future__ import annotations

import re
import socket

import pytest

from toolkit.client import Client
from toolkit.errors import TransportError
from toolkit.sim import Simulator

CONCURRENCY = 8
ANSWERED = 30


def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_black_hole_mid_load_stops_with_one_error_keeping_the_orders(
    fresh_sim: Simulator,
) -> None:
    ids = fresh_sim.control.order_ids()  # market and limit orders: 120
    with fresh_sim.client(timeout=1.0, max_retries=5, concurrency=CONCURRENCY) as client:
        client.signin()
        sent_before = client.rest.sent
        fresh_sim.control.set_knobs(silent_after_requests=ANSWERED)
        try:
            with pytest.raises(TransportError, match="is not answering") as info:
                client.load_orders(ids=ids, progress=False)
            after_fault = client.rest.sent - sent_before - ANSWERED
        finally:
            fresh_sim.control.set_knobs(silent=False)
    err = info.value
    assert "breaker_after_s=2" in str(err) and "load_orders stopped with" in str(err)
    fetched = int(re.search(r"stopped with (\d+) order", str(err)).group(1))  # type: ignore[union-attr]
    assert 0 < fetched < len(ids)
    assert err.partial is not None and len(err.partial.orders) == fetched  # type: ignore[attr-defined]
    # each request in flight tried about twice, not each remaining order 6 times
    assert after_fault <= 3 * CONCURRENCY, after_fault
    assert len(ids) - fetched > 3 * CONCURRENCY


def test_a_closed_port_stops_with_one_error_not_every_orders_retries() -> None:
    ids = [f"o-{i}" for i in range(100)]
    with Client(
        base_url=f"http://127.0.0.1:{closed_port()}",
        concurrency=4,
        max_retries=1000,
        backoff_base_s=0.01,
        backoff_max_s=0.02,
        breaker_after_s=0.3,
    ) as client:
        with pytest.raises(TransportError, match="is not answering") as info:
            client.load_orders(ids=ids, progress=False)
        assert "0 order(s) fetched" in str(info.value)
        assert "ConnectError" in str(info.value)
        # every order would be tried 1001 times without the breaker; refused calls stop
        # within the window, and every call after it is refused before it is sent
        sent = client.rest.sent
        with pytest.raises(TransportError, match="is not answering"):
            client.fetch_order("o-1")
        assert client.rest.sent == sent
