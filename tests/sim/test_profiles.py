"""The simulator under ``profiles/alt.toml``: every point the spec leaves unshown answered as
that profile says (sign-in, identity, routes, list items, page bounds, timestamps, status case,
quotes, refusal, keep-alive, texts, events, payloads, batch cancel), checked with raw httpx and
websockets so no toolkit client assumption hides a difference."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from _helpers import call, recv

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.sim import Simulator
from toolkit.sim._accounts import API_KEYS
from toolkit.sim._shape import Shape
from toolkit.sim._ws import ChannelState

ROOT = Path(__file__).resolve().parents[2]
ALT = load_profile(ROOT / "profiles" / "alt.toml")
ITEM_FIELDS = {
    "orderId",
    "pair",
    "direction",
    "orderType",
    "state",
    "limit",
    "deadline",
    "created",
    "modified",
}
#: "now" in seconds lies far below this; in ms far above it
SECONDS_CEILING = 100_000_000_000


@pytest.fixture(scope="module")
def alt() -> Iterator[Simulator]:
    with Simulator(profile=ALT, engine=False, history_orders=60) as s:
        yield s


def alt_signin(sim: Simulator, key: str = "demo") -> str:
    resp = httpx.post(
        f"{sim.base_url}/api/v2/session", json={"key": key, "secret": API_KEYS[key].secret}
    )
    assert resp.status_code == 200, resp.text
    token: str = resp.json()["data"]["accessToken"]
    return token


@pytest.fixture
def http(alt: Simulator) -> Iterator[httpx.Client]:
    client = httpx.Client(base_url=alt.base_url, timeout=10)
    client.headers["X-Auth-Token"] = alt_signin(alt)
    yield client
    client.close()


def in_seconds(value: Any) -> bool:
    return isinstance(value, float) and abs(value - time.time()) < 40 * 86_400


def create(http: httpx.Client, **over: Any) -> dict[str, Any]:
    body = {
        "profileId": "P1",
        "symbol": "BTC/BRL",
        "side": "buy",
        "amount": "0.001",
        "limitPrice": "1000",
        "expiresAt": round(time.time() + 3600, 3),  # seconds, as the profile says
        **over,
    }
    resp = http.post("/orders/limit/orders", json=body)
    assert resp.status_code == 201, resp.text
    order: dict[str, Any] = resp.json()
    return order


def fetch(http: httpx.Client, order_id: str) -> dict[str, Any]:
    resp = http.get("/orders/fetchOrder", params={"id": order_id})
    assert resp.status_code == 200, resp.text
    order: dict[str, Any] = resp.json()
    return order


def listing(http: httpx.Client, **params: Any) -> list[dict[str, Any]]:
    """Every item of a listing, page after page."""
    items: list[dict[str, Any]] = []
    while True:
        resp = http.get("/orders/limit/orders", params=params)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        items += body["orders"]
        if "paginationToken" not in body:
            return items
        params["paginationToken"] = body["paginationToken"]


# ------------------------------------------------------------------ the profile itself
def test_knobs_start_from_the_profile_and_the_profile_is_recorded(alt: Simulator) -> None:
    knobs = alt.control.knobs()
    assert knobs["page_default"] == 20 and (knobs["page_min"], knobs["page_max"]) == (5, 40)
    assert (knobs["ws_max_duration_s"], knobs["ws_idle_limit_s"]) == (3600, 60)
    assert knobs["limit_events"] == "outcome_only" and knobs["status_case"] == "upper"
    assert knobs["batch_cancel_max"] == 20
    assert ServiceProfile.from_dict(alt.control.profile()) == ALT
    assert "profile='alt'" in repr(alt)


def test_client_gets_the_simulators_profile(alt: Simulator) -> None:
    client = alt.client()
    try:
        assert client.profile is ALT
    finally:
        client.close()


def test_default_profile_simulator_records_the_default(sim: Simulator) -> None:
    assert sim.profile is DEFAULT_PROFILE
    assert ServiceProfile.from_dict(sim.control.profile()) == DEFAULT_PROFILE


# ------------------------------------------------------------------ sign-in and identity
def test_signin_shape_ttl_in_seconds_and_bad_credentials(alt: Simulator) -> None:
    url = f"{alt.base_url}/api/v2/session"
    resp = httpx.post(url, json={"key": "demo", "secret": "demo-secret"})
    assert resp.status_code == 200
    data = resp.json()
    assert set(data) == {"data"} and set(data["data"]) == {"accessToken", "expiresIn"}
    assert data["data"]["expiresIn"] == 3600  # a time to live, in seconds
    bad = httpx.post(url, json={"key": "demo", "secret": "wrong"})
    assert bad.status_code == 403 and "error" in bad.json()
    assert httpx.post(url, json={"apiKey": "demo", "apiSecret": "demo-secret"}).status_code == 400
    default_path = httpx.post(
        f"{alt.base_url}/auth/signin", json={"apiKey": "demo", "apiSecret": "demo-secret"}
    )
    assert default_path.status_code == 404 and set(default_path.json()) == {"error"}


def test_token_travels_bare_in_x_auth_token(alt: Simulator, http: httpx.Client) -> None:
    token = http.headers["X-Auth-Token"]
    order_id = alt.control.order_ids()[0]
    path, params = "/orders/fetchOrder", {"id": order_id}
    assert http.get(path, params=params).status_code == 200
    with httpx.Client(base_url=alt.base_url) as raw:
        for headers in (
            {},
            {"X-Auth-Token": f"Bearer {token}"},
            {"Authorization": f"Bearer {token}"},
            {"X-Auth-Token": "tok_not-a-real-token"},
        ):
            resp = raw.get(path, params=params, headers=headers)
            assert resp.status_code == 401, headers
            assert set(resp.json()) == {"error"}


# ------------------------------------------------------------------ orders
def test_fetch_order_by_id_and_error_bodies(alt: Simulator, http: httpx.Client) -> None:
    order_id = alt.control.order_ids()[0]
    assert fetch(http, order_id)["id"] == order_id
    missing = http.get("/orders/fetchOrder", params={"orderId": order_id})
    assert missing.status_code == 400 and "id is required" in missing.json()["error"]
    unknown = http.get("/orders/fetchOrder", params={"id": "l-999999-0000"})
    assert unknown.status_code == 404 and set(unknown.json()) == {"error"}


def test_timestamps_in_seconds_status_upper_and_quote_fields(
    alt: Simulator, http: httpx.Client
) -> None:
    closed = alt.control.market_order(symbol="BTC/BRL", side="buy", quoteAmount="100")
    order = fetch(http, closed["id"])
    # status_case = "upper" is the case of limit statuses: market ones stay lowercase (3.1)
    assert order["status"] == "closed" and order["type"] == "market"
    for key in ("createdAt", "updatedAt", "executedAt"):
        assert in_seconds(order[key]), (key, order[key])
    assert all(in_seconds(t["timestamp"]) for t in order["trades"])
    quotes = order["evaluatedTickers"]
    assert quotes and all(
        {"venue", "px", "ts"} <= set(q) <= {"venue", "px", "ts", "why"} for q in quotes
    )
    assert all(in_seconds(q["ts"]) for q in quotes)
    # milliseconds precision, no more
    assert all(round(order[k], 3) == order[k] for k in ("createdAt", "updatedAt"))
    limit = create(http)
    assert limit["status"] == "OPEN" and limit["statusGroup"] == "ACTIVE"
    assert in_seconds(limit["expiresAt"]) and in_seconds(limit["createdAt"])
    assert limit["expiresAt"] == pytest.approx(time.time() + 3600, abs=5)
    rejected = alt.control.market_order(
        symbol="ETH/BRL", side="sell", quoteAmount="100", outcome="rejected"
    )
    assert fetch(http, rejected["id"])["status"] == "rejected"
    alt.control.advance(limit["id"], "CLOSED")
    assert fetch(http, limit["id"])["status"] == "CLOSED"


def test_expires_at_in_milliseconds_is_still_understood(http: httpx.Client) -> None:
    order = create(http, expiresAt=int((time.time() + 600) * 1000))
    assert order["expiresAt"] == pytest.approx(time.time() + 600, abs=5)
    resp = http.post(
        "/orders/limit/orders",
        json={
            "profileId": "P1",
            "symbol": "BTC/BRL",
            "side": "buy",
            "amount": "0.001",
            "limitPrice": "1000",
            "expiresAt": "soon",
        },
    )
    assert resp.status_code == 400 and "seconds" in resp.json()["error"]


# ------------------------------------------------------------------ listing
def test_list_items_use_the_profile_names_and_seconds(http: httpx.Client) -> None:
    created = create(http)
    items = listing(http, limit=40)
    assert items and all(set(item) == ITEM_FIELDS for item in items)
    mine = next(i for i in items if i["orderId"] == created["id"])
    assert mine["state"] == "OPEN" and mine["pair"] == "BTC/BRL" and mine["direction"] == "buy"
    assert mine["orderType"] == "limit" and mine["limit"] == "1000.00"
    assert all(in_seconds(mine[k]) for k in ("created", "modified", "deadline"))
    created_at = [i["created"] for i in items]
    assert created_at == sorted(created_at, reverse=True)  # newest first


def test_page_bounds_and_default(http: httpx.Client) -> None:
    for bad in (4, 41, 0):
        resp = http.get("/orders/limit/orders", params={"limit": bad})
        assert resp.status_code == 400 and "between 5 and 40" in resp.json()["error"]
    for good in (5, 40):
        body = http.get("/orders/limit/orders", params={"limit": good}).json()
        assert len(body["orders"]) <= good
    while len(listing(http, limit=40)) < 21:
        create(http)
    first = http.get("/orders/limit/orders").json()
    assert len(first["orders"]) == 20 and "paginationToken" in first


def test_active_shortcut_has_the_profile_members(alt: Simulator, http: httpx.Client) -> None:
    alt.control.set_knobs(cancel_completion_s=30)
    try:
        order_id = create(http)["id"]
        assert http.patch(
            f"/orders/limit/orders/{order_id}/cancel", params={"profileId": "P1"}
        ).is_success
    finally:
        alt.control.set_knobs(cancel_completion_s=0.2)
    assert fetch(http, order_id)["statusGroup"] == "ACTIVE"  # CANCELLING is ACTIVE here
    active = listing(http, status="ACTIVE", limit=40)
    assert {i["state"] for i in active} <= set(ALT.listing.active_statuses)
    assert order_id in {i["orderId"] for i in active}
    finalized = listing(http, status="FINALIZED", limit=40)
    assert {i["state"] for i in finalized} <= set(ALT.listing.finalized_statuses)


# ------------------------------------------------------------------ cancel and batch cancel
def test_cancel_takes_profile_id_in_the_query_and_answers_200(http: httpx.Client) -> None:
    order_id = create(http)["id"]
    path = f"/orders/limit/orders/{order_id}/cancel"
    body_only = http.patch(path, json={"profileId": "P1"})
    assert body_only.status_code == 400 and "profileId" in body_only.json()["error"]
    resp = http.patch(path, params={"profileId": "P1"}, json={"reason": "test"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["id"] == order_id and body["status"] == "CANCELLING"
    assert in_seconds(body["cancelRequestedAt"])
    again = http.patch(path, params={"profileId": "P1"})
    assert again.status_code == 409 and set(again.json()) == {"error"}


def test_batch_cancel_path_field_and_max(alt: Simulator, http: httpx.Client) -> None:
    ids = [create(http)["id"] for _ in range(2)]
    path = "/orders/limit/orders/batch-cancel"
    resp = http.post(path, json={"profileId": "P1", "ids": ids})
    assert resp.status_code == 202, resp.text
    results = resp.json()["orders"]
    assert [r["id"] for r in results] == ids and all(r["accepted"] for r in results)
    assert all(in_seconds(r["cancelRequestedAt"]) for r in results)
    too_many = http.post(path, json={"profileId": "P1", "ids": [f"x{i}" for i in range(21)]})
    assert too_many.status_code == 400 and "at most 20" in too_many.json()["error"]
    twenty = http.post(path, json={"profileId": "P1", "ids": [f"x{i}" for i in range(20)]})
    assert twenty.status_code == 202
    wrong_field = http.post(path, json={"profileId": "P1", "orderIds": ids})
    assert wrong_field.status_code == 400
    default_path = http.post("/orders/limit/orders/cancel", json={"profileId": "P1", "ids": ids})
    assert default_path.status_code in (404, 405)
    # outcome-only: no CANCELLING event, and the CANCELLED one is not published either
    deadline = time.monotonic() + 5
    while fetch(http, ids[0])["status"] != "CANCELLED":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert alt.control.events(ids[0]) == []


def test_outcome_only_events_in_upper_case(alt: Simulator, http: httpx.Client) -> None:
    cancelled, closed = create(http)["id"], create(http)["id"]
    http.patch(f"/orders/limit/orders/{cancelled}/cancel", params={"profileId": "P1"})
    alt.control.advance(closed, "CLOSED")
    deadline = time.monotonic() + 5
    while fetch(http, cancelled)["status"] != "CANCELLED":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert alt.control.events(cancelled) == []
    assert alt.control.events(closed) == ["PROCESSING", "EXECUTED", "CLOSED"]


# ------------------------------------------------------------------ WebSocket
def test_refusal_is_a_close_with_4401(alt: Simulator) -> None:
    async def run(url: str) -> tuple[int | None, str]:
        async with websockets.connect(url, open_timeout=5) as ws:
            with pytest.raises(websockets.ConnectionClosed) as info:
                await asyncio.wait_for(ws.recv(), 5)
        rcvd = info.value.rcvd
        assert rcvd is not None
        return rcvd.code, rcvd.reason

    for query in ("", "?token=", "?token=tok_not-a-real-token"):
        code, reason = asyncio.run(run(f"{alt.ws_url}/{query}"))
        assert code == 4401 and reason


def test_keepalive_texts_and_only_priority(alt: Simulator) -> None:
    async def run() -> list[dict[str, Any]]:
        async with websockets.connect(f"{alt.ws_url}/?token={alt_signin(alt)}") as ws:
            return [
                await call(ws, {"action": "heartbeat"}),
                await call(ws, {"action": "ping"}),
                await call(
                    ws,
                    {
                        "action": "subscribe",
                        "channel": "watchTicker",
                        "data": {"symbol": "BTC/BRL"},
                    },
                ),
                await call(ws, {"action": "subscribe", "channel": "watchOrders"}),
                await call(ws, {"action": "heartbeat"}),
                await call(
                    ws,
                    {
                        "action": "unsubscribe",
                        "channel": "WATCHTICKER",
                        "data": {"symbol": "btc/brl"},
                    },
                ),
                await call(ws, {"action": "unsubscribe", "channel": "watchOrders"}),
                await call(
                    ws,
                    {
                        "action": "subscribe",
                        "channel": "watchTickers",
                        "data": {"onlyPriority": True},
                    },
                ),
                await call(
                    ws,
                    {"action": "subscribe", "channel": "watchTickers", "data": {"onlyPriority": 1}},
                ),
            ]

    r = asyncio.run(run())
    assert r[0] == {"success": True, "type": "heartbeat_ack", "subscriptions": []}
    assert r[1]["success"] is False
    assert r[2] == {
        "success": True,
        "message": "Successfully subscribed to channel: watchticker#btcbrl",
    }
    assert r[3] == {"success": True, "message": "Successfully subscribed to channel: watchorders#"}
    assert r[4]["subscriptions"] == ["watchticker#btcbrl", "watchorders"]
    assert r[5] == {"success": True, "message": "Unsubscribed from watchticker#btcbrl"}
    assert r[6] == {"success": True, "message": "Unsubscribed from watchorders"}
    assert r[7] == {"success": False, "message": "Invalid field: onlyPriority"}
    assert r[8]["success"] is True


def test_ticker_tickers_balance_and_order_payloads(alt: Simulator, http: httpx.Client) -> None:
    async def run() -> dict[str, Any]:
        got: dict[str, Any] = {}
        async with websockets.connect(f"{alt.ws_url}/?token={alt_signin(alt)}") as ws:
            for channel, data in (
                ("watchTicker", {"symbol": "SOL/BRL"}),
                ("watchTickers", {"onlyPriority": 1}),
                ("watchBalance", {}),
                ("watchOrders", {}),
            ):
                reply = await call(ws, {"action": "subscribe", "channel": channel, "data": data})
                assert reply["success"], reply
            await asyncio.to_thread(alt.control.move_price, "SOL/BRL", "812.5")
            order = await asyncio.to_thread(
                alt.control.market_order, symbol="BTC/BRL", side="buy", quoteAmount="100"
            )
            got["order_id"] = order["id"]
            while not {"watchticker", "watchtickers", "watchbalance", "watchorders"} <= set(got):
                msg = await recv(ws)
                got.setdefault(msg["channel"], msg["message"])
                if msg["channel"] == "watchorders" and msg["message"]["status"] == "closed":
                    got["closed"] = msg["message"]
            while "closed" not in got:
                msg = await recv(ws)
                if msg["channel"] == "watchorders" and msg["message"]["status"] == "closed":
                    got["closed"] = msg["message"]
        return got

    got = asyncio.run(run())
    ticker = got["watchticker"]
    assert set(ticker) == {"s", "quote", "ts"} and ticker["s"] == "SOL/BRL"
    assert set(ticker["quote"]) == {"bid", "ask", "last"} and in_seconds(ticker["ts"])
    tickers = got["watchtickers"]
    assert set(tickers) == {"data"}
    assert {t["s"] for t in tickers["data"]} == {"BTC/BRL", "ETH/BRL"}  # onlyPriority
    assert all(set(t) == {"s", "quote", "ts"} for t in tickers["data"])
    balance = got["watchbalance"]
    assert set(balance) == {"wallets", "ts"} and in_seconds(balance["ts"])
    assert {"BRL", "BTC"} <= {w["currency"] for w in balance["wallets"]}
    assert all(set(w) == {"currency", "available", "hold", "balance"} for w in balance["wallets"])
    closed = got["closed"]
    assert closed["id"] == got["order_id"] and in_seconds(closed["updatedAt"])
    assert all({"venue", "px", "ts"} <= set(q) for q in closed["evaluatedTickers"])
    json.dumps(got)  # plain JSON all the way down


# ------------------------------------------------------------------ sans-I/O pieces
def _channel(profile: ServiceProfile) -> ChannelState:
    return ChannelState(
        API_KEYS["demo"], ("BTC/BRL", "ETH/BRL"), frozenset({"BTC/BRL"}), shape=Shape(profile)
    )


def test_only_priority_as_a_string() -> None:
    state = _channel(DEFAULT_PROFILE.replace({"stream.only_priority_type": "str"}))
    sub = {"action": "subscribe", "channel": "watchTickers"}
    for value, ok in (("true", True), ("0", True), ("yes", True), (True, False), (1, False)):
        reply = state.handle(json.dumps({**sub, "data": {"onlyPriority": value}}))
        assert reply["success"] is ok, value
    assert state.handle(json.dumps({**sub, "data": {"onlyPriority": "maybe"}}))["success"] is False


def test_no_keepalive_action_means_unknown_action() -> None:
    state = _channel(DEFAULT_PROFILE.replace({"stream.keepalive_action": ""}))
    assert state.handle('{"action": "ping"}') == {
        "success": False,
        "message": "Unknown action: ping",
    }
    assert state.handle('{"action": ""}')["success"] is False


def test_tickers_list_at_the_top_and_nested_paths() -> None:
    shape = Shape(
        DEFAULT_PROFILE.replace({"payloads.tickers_list": "", "payloads.ticker_symbol": "m.s"})
    )
    raw = {"symbol": "BTC/BRL", "bid": "1", "ask": "2", "last": "1.5", "timestamp": 1763000000123}
    tickers = shape.tickers([shape.ticker(raw), shape.ticker({**raw, "symbol": "SOL/BRL"})])
    assert isinstance(tickers, list) and tickers[0]["m"] == {"s": "BTC/BRL"}
    assert tickers[0]["timestamp"] == 1763000000123
    assert shape.only(tickers, frozenset({"SOL/BRL"})) == [tickers[1]]
    nested = Shape(DEFAULT_PROFILE.replace({"payloads.tickers_list": "data.items"}))
    message = nested.tickers([nested.ticker(raw)])
    assert nested.only(message, frozenset()) == {"data": {"items": []}}
    assert len(message["data"]["items"]) == 1  # the shared message is left whole
    seconds = Shape(ALT)
    assert seconds.ts(1763000000123) == 1763000000.123


def test_signin_expiry_forms() -> None:
    now, exp = 1_763_000_000_000, 1_763_003_600_500
    body = Shape(DEFAULT_PROFILE).signin("t", exp, now)
    assert body == {"token": "t", "expiresAt": exp}
    ttl_ms = Shape(
        DEFAULT_PROFILE.replace({"signin.expiry_kind": "ttl", "signin.expiry_unit": "ms"})
    )
    assert ttl_ms.signin("t", exp, now)["expiresAt"] == 3_600_500
    abs_s = Shape(DEFAULT_PROFILE.replace({"signin.expiry_unit": "s", "signin.token_field": "a.b"}))
    assert abs_s.signin("t", exp, now) == {"a": {"b": "t"}, "expiresAt": 1_763_003_600.5}


# ------------------------------------------------------------------ command line
@pytest.mark.parametrize("content", [None, "[rest]\nno_such = 1\n", "not = [valid"])
def test_cli_bad_profile_is_one_line_and_exit_1(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "p.toml"
    if content is not None:
        path.write_text(content)
    proc = subprocess.run(
        [sys.executable, "-m", "toolkit.sim", "--port", "0", "--profile", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toolkit sim: ") and str(path) in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
