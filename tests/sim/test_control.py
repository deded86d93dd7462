"""The simulator's control API through ``SimControl``: knobs, market orders, advance/hold,
prices, order ids, the engine switch, and the events it publishes as a WebSocket sees them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import websockets
from _helpers import session, signin

from toolkit.sim import SimControlError, Simulator


def test_knobs_round_trip(fresh_sim: Simulator) -> None:
    knobs = fresh_sim.control.knobs()
    assert knobs["seed"] == 11 and knobs["engine"] is False
    changed = fresh_sim.control.set_knobs(latency_ms=5, limit_events="outcome_only")
    assert changed["latency_ms"] == 5 and changed["limit_events"] == "outcome_only"
    assert fresh_sim.control.knobs() == changed


def test_unknown_knob_is_refused(fresh_sim: Simulator) -> None:
    with pytest.raises(SimControlError) as info:
        fresh_sim.control.set_knobs(no_such_knob=1)
    assert info.value.status_code == 400
    assert "no_such_knob" in info.value.message


def test_market_orders_and_order_ids(fresh_sim: Simulator) -> None:
    a1 = fresh_sim.control.market_order(symbol="BTC/BRL", side="buy", amount="0.01")
    a2 = fresh_sim.control.market_order(
        account="A2", symbol="SOL/BRL", side="sell", quoteAmount="100", outcome="pending"
    )
    assert a1["status"] == "closed" and a1["amount"] == "0.01000000"
    assert a2["status"] == "pending"
    assert a1["id"] in fresh_sim.control.order_ids()
    assert a2["id"] in fresh_sim.control.order_ids("A2")
    assert a2["id"] not in fresh_sim.control.order_ids("A1")
    assert fresh_sim.control.events(a1["id"]) == ["pending", "executed", "closed"]


def test_market_order_beyond_the_balance_is_rejected(fresh_sim: Simulator) -> None:
    order = fresh_sim.control.market_order(
        account="A2", symbol="BTC/BRL", side="buy", quoteAmount="10000000"
    )
    assert order["status"] == "rejected"
    assert order["errorMessage"] == "insufficient balance"


@pytest.mark.parametrize(
    "kw",
    [
        {"symbol": "XRP/BRL", "side": "buy"},
        {"symbol": "BTC/BRL", "side": "up"},
        {"symbol": "BTC/BRL", "side": "buy", "outcome": "weird"},
        {"symbol": "BTC/BRL", "side": "buy", "amount": "-1"},
        {"symbol": "BTC/BRL", "side": "buy", "account": "A7"},
    ],
)
def test_bad_market_orders_are_400(sim: Simulator, kw: dict[str, Any]) -> None:
    with pytest.raises(SimControlError) as info:
        sim.control.market_order(**kw)
    assert info.value.status_code == 400


def test_advance_market_order(fresh_sim: Simulator) -> None:
    order = fresh_sim.control.market_order(symbol="ETH/BRL", side="buy", outcome="pending")
    executed = fresh_sim.control.advance(order["id"], "EXECUTED")
    assert executed["status"] == "executed" and "trades" not in executed
    closed = fresh_sim.control.advance(order["id"], "closed")
    assert closed["status"] == "closed" and closed["trades"]


def test_advance_refuses_impossible_moves(fresh_sim: Simulator) -> None:
    order = fresh_sim.control.market_order(symbol="ETH/BRL", side="buy")
    with pytest.raises(SimControlError) as info:
        fresh_sim.control.advance(order["id"], "PENDING")
    assert info.value.status_code == 409
    with pytest.raises(SimControlError) as info:
        fresh_sim.control.advance("m-999999-0000", "CLOSED")
    assert info.value.status_code == 404


def test_history_holds_every_limit_status(sim: Simulator) -> None:
    http = session(sim)
    seen: set[str] = set()
    for order_id in sim.control.order_ids():
        seen.add(http.get("/orders/fetchOrder", params={"orderId": order_id}).json()["status"])
    http.close()
    assert seen == {
        "pending",
        "executed",
        "closed",
        "rejected",
        "expired",
        "OPEN",
        "TRIGGERED",
        "PROCESSING",
        "CANCELLING",
        "EXECUTED",
        "EXPIRED",
        "CANCELLED",
        "REJECTED",
    }


def test_engine_switch(fresh_sim: Simulator) -> None:
    assert fresh_sim.control.set_engine(True) is True
    assert fresh_sim.control.knobs()["engine"] is True
    assert fresh_sim.control.set_engine(False) is False


def test_move_price_reports_the_ticker(sim: Simulator) -> None:
    result = sim.control.move_price("USDT/BRL", "5.6")
    ticker = result["ticker"]
    assert ticker["symbol"] == "USDT/BRL"
    assert 5.5 < float(ticker["bid"]) < float(ticker["ask"]) < 5.7


async def _next_data(ws: Any, channel: str) -> dict[str, Any]:
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), 5))
        if msg.get("channel") == channel:
            data: dict[str, Any] = msg["message"]
            return data


def test_events_reach_a_websocket_in_order(fresh_sim: Simulator) -> None:
    token = signin(fresh_sim)

    async def scenario() -> tuple[list[str], dict[str, Any], int]:
        async with websockets.connect(f"{fresh_sim.ws_url}/?token={token}") as ws:
            for channel in ("watchOrders", "watchBalance"):
                await ws.send(json.dumps({"action": "subscribe", "channel": channel}))
                assert json.loads(await asyncio.wait_for(ws.recv(), 5))["success"] is True
            order = await asyncio.to_thread(
                fresh_sim.control.market_order, symbol="BTC/BRL", side="buy", amount="0.01"
            )
            statuses: list[str] = []
            while len(statuses) < 3:
                data = await _next_data(ws, "watchorders")
                assert data["id"] == order["id"]
                statuses.append(data["status"])
            balance = await _next_data(ws, "watchbalance")
            dropped = await asyncio.to_thread(fresh_sim.control.drop_connections)
            return statuses, balance, dropped

    statuses, balance, dropped = asyncio.run(scenario())
    assert statuses == ["pending", "executed", "closed"]
    assert {r["asset"] for r in balance["balances"]} >= {"BRL", "BTC"}
    assert dropped == 1
