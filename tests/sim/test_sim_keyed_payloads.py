"""The simulator's keyed payloads (a list setting ending in ``*``: the items under their
symbol or asset), ISO-8601 payload times (knob ``payload_time_format``), and
``profiles/stranger.toml`` served as written: sans-I/O through ``Shape``, then on the wire
with raw httpx and websockets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from _helpers import call, recv

from toolkit.profile import DEFAULT_PROFILE, get_items, item_field, load_profile
from toolkit.sim import Simulator
from toolkit.sim._accounts import API_KEYS
from toolkit.sim._knobs import Knobs
from toolkit.sim._shape import Shape

ROOT = Path(__file__).resolve().parents[2]
STRANGER = load_profile(ROOT / "profiles" / "stranger.toml")
RAW = {"symbol": "BTC/BRL", "bid": "1", "ask": "2", "last": "1.5", "timestamp": 1763000000123}
BALANCES = {
    "balances": [
        {"asset": "BRL", "free": "10.00", "locked": "1.00", "total": "11.00"},
        {"asset": "BTC", "free": "0.5", "locked": "0.1", "total": "0.6"},
    ],
    "timestamp": 1763000000123,
}


def _shape(changes: dict[str, Any], **knobs: Any) -> Shape:
    k = Knobs()
    k.update(**knobs)
    return Shape(DEFAULT_PROFILE.replace(changes), k)


# ------------------------------------------------------------------ sans-I/O
def test_keyed_tickers_keep_or_drop_the_symbol_field() -> None:
    shape = _shape({"payloads.tickers_list": "data.*", "payloads.ticker_symbol": "pair"})
    rendered = [shape.ticker(RAW), shape.ticker({**RAW, "symbol": "SOL/BRL"})]
    message = shape.tickers(rendered, ("BTC/BRL", "SOL/BRL"))
    assert list(message) == ["data"] and list(message["data"]) == ["BTC/BRL", "SOL/BRL"]
    assert message["data"]["SOL/BRL"]["pair"] == "SOL/BRL"
    kept = shape.only(message, frozenset({"SOL/BRL"}))
    assert list(kept["data"]) == ["SOL/BRL"] and len(message["data"]) == 2  # shared: whole
    bare = _shape({"payloads.tickers_list": "*", "payloads.ticker_symbol": "*"})
    message = bare.tickers([bare.ticker(RAW)], ("BTC/BRL",))
    assert message == {
        "BTC/BRL": {"bid": "1", "ask": "2", "last": "1.5", "timestamp": RAW["timestamp"]}
    }
    assert bare.only(message, frozenset()) == {}
    # what a client reads back with the same settings
    items = get_items(message, "*")
    assert [item_field(i, k, "*") for k, i in items] == ["BTC/BRL"]


def test_keyed_balance_rows_carry_only_their_key_when_the_asset_is_star() -> None:
    shape = _shape(
        {
            "payloads.balance_list": "wallet.*",
            "payloads.balance_asset": "*",
            "payloads.balance_free": "available",
            "payloads.balance_locked": "onHold",
            "payloads.balance_time": "ts",
        }
    )
    message = shape.balance(BALANCES)
    assert message["wallet"]["BTC"] == {"available": "0.5", "onHold": "0.1", "total": "0.6"}
    assert message["ts"] == BALANCES["timestamp"]
    named = _shape({"payloads.balance_list": "wallet.*"}).balance(BALANCES)
    assert named["wallet"]["BRL"]["asset"] == "BRL"  # an asset field is kept when named
    itself = _shape({"payloads.balance_list": "*"}).balance(BALANCES)
    assert set(itself) == {"BRL", "BTC"}  # the payload is the keyed object


def test_iso_payload_times_for_tickers_balances_and_quotes_only() -> None:
    shape = _shape({"payloads.balance_list": "wallet.*"}, payload_time_format="iso")
    stamp = "2025-11-13T02:13:20.123Z"
    pass
    assert datetime.fromisoformat(stamp).timestamp() == 1763000000.123
    assert shape.ticker(RAW)["timestamp"] == stamp
    assert shape.balance(BALANCES)["timestamp"] == stamp
    quote = {"exchange": "x", "price": "1", "quotedAt": 1763000000123}
    body = shape.order({"createdAt": 1763000000000, "evaluatedTickers": [quote]})
    assert body["evaluatedTickers"][0]["quotedAt"] == stamp
    assert body["createdAt"] == 1763000000000  # order stamps stay Unix (spec 2.4)
    unix = _shape({})
    assert unix.ticker(RAW)["timestamp"] == RAW["timestamp"]


def test_payload_time_format_is_a_checked_knob() -> None:
    with pytest.raises(ValueError, match="payload_time_format must be one of unix, iso"):
        Knobs().update(payload_time_format="rfc")


# ------------------------------------------------------------------ on the wire
@pytest.fixture(scope="module")
def stranger() -> Iterator[Simulator]:
    with Simulator(profile=STRANGER, engine=False, history_orders=60) as s:
        yield s


def _token(sim: Simulator) -> str:
    resp = httpx.post(
        f"{sim.base_url}/auth/signin",
        json={"clientId": "demo", "clientSecret": API_KEYS["demo"].secret},
    )
    assert resp.status_code == 200, resp.text
    token: str = resp.json()["auth"]["jwt"]
    return token


def test_stranger_simulator_takes_its_knobs_from_the_profile(stranger: Simulator) -> None:
    knobs = stranger.knobs
    assert (knobs.validation_status, knobs.cancel_profile_strict) == (422, True)
    assert (knobs.ws_limit_close_code, knobs.payload_time_format) == (4000, "iso")
    assert knobs.ws_idle_limit_s == 6.0
    http = httpx.Client(base_url=stranger.base_url, headers={"X-Access-Token": _token(stranger)})
    with http:
        resp = http.get("/orders/limit/orders", params={"limit": 1})
        assert resp.status_code == 422
        assert resp.json() == {"errors": [{"detail": "limit must be between 2 and 60"}]}
        item = http.get("/orders/limit/orders", params={"limit": 2}).json()["orders"][0]
        assert isinstance(item["ref"], int) and set(item["trigger"]) == {"price"}


def test_stranger_tickers_and_balance_are_keyed_with_iso_stamps(stranger: Simulator) -> None:
    async def run() -> dict[str, Any]:
        got: dict[str, Any] = {}
        async with websockets.connect(f"{stranger.ws_url}/?token={_token(stranger)}") as ws:
            for channel in ("watchTickers", "watchBalance"):
                reply = await call(ws, {"action": "subscribe", "channel": channel})
                assert reply["success"], reply
            await asyncio.to_thread(stranger.control.move_price, "SOL/BRL", "812.5")
            await asyncio.to_thread(
                stranger.control.market_order, symbol="BTC/BRL", side="buy", quoteAmount="100"
            )
            while not {"watchtickers", "watchbalance"} <= set(got):
                msg = await recv(ws)
                got.setdefault(msg["channel"], msg["message"])
        return got

    got = asyncio.run(run())
    tickers = got["watchtickers"]["data"]
    assert {"BTC/BRL", "ETH/BRL", "SOL/BRL"} <= set(tickers)
    assert all(t["pair"] == symbol for symbol, t in tickers.items())
    assert all(datetime.fromisoformat(t["at"]) for t in tickers.values())
    balance = got["watchbalance"]
    assert set(balance) == {"wallet", "asOf"} and datetime.fromisoformat(balance["asOf"])
    assert set(balance["wallet"]["BTC"]) == {"availableAmount", "onHold", "overall"}
    json.dumps(got)
