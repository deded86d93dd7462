"""``toolkit.sim.Simulator``: a real server on a free loopback port, ready when ``start()``
returns, stopped cleanly and idempotently, with addresses, control helper and client."""

from __future__ import annotations

import socket

import httpx
import pytest

import toolkit
import toolkit.sim
from toolkit.sim import Simulator


def test_public_names() -> None:
    assert toolkit.sim.__all__ == ["Knobs", "SimControl", "SimControlError", "Simulator"]
    assert toolkit.Simulator is Simulator


def test_start_serves_at_once_and_stop_is_idempotent() -> None:
    sim = Simulator(seed=3, engine=False, history_orders=10)
    assert "not started" in repr(sim)
    with pytest.raises(RuntimeError):
        _ = sim.port
    sim.start()
    assert sim.start() is sim  # a second start is a no-op
    assert sim.base_url == f"http://127.0.0.1:{sim.port}"
    assert sim.ws_url == f"ws://127.0.0.1:{sim.port}"
    assert sim.running
    assert httpx.get(f"{sim.base_url}/_sim/knobs").status_code == 200
    port = sim.port
    sim.stop()
    sim.stop()
    assert not sim.running
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/_sim/knobs")


def test_context_manager_and_two_at_once() -> None:
    with (
        Simulator(seed=1, engine=False, history_orders=10) as a,
        Simulator(seed=2, engine=False, history_orders=10) as b,
    ):
        assert a.port != b.port
        assert a.control.knobs()["seed"] == 1
        assert b.control.knobs()["seed"] == 2
        assert set(a.control.order_ids()) != set(b.control.order_ids())


def test_knobs_are_checked_and_applied() -> None:
    with pytest.raises(ValueError, match="bogus"):
        Simulator(bogus=1)
    with Simulator(engine=False, history_orders=10, latency_ms=3) as sim:
        assert sim.control.knobs()["latency_ms"] == 3


def test_same_seed_same_ids() -> None:
    with Simulator(seed=9, engine=False, history_orders=40) as a:
        first = a.control.order_ids()
    with Simulator(seed=9, engine=False, history_orders=40) as b:
        second = b.control.order_ids()
    assert first == second and len(first) == 40


def test_busy_port_raises() -> None:
    with Simulator(engine=False, history_orders=5) as sim:
        busy = Simulator(engine=False, history_orders=5, port=sim.port)
        with pytest.raises(OSError):
            busy.start()
        busy.stop()


def test_fixed_port() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with Simulator(engine=False, history_orders=5, port=port) as sim:
        assert sim.port == port
        assert httpx.get(f"http://127.0.0.1:{port}/_sim/knobs").status_code == 200


def test_client_talks_to_the_simulator(sim: Simulator) -> None:
    client = sim.client()
    try:
        assert client.settings.base_url.rstrip("/") == sim.base_url
        order_id = sim.control.order_ids()[0]
        assert client.fetch_order(order_id)["id"] == order_id
        assert "demo-secret" not in repr(client)
    finally:
        client.close()
