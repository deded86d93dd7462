"""Subscribe, unsubscribe and ping on the simulator's WebSocket: exact confirmation texts,
failures that leave the connection usable, and data forwarded for subscribed topics only."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest
import websockets
from _helpers import call, recv, signin
from websockets.asyncio.client import ClientConnection

from toolkit.sim._accounts import API_KEYS
from toolkit.sim._ws import ChannelState

if TYPE_CHECKING:
    from toolkit.sim import Simulator

PRIORITY = frozenset({"BTC/BRL", "ETH/BRL"})


def sub(channel: str, **data: Any) -> dict[str, Any]:
    return {"action": "subscribe", "channel": channel, "data": data}


def unsub(channel: str, **data: Any) -> dict[str, Any]:
    return {"action": "unsubscribe", "channel": channel, "data": data}


def ok(text: str) -> dict[str, Any]:
    return {"success": True, "message": text}


def test_confirmation_texts_are_exact(sim: Simulator) -> None:
    async def run() -> list[dict[str, Any]]:
        async with websockets.connect(f"{sim.ws_url}/?token={signin(sim)}") as ws:
            return [
                await call(ws, sub("watchTicker", symbol="BTC/BRL")),
                await call(ws, sub("watchTicker", symbol="USDT/BRL")),
                await call(ws, sub("watchOrders")),
                await call(ws, sub("watchTickers", onlyPriority=False)),
                await call(ws, {"action": "subscribe", "channel": "watchBalance"}),
                await call(ws, unsub("watchTicker", symbol="BTC/BRL")),
                await call(ws, unsub("watchOrders")),
            ]

    assert asyncio.run(run()) == [
        ok("Successfully subscribed to channel: watchticker#btcbrl"),
        ok("Successfully subscribed to channel: watchticker#usdtbrl"),
        ok("Successfully subscribed to channel: watchorders"),
        ok("Successfully subscribed to channel: watchtickers"),
        ok("Successfully subscribed to channel: watchbalance"),
        ok("Successfully unsubscribed from channel: watchticker#btcbrl"),
        ok("Successfully unsubscribed from channel: watchorders"),
    ]


@pytest.mark.parametrize("name", ["watchticker", "WATCHTICKER", "WatchTicker", "wAtChTiCkEr"])
def test_channel_names_are_case_insensitive(sim: Simulator, name: str) -> None:
    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with websockets.connect(f"{sim.ws_url}/?token={signin(sim)}") as ws:
            return (
                await call(ws, sub(name, symbol="ETH/BRL")),
                await call(ws, unsub(name.swapcase(), symbol="ETH/BRL")),
            )

    assert asyncio.run(run()) == (
        ok("Successfully subscribed to channel: watchticker#ethbrl"),
        ok("Successfully unsubscribed from channel: watchticker#ethbrl"),
    )


BAD_MESSAGES: list[tuple[dict[str, Any] | str, str]] = [
    (sub("watchCandles"), "Unknown channel: watchCandles"),
    ({"action": "subscribe"}, "Unknown channel: "),
    (sub("watchTicker"), "Missing required field: symbol"),
    ({"action": "subscribe", "channel": "watchTicker"}, "Missing required field: symbol"),
    (sub("watchTicker", symbol="DOGE/BRL"), "Invalid symbol: DOGE/BRL"),
    (sub("watchTicker", symbol="BTCBRL"), "Invalid symbol: BTCBRL"),
    (sub("watchTicker", symbol=42), "Invalid symbol: 42"),
    (sub("watchTickers", onlyPriority="yes"), "Invalid field: onlyPriority"),
    ({"action": "subscribe", "channel": "watchOrders", "data": [1]}, "Invalid field: data"),
    ("{not json", "Invalid JSON"),
    ("[1, 2]", "Invalid JSON"),
    ('"subscribe"', "Invalid JSON"),
    ({"action": "dance"}, "Unknown action: dance"),
    ({"channel": "watchOrders"}, "Unknown action: "),
    (unsub("watchOrders"), "Not subscribed to channel: watchorders"),
    (unsub("watchTicker", symbol="SOL/BRL"), "Not subscribed to channel: watchticker#solbrl"),
]


def test_failures_answer_success_false_and_keep_the_connection_usable(sim: Simulator) -> None:
    async def run() -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
        async with websockets.connect(f"{sim.ws_url}/?token={signin(sim)}") as ws:
            replies = [await call(ws, msg) for msg, _ in BAD_MESSAGES]
            # a binary frame that is not JSON is answered the same way
            await ws.send(b"\xff\xfe")
            replies.append(await recv(ws))
            after = await call(ws, sub("watchTicker", symbol="SOL/BRL"))
            return replies, after, await call(ws, {"action": "ping"})

    replies, after, pong = asyncio.run(run())
    expected = [{"success": False, "message": text} for _, text in BAD_MESSAGES]
    assert replies == [*expected, {"success": False, "message": "Invalid JSON"}]
    assert after == ok("Successfully subscribed to channel: watchticker#solbrl")
    assert pong["subscriptions"] == ["watchticker#solbrl"]


def test_symbol_is_matched_case_insensitively(sim: Simulator) -> None:
    async def run() -> dict[str, Any]:
        async with websockets.connect(f"{sim.ws_url}/?token={signin(sim)}") as ws:
            return await call(ws, sub("watchTicker", symbol="btc/brl"))

    assert asyncio.run(run()) == ok("Successfully subscribed to channel: watchticker#btcbrl")


def test_ping_lists_current_subscriptions(sim: Simulator) -> None:
    async def run() -> list[list[str]]:
        async with websockets.connect(f"{sim.ws_url}/?token={signin(sim)}") as ws:
            seen = [(await call(ws, {"action": "ping"}))["subscriptions"]]
            await call(ws, sub("watchOrders"))
            await call(ws, sub("watchTicker", symbol="BTC/BRL"))
            await call(ws, sub("watchTicker", symbol="BTC/BRL"))  # twice: listed once
            seen.append((await call(ws, {"action": "ping"}))["subscriptions"])
            await call(ws, unsub("watchOrders"))
            pong = await call(ws, {"action": "ping"})
            assert pong["success"] is True and pong["message"] == "pong"
            seen.append(pong["subscriptions"])
            return seen

    assert asyncio.run(run()) == [
        [],
        ["watchorders", "watchticker#btcbrl"],
        ["watchticker#btcbrl"],
    ]


# Tests that move prices or place orders use ``fresh_sim``: a price move can trigger the
# seeded limit orders, which would change the shared simulator under other tests.


def test_ticker_data_carries_the_lowercase_channel(fresh_sim: Simulator) -> None:
    async def run() -> dict[str, Any]:
        async with websockets.connect(f"{fresh_sim.ws_url}/?token={signin(fresh_sim)}") as ws:
            await call(ws, sub("WATCHTICKER", symbol="BTC/BRL"))
            fresh_sim.control.move_price("BTC/BRL", 351_000)
            return await recv(ws)

    data = asyncio.run(run())
    assert data["channel"] == "watchticker"
    assert data["message"]["symbol"] == "BTC/BRL"
    assert {"symbol", "bid", "ask", "last", "timestamp"} <= set(data["message"])


def test_unsubscribe_stops_the_data(fresh_sim: Simulator) -> None:
    async def run() -> dict[str, Any]:
        async with websockets.connect(f"{fresh_sim.ws_url}/?token={signin(fresh_sim)}") as ws:
            await call(ws, sub("watchTicker", symbol="BTC/BRL"))
            await call(ws, sub("watchTicker", symbol="ETH/BRL"))
            await call(ws, unsub("watchTicker", symbol="BTC/BRL"))
            fresh_sim.control.move_price("BTC/BRL", 352_000)
            fresh_sim.control.move_price("ETH/BRL", 18_500)  # sentinel: BTC must not precede it
            return await recv(ws)

    data = asyncio.run(run())
    assert (data["channel"], data["message"]["symbol"]) == ("watchticker", "ETH/BRL")


def test_only_priority_tickers_over_the_wire(fresh_sim: Simulator) -> None:
    token = signin(fresh_sim)

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        url = f"{fresh_sim.ws_url}/?token={token}"
        async with websockets.connect(url) as prio, websockets.connect(url) as every:
            await call(prio, sub("WatchTickers", onlyPriority=True))
            await call(every, sub("watchTickers"))
            fresh_sim.control.move_price("SOL/BRL", 900)
            return await recv(prio), await recv(every)

    prio, every = asyncio.run(run())
    assert prio["channel"] == every["channel"] == "watchtickers"
    assert sorted(t["symbol"] for t in prio["message"]["tickers"]) == ["BTC/BRL", "ETH/BRL"]
    assert sorted(t["symbol"] for t in every["message"]["tickers"]) == [
        "BTC/BRL",
        "ETH/BRL",
        "SOL/BRL",
        "USDT/BRL",
    ]


def test_order_and_balance_data_reach_only_the_orders_account(fresh_sim: Simulator) -> None:
    async def until(ws: ClientConnection, channel: str, order_id: str | None) -> list[Any]:
        seen = []
        while True:
            data = await recv(ws)
            seen.append(data)
            if data["channel"] == channel and (
                order_id is None or data["message"].get("id") == order_id
            ):
                return seen

    async def run() -> tuple[str, list[Any], list[Any]]:
        url = f"{fresh_sim.ws_url}/?token="
        a1 = await websockets.connect(url + signin(fresh_sim, "demo"))
        a2 = await websockets.connect(url + signin(fresh_sim, "other"))
        try:
            await call(a1, sub("WatchOrders"))
            await call(a1, sub("watchBALANCE"))
            await call(a2, sub("watchorders"))
            mine = fresh_sim.control.market_order(
                account="A1", symbol="BTC/BRL", side="buy", quoteAmount="500.00"
            )
            theirs = fresh_sim.control.market_order(
                account="A2", symbol="ETH/BRL", side="sell", quoteAmount="500.00"
            )
            seen1 = await until(a1, "watchorders", mine["id"])
            seen1 += await until(a1, "watchbalance", None)
            return mine["id"], seen1, await until(a2, "watchorders", theirs["id"])
        finally:
            await a1.close()
            await a2.close()

    mine, seen1, seen2 = asyncio.run(run())
    assert {d["channel"] for d in seen1} == {"watchorders", "watchbalance"}
    balance = seen1[-1]["message"]
    assert {"balances", "timestamp"} <= set(balance)
    a1_ids = set(fresh_sim.control.order_ids("A1"))
    assert mine in a1_ids
    # nothing of account A1 ever reached the A2 connection
    assert all(d["channel"] == "watchorders" for d in seen2)
    assert not {d["message"]["id"] for d in seen2} & a1_ids


def _state(key: str = "demo") -> ChannelState:
    symbols = ("BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL")
    return ChannelState(API_KEYS[key], symbols, PRIORITY)


def _ticker(symbol: str) -> dict[str, Any]:
    return {"symbol": symbol, "bid": "1", "ask": "2", "last": "1.5", "timestamp": 1}


def test_only_priority_filters_the_tickers_list() -> None:
    state = _state()
    tickers = {"tickers": [_ticker(s) for s in ("BTC/BRL", "SOL/BRL", "ETH/BRL", "USDT/BRL")]}
    assert state.handle(json.dumps(sub("watchTickers", onlyPriority=True)))["success"] is True
    out = state.outgoing(("watchtickers", None), tickers)
    assert out is not None and out["channel"] == "watchtickers"
    assert [t["symbol"] for t in out["message"]["tickers"]] == ["BTC/BRL", "ETH/BRL"]
    # the bus message itself is shared by every connection and must stay whole
    assert len(tickers["tickers"]) == 4
    state.handle(json.dumps(sub("watchTickers")))
    out = state.outgoing(("watchtickers", None), tickers)
    assert out is not None and len(out["message"]["tickers"]) == 4


def test_outgoing_selects_subscribed_topics_only() -> None:
    state = _state()
    state.handle(json.dumps(sub("watchTicker", symbol="SOL/BRL")))
    state.handle(json.dumps(sub("watchOrders")))
    assert state.outgoing(("watchticker", "BTC/BRL"), _ticker("BTC/BRL")) is None
    assert state.outgoing(("watchtickers", None), {"tickers": []}) is None
    assert state.outgoing(("watchbalance", "A1"), {"balances": []}) is None
    assert state.outgoing(("watchorders", "A2"), {"id": "x"}) is None
    assert state.outgoing(("watchticker", "SOL/BRL"), _ticker("SOL/BRL")) == {
        "channel": "watchticker",
        "message": _ticker("SOL/BRL"),
    }
    assert state.outgoing(("watchorders", "A1"), {"id": "x"}) == {
        "channel": "watchorders",
        "message": {"id": "x"},
    }


def test_permission_is_checked_before_the_payload() -> None:
    state = _state("wallet-only")
    reply = state.handle(json.dumps(sub("watchTicker", symbol="NOPE")))
    assert reply == {"success": False, "message": "Permission denied for this channel"}


def test_connection_state_repr_shows_no_secret() -> None:
    state = _state("market-only")
    state.handle(json.dumps(sub("watchTicker", symbol="BTC/BRL")))
    text = repr(state)
    assert "watchticker#btcbrl" in text
    assert API_KEYS["market-only"].secret not in text
