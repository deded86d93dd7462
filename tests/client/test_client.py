"""Tests of the Client facade: construction, from_env, life-cycle states, every async
method's sync twin, create/fetch, and stream()."""

from __future__ import annotations

import asyncio
import inspect
import pathlib

import pytest

from toolkit.client._client import Client, ClientState
from toolkit.client._settings import DEFAULT_LOCAL_URL, Environment
from toolkit.errors import InvalidRequest, OrderNotFound
from toolkit.profile import DEFAULT_PROFILE, load_profile
from toolkit.sim import Simulator

ALT = pathlib.Path(__file__).resolve().parents[2] / "profiles" / "alt.toml"


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


def test_from_env(sim: Simulator, service_profile_file: pathlib.Path) -> None:
    env = {
        "TOOLKIT_ENV": "local",
        "TOOLKIT_BASE_URL": sim.base_url,
        "TOOLKIT_API_KEY": "demo",
        "TOOLKIT_API_SECRET": "demo-secret",
        "TOOLKIT_PROFILE_ID": "P1",
        "TOOLKIT_PROFILE": str(service_profile_file),
    }
    with Client.from_env(env, concurrency=4) as client:
        assert client.profile == sim.profile
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
    profile = DEFAULT_PROFILE.replace({"rest.cancel_profile_in": "query"})
    client = Client("http://127.0.0.1:1", page_size=7, profile=profile)
    assert client.settings.page_size == 7 and client.profile.rest.cancel_profile_in == "query"
    assert client.profile is client.settings.profile is profile


def test_old_assumption_keywords_name_the_profile_setting() -> None:
    with pytest.raises(InvalidRequest) as info:
        Client("http://127.0.0.1:1", fetch_order_param="id")
    assert str(info.value) == (
        "fetch_order_param is a profile setting now: "
        "profile=DEFAULT_PROFILE.replace({'rest.fetch_order_param': 'id'})"
    )
    with pytest.raises(InvalidRequest, match=r"listing\.page_max"):
        Client.from_env({}, page_size_max=10)
    with pytest.raises(InvalidRequest, match=r"signin\.expiry_field"):
        Client("http://127.0.0.1:1", expires_at_field="exp")
    with pytest.raises(InvalidRequest, match=r"listing\.active_statuses.*\['OPEN'\]"):
        Client("http://127.0.0.1:1", active_statuses=frozenset({"OPEN"}))
    with pytest.raises(InvalidRequest, match=r"rest\.batch_cancel_max"):
        Client("http://127.0.0.1:1").settings.replace(batch_cancel_max=3)


def test_from_env_takes_a_profile_and_keeps_the_local_default(
    tmp_path: pathlib.Path,
) -> None:
    alt = load_profile(ALT)
    local = {"TOOLKIT_ENV": "local"}
    with Client.from_env(local, profile=alt) as client:
        assert client.profile is alt
        assert client.settings.base_url == DEFAULT_LOCAL_URL  # TOOLKIT_ENV=local, no URL
        assert client.settings.page_size == alt.listing.page_default
    with Client.from_env({**local, "TOOLKIT_PROFILE": str(ALT)}) as client:
        assert client.profile == alt
    with Client.from_env(local) as client:
        assert client.profile is DEFAULT_PROFILE and client.settings.page_size == 50
    with pytest.raises(InvalidRequest, match="profile file not found"):
        Client.from_env({**local, "TOOLKIT_PROFILE": str(tmp_path / "missing.toml")})


def test_page_size_follows_the_profile_bounds() -> None:
    alt = load_profile(ALT)  # page 5..40, default 20
    with pytest.raises(InvalidRequest, match=r"page_size must be in 5\.\.40"):
        Client("http://127.0.0.1:1", profile=alt, page_size=50)
    with pytest.raises(InvalidRequest, match=r"page_size must be in 5\.\.40"):
        Client("http://127.0.0.1:1", profile=alt, page_size=4)
    client = Client("http://127.0.0.1:1")
    assert client.settings.page_size == 50
    # a new profile brings its own default page size
    assert client.settings.replace(profile=alt).page_size == 20
    assert client.settings.replace(page_size=9).replace(profile=alt).page_size == 9
    with pytest.raises(InvalidRequest, match=r"limit must be in 5\.\.40"):
        Client("http://127.0.0.1:1", profile=alt).aiter_limit_orders(limit=41)


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
        assert created["type"] == "limit" and created["status"].upper() == "OPEN"
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
    cancel_path = fresh_sim.profile.rest.cancel_path
    assert paths[1].startswith(cancel_path.format(order_id="a%20b%3Bc%3Dd"))


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
