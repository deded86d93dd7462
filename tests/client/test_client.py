"""Tests of the Client facade: construction, from_env, life-cycle states, every async
method's sync twin, create/fetch, and stream()."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from toolkit.client._client import Client, ClientState
from toolkit.client._settings import Environment
from toolkit.errors import InvalidRequest, OrderNotFound
from toolkit.sim import Simulator


def test_every_async_method_has_a_sync_twin() -> None:
    names = [n for n, _ in inspect.getmembers(Client, inspect.iscoroutinefunction)]
    public = [n for n in names if n.startswith("a") and not n.startswith("_")]
    assert {"atoken", "afetch_order", "acancel_limit_order", "aload_orders"} <= set(public)
    for name in public:
        if name in ("aclose",):
            assert hasattr(Client, "close")
            continue
        assert hasattr(Client, name[1:]), name
    assert hasattr(Client, "aiter_limit_orders") and hasattr(Client, "iter_limit_orders")


def test_from_env(sim: Simulator) -> None:
    env = {
        "TOOLKIT_ENV": "local",
        "TOOLKIT_BASE_URL": sim.base_url,
        "TOOLKIT_API_KEY": "demo",
        "TOOLKIT_API_SECRET": "demo-secret",
        "TOOLKIT_PROFILE_ID": "P1",
    }
    with Client.from_env(env, concurrency=4) as client:
        assert client.settings.environment is Environment.LOCAL
        assert client.settings.ws_url == sim.ws_url
        assert client.settings.concurrency == 4
        order_id = sim.control.order_ids()[0]
        assert client.fetch_order(order_id)["id"] == order_id


def test_constructor_checks() -> None:
    with pytest.raises(InvalidRequest, match="base_url is required"):
        Client()
    with pytest.raises(InvalidRequest, match="unknown setting"):
        Client("http://127.0.0.1:1", page_sise=3)
    client = Client("http://127.0.0.1:1", page_size=7, cancel_profile_in="query")
    assert client.settings.page_size == 7 and client.settings.cancel_profile_in == "query"


def test_life_cycle_states(sim: Simulator) -> None:
    client = sim.client()
    assert client.state is ClientState.UNOPENED
    with client:
        assert client.state is ClientState.OPEN
    assert client.state is ClientState.CLOSED
    with pytest.raises(RuntimeError, match="closed"), client:
        pass

    async def main() -> ClientState:
        async with sim.client() as other:
            await other.atoken()
            assert other.state is ClientState.OPEN
        return other.state

    assert asyncio.run(main()) is ClientState.CLOSED


def test_create_then_fetch(fresh_sim: Simulator) -> None:
    with fresh_sim.client() as client:
        created = client.create_limit_order(
            "ETH/BRL", "sell", "99999.5", quote_amount="100", client_order_id="mine-1"
        )
        assert created["type"] == "limit" and created["status"] == "OPEN"
        fetched = client.fetch_order(created["id"])
        assert fetched["id"] == created["id"] and fetched["symbol"] == "ETH/BRL"
        with pytest.raises(OrderNotFound):
            client.fetch_order("l-000000-none")


def test_other_accounts_orders_are_not_found(sim: Simulator) -> None:
    a2 = sim.control.order_ids(account="A2")[0]
    with sim.client() as client, pytest.raises(OrderNotFound):
        client.fetch_order(a2)


def test_stream_returns_a_session_bound_to_the_client(sim: Simulator) -> None:
    from toolkit.stream._session import StreamSession

    with sim.client() as client:
        session = client.stream(reconnect=False)
        assert isinstance(session, StreamSession)


def test_order_id_cannot_change_the_path(fresh_sim: Simulator) -> None:
    # percent-encoding keeps an id with odd but allowed characters inside its segment
    paths: list[str] = []

    async def on_request(request):  # type: ignore[no-untyped-def]
        paths.append(request.url.raw_path.decode())

    with (
        fresh_sim.client(event_hooks={"request": [on_request]}) as client,
        pytest.raises(OrderNotFound),
    ):
        client.cancel_limit_order("a b;c=d")
    assert paths[1].startswith("/orders/limit/orders/a%20b%3Bc%3Dd/cancel")


def test_client_imports_neither_the_simulator_nor_pandas() -> None:
    import subprocess
    import sys

    code = (
        "import sys, toolkit.client._client, toolkit.client._loaders, toolkit.cli._load;"
        "bad = [m for m in ('toolkit.sim', 'pandas', 'pyarrow', 'tqdm') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
