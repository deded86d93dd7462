"""Order notifications of the simulator against the spec, over real HTTP and WebSocket:
REJECTED is published (spec 6), a notification equals fetchOrder at the same status (2.4),
closed orders carry consistent fee / trade / quote objects (2.4), expired market orders are
RFQ (3.1), a CANCELLING order no longer executes (3.2), the cancel reason is recorded with a
default (4.3), and no message on an open connection grants a permission (5.2)."""

from __future__ import annotations

import asyncio
import json
import time
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import websockets
from _helpers import (
    BASE,
    EXTENDED,
    LIMIT,
    OPTIONAL_BASE,
    call,
    cancel,
    create_limit,
    fetch_order,
    session,
    signin,
    wait_status,
)
from websockets.asyncio.client import ClientConnection

if TYPE_CHECKING:
    from toolkit.sim import Simulator

#: limit fields the simulator adds along the life cycle (contracts: "Simulator extensions")
LIMIT_EXTRA = {"triggerPrice", "triggerExchange", "triggeredAt", "cancelRequestedAt"}
DEFAULT_CANCEL_REASON = "requested by user"


# ------------------------------------------------------------------ helpers
async def watch_orders(sim: Simulator, key: str = "demo") -> ClientConnection:
    ws = await websockets.connect(f"{sim.ws_url}/?token={signin(sim, key)}")
    reply = await call(ws, {"action": "subscribe", "channel": "watchOrders"})
    assert reply == {"success": True, "message": "Successfully subscribed to channel: watchorders"}
    return ws


async def notifications(
    ws: ClientConnection, order_id: str, until: str, timeout: float = 5
) -> list[dict[str, Any]]:
    """The watchorders messages of ``order_id`` up to the first with status ``until``
    (other orders' messages, e.g. seeded orders a price move fires, are skipped)."""
    deadline = time.monotonic() + timeout
    seen: list[dict[str, Any]] = []
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no {until!r} for {order_id}; saw {[m['status'] for m in seen]}"
        data = json.loads(await asyncio.wait_for(ws.recv(), left))
        if data.get("channel") != "watchorders" or data["message"].get("id") != order_id:
            continue
        seen.append(data["message"])
        if data["message"]["status"] == until:
            return seen


def dec(value: Any) -> Decimal:
    assert isinstance(value, str), f"{value!r} is not a decimal string"
    return Decimal(value)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ---------------------------------------------- spec 6: REJECTED
@pytest.mark.parametrize("cause", ["duplicate", "insufficient balance"])
def test_rejected_limit_order_publishes_rejected(
    fresh_sim: Simulator, fresh_http: httpx.Client, cause: str
) -> None:
    async def run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        ws = await watch_orders(fresh_sim)
        try:
            if cause == "duplicate":
                first = create_limit(fresh_http, clientOrderId="dup-n-1")
                assert first["status"] == "OPEN"
                rejected = create_limit(fresh_http, clientOrderId="dup-n-1")
            else:
                rejected = create_limit(fresh_http, amount="1000", limitPrice="300000")
            return rejected, await notifications(ws, rejected["id"], "REJECTED")
        finally:
            await ws.close()

    rejected, published = asyncio.run(run())
    assert rejected["status"] == "REJECTED"
    assert rejected["statusReason"] == cause
    # one event: REJECTED, never OPEN first
    assert [m["status"] for m in published] == ["REJECTED"]
    assert fresh_sim.control.events(rejected["id"]) == ["REJECTED"]
    message = published[0]
    assert message["errorMessage"] and message["statusReason"] == cause
    assert message == rejected == fetch_order(fresh_http, rejected["id"])
    assert not set(message) & EXTENDED


# ---------------------------------------------- spec 2.4: notification == fetchOrder
def assert_market_fields(order: dict[str, Any]) -> None:
    keys = set(order)
    assert keys >= BASE
    if order["status"] == "closed":
        assert keys - BASE - OPTIONAL_BASE - {"RFQ"} == EXTENDED
        assert order["errorMessage"] == ""
    else:
        assert keys <= BASE | OPTIONAL_BASE, keys - BASE - OPTIONAL_BASE


def test_market_closed_notification_equals_fetch_order(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    async def run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        ws = await watch_orders(fresh_sim)
        try:
            order = fresh_sim.control.market_order(symbol="ETH/BRL", side="buy", quoteAmount="900")
            return order, await notifications(ws, order["id"], "closed")
        finally:
            await ws.close()

    order, published = asyncio.run(run())
    closed = published[-1]
    assert closed == fetch_order(fresh_http, order["id"]) == order
    assert_market_fields(closed)
    assert [m["status"] for m in published] == ["pending", "executed", "closed"]
    # the non-terminal ones carry base fields only
    for message in published[:-1]:
        assert_market_fields(message)


def test_market_rejected_notification_equals_fetch_order(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    async def run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        ws = await watch_orders(fresh_sim)
        try:
            order = fresh_sim.control.market_order(
                symbol="SOL/BRL", side="sell", outcome="rejected"
            )
            return order, await notifications(ws, order["id"], "rejected")
        finally:
            await ws.close()

    order, published = asyncio.run(run())
    rejected = published[-1]
    assert rejected == fetch_order(fresh_http, order["id"]) == order
    assert rejected["errorMessage"]
    assert not set(rejected) & EXTENDED
    assert "RFQ" not in rejected
    assert_market_fields(rejected)


def test_limit_notifications_equal_fetch_order_open_cancelling_cancelled(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    fresh_sim.control.set_knobs(cancel_completion_s=30)

    async def run() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        ws = await watch_orders(fresh_sim)
        pairs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        try:
            created = create_limit(fresh_http)
            order_id = created["id"]
            (opened,) = await notifications(ws, order_id, "OPEN")
            pairs["OPEN"] = (opened, fetch_order(fresh_http, order_id))
            assert created == opened
            assert cancel(fresh_http, order_id, reason="test reason").status_code == 202
            (cancelling,) = await notifications(ws, order_id, "CANCELLING")
            pairs["CANCELLING"] = (cancelling, fetch_order(fresh_http, order_id))
            fresh_sim.control.advance(order_id, "CANCELLED")  # completes it now
            (cancelled,) = await notifications(ws, order_id, "CANCELLED")
            pairs["CANCELLED"] = (cancelled, fetch_order(fresh_http, order_id))
        finally:
            await ws.close()
        return pairs

    pairs = asyncio.run(run())
    assert list(pairs) == ["OPEN", "CANCELLING", "CANCELLED"]
    for status, (message, fetched) in pairs.items():
        assert message == fetched, status
        assert message["status"] == status
        assert message["type"] == "limit"
        assert set(message) >= BASE | LIMIT, status
        assert not set(message) & EXTENDED, status
        assert set(message) <= BASE | OPTIONAL_BASE | LIMIT | LIMIT_EXTRA, status
    assert pairs["OPEN"][0]["statusGroup"] == "ACTIVE"
    assert pairs["CANCELLING"][0]["statusGroup"] == "FINALIZED"
    assert "cancelRequestedAt" in pairs["CANCELLING"][0]
    assert pairs["CANCELLED"][0]["statusReason"] == "test reason"
    assert pairs["OPEN"][0]["updatedAt"] < pairs["CANCELLING"][0]["updatedAt"]
    assert pairs["CANCELLING"][0]["updatedAt"] < pairs["CANCELLED"][0]["updatedAt"]


def test_limit_closed_notification_equals_fetch_order(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    async def run() -> tuple[str, list[dict[str, Any]]]:
        ws = await watch_orders(fresh_sim)
        try:
            order_id = create_limit(fresh_http, limitPrice="1000")["id"]
            assert order_id in fresh_sim.control.move_price("BTC/BRL", "900")["triggered"]
            return order_id, await notifications(ws, order_id, "closed")
        finally:
            await ws.close()

    order_id, published = asyncio.run(run())
    assert [m["status"] for m in published] == [
        "OPEN",
        "TRIGGERED",
        "PROCESSING",
        "EXECUTED",
        "closed",
    ]
    closed = published[-1]
    assert closed == fetch_order(fresh_http, order_id)
    assert set(closed) >= BASE | LIMIT | EXTENDED
    for message in published:
        assert set(message) >= LIMIT, message["status"]
    for message in published[:-1]:
        assert not set(message) & EXTENDED, message["status"]
    check_closed(closed)


# ---------------------------------------------- spec 2.4: closed objects
def check_closed(order: dict[str, Any]) -> None:
    """Fee, trades and quotes of one closed order: shapes, types and the numbers adding up."""
    oid = order["id"]
    fee = order["fee"]
    assert set(fee) == {"cost", "rate", "cripto", "tierService"}, oid
    for name in ("cost", "rate", "cripto"):
        dec(fee[name])
    tier = fee["tierService"]
    assert set(tier) == {"currentTierFeeRate", "currentTierFeeFiat", "currentTierFeeCripto"}, oid
    for value in tier.values():
        dec(value)

    trades = order["trades"]
    assert trades, oid
    for trade in trades:
        assert set(trade) == {
            "id",
            "takerOrMaker",
            "type",
            "side",
            "price",
            "amount",
            "cost",
            "timestamp",
            "fee",
        }, oid
        for name in ("id", "takerOrMaker", "type", "side"):
            assert isinstance(trade[name], str) and trade[name], (oid, name)
        for name in ("price", "amount", "cost"):
            dec(trade[name])
        assert is_int(trade["timestamp"]), oid
        assert set(trade["fee"]) == {"cost", "rate", "cripto"}, oid
        for value in trade["fee"].values():
            dec(value)
        assert trade["side"] == order["side"] and trade["type"] == order["type"], oid

    cost = sum((dec(t["cost"]) for t in trades), Decimal(0))
    assert dec(order["cost"]) == cost, oid
    filled = sum((dec(t["amount"]) for t in trades), Decimal(0))
    assert dec(order["filled"]) == filled, oid
    vwap = sum((dec(t["price"]) * dec(t["amount"]) for t in trades), Decimal(0)) / filled
    average = dec(order["average"])
    exponent = average.as_tuple().exponent
    assert isinstance(exponent, int), oid
    step = Decimal(1).scaleb(exponent)
    assert average == vwap.quantize(step, ROUND_HALF_UP), (oid, average, vwap)
    assert dec(order["price"]) == average, oid

    quotes = order.get("evaluatedTickers")
    assert quotes, oid
    executing = order.get("executedExchange", order["exchange"])
    for quote in quotes:
        assert set(quote) in (
            {"exchange", "price", "quotedAt"},
            {"exchange", "price", "quotedAt", "reason"},
        ), oid
        assert isinstance(quote["exchange"], str) and quote["exchange"], oid
        dec(quote["price"])
        assert is_int(quote["quotedAt"]), oid
        if "reason" in quote:
            assert isinstance(quote["reason"], str) and quote["reason"], oid
            # a venue with a contingency is not where the order executed
            assert quote["exchange"] != executing, oid
    assert executing in {q["exchange"] for q in quotes}, oid
    # RFQ only on RFQ orders (spec 2.4: "only for executed RFQ orders")
    assert ("RFQ" in order) == (order["rule"] == "rfq"), oid


def all_orders(sim: Simulator, http: httpx.Client, account: str = "A1") -> list[dict[str, Any]]:
    return [fetch_order(http, oid) for oid in sim.control.order_ids(account)]


def test_closed_orders_of_the_history_have_consistent_objects(
    sim: Simulator, http: httpx.Client
) -> None:
    closed = [o for o in all_orders(sim, http) if o["status"] == "closed"]
    assert {o["type"] for o in closed} == {"market", "limit"}
    for order in closed:
        check_closed(order)
    quotes = [q for o in closed for q in o["evaluatedTickers"]]
    # both kinds occur, so "reason only on a contingency" is really exercised
    assert any("reason" in q for q in quotes) and any("reason" not in q for q in quotes)
    assert any(len(o["trades"]) > 1 for o in closed)
    assert any("RFQ" in o for o in closed)


def test_new_closed_market_orders_have_consistent_objects(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    for symbol in ("BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL"):
        for side in ("buy", "sell"):
            order = fresh_sim.control.market_order(symbol=symbol, side=side, quoteAmount="700")
            assert order["status"] == "closed"
            check_closed(fetch_order(fresh_http, order["id"]))


# ---------------------------------------------- spec 3.1: expired = RFQ
def is_rfq(order: dict[str, Any]) -> bool:
    return "RFQ" in order or order["rule"] == "rfq"


def test_every_expired_market_order_of_the_history_is_rfq(sim: Simulator) -> None:
    seen = 0
    for key, account in (("demo", "A1"), ("other", "A2")):
        with session(sim, key) as http:
            for order in all_orders(sim, http, account):
                if order["type"] == "market" and order["status"] == "expired":
                    seen += 1
                    assert is_rfq(order), order
                    assert not set(order) & EXTENDED, order["id"]
    assert seen, "the history holds expired market orders"


def test_expired_market_order_from_control_is_rfq(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    order = fresh_sim.control.market_order(symbol="BTC/BRL", side="buy", outcome="expired")
    fetched = fetch_order(fresh_http, order["id"])
    assert fetched["status"] == "expired"
    assert is_rfq(fetched)
    assert fresh_sim.control.events(order["id"]) == ["pending", "expired"]


# ---------------------------------------------- spec 3.2: CANCELLING no longer executes
def test_cancelling_order_does_not_trigger(fresh_sim: Simulator, fresh_http: httpx.Client) -> None:
    fresh_sim.control.set_knobs(cancel_completion_s=30)
    cancelled = create_limit(fresh_http, limitPrice="1000")["id"]
    witness = create_limit(fresh_http, limitPrice="1000")["id"]  # same limit, left OPEN
    assert cancel(fresh_http, cancelled).status_code == 202
    assert fetch_order(fresh_http, cancelled)["status"] == "CANCELLING"

    triggered = fresh_sim.control.move_price("BTC/BRL", "900")["triggered"]
    assert witness in triggered  # the move did cross the limit
    assert cancelled not in triggered
    wait_status(fresh_http, witness, "closed")
    # the witness ran its whole cycle meanwhile: the cancelling order did not move
    order = fetch_order(fresh_http, cancelled)
    assert order["status"] == "CANCELLING"
    assert not {"triggerPrice", "triggeredAt", "executedAt"} & set(order)
    assert fresh_sim.control.events(cancelled) == ["OPEN", "CANCELLING"]

    fresh_sim.control.advance(cancelled, "CANCELLED")
    order = fetch_order(fresh_http, cancelled)
    assert order["status"] == "CANCELLED"
    assert fresh_sim.control.events(cancelled) == ["OPEN", "CANCELLING", "CANCELLED"]
    # a cancelled order does not execute either
    assert cancelled not in fresh_sim.control.move_price("BTC/BRL", "800")["triggered"]
    assert fetch_order(fresh_http, cancelled)["status"] == "CANCELLED"


# ---------------------------------------------- spec 4.3: cancel reason
@pytest.mark.parametrize(
    ("body", "recorded"),
    [
        ({}, DEFAULT_CANCEL_REASON),
        ({"reason": None}, DEFAULT_CANCEL_REASON),
        ({"reason": ""}, DEFAULT_CANCEL_REASON),
        ({"reason": "portfolio rebalance"}, "portfolio rebalance"),
    ],
)
def test_cancel_reason_is_recorded_with_a_default(
    fresh_sim: Simulator, fresh_http: httpx.Client, body: dict[str, Any], recorded: str
) -> None:
    async def run() -> tuple[str, dict[str, Any]]:
        ws = await watch_orders(fresh_sim)
        try:
            order_id = create_limit(fresh_http)["id"]
            assert cancel(fresh_http, order_id, **body).status_code == 202
            return order_id, (await notifications(ws, order_id, "CANCELLED"))[-1]
        finally:
            await ws.close()

    order_id, message = asyncio.run(run())
    assert message["statusReason"] == recorded
    assert fetch_order(fresh_http, order_id)["statusReason"] == recorded


def test_batch_cancel_records_the_default_reason(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    ids = [create_limit(fresh_http)["id"] for _ in range(2)]
    resp = fresh_http.post("/orders/limit/orders/cancel", json={"profileId": "P1", "orderIds": ids})
    assert resp.status_code == 202
    for order_id in ids:
        assert (
            wait_status(fresh_http, order_id, "CANCELLED")["statusReason"] == DEFAULT_CANCEL_REASON
        )


def test_deferred_cancel_records_its_reason(fresh_sim: Simulator, fresh_http: httpx.Client) -> None:
    with_reason, without = create_limit(fresh_http)["id"], create_limit(fresh_http)["id"]
    for order_id, body in ((with_reason, {"reason": "too late"}), (without, {})):
        fresh_sim.control.advance(order_id, "TRIGGERED")
        assert cancel(fresh_http, order_id, **body).status_code == 409
        fresh_sim.control.advance(order_id, "OPEN")  # re-arm: the recorded cancel is honoured
    assert wait_status(fresh_http, with_reason, "CANCELLED")["statusReason"] == "too late"
    assert wait_status(fresh_http, without, "CANCELLED")["statusReason"] == DEFAULT_CANCEL_REASON


# ---------------------------------------------- spec 5.2: no auth after connecting
def test_messages_on_a_connection_grant_nothing(sim: Simulator) -> None:
    demo_token = signin(sim, "demo")

    async def run() -> list[dict[str, Any]]:
        url = f"{sim.ws_url}/?token={signin(sim, 'market-only')}"
        denied = {"success": False, "message": "Permission denied for this channel"}
        async with websockets.connect(url) as ws:
            replies = [
                await call(ws, {"action": "auth", "token": demo_token}),
                await call(ws, {"action": "authenticate", "data": {"token": demo_token}}),
                await call(ws, {"action": "login", "apiKey": "demo", "apiSecret": "demo-secret"}),
            ]
            for msg in (
                {"action": "subscribe", "channel": "watchOrders", "token": demo_token},
                {"action": "subscribe", "channel": "watchOrders", "data": {"token": demo_token}},
                {
                    "action": "subscribe",
                    "channel": "watchBalance",
                    "token": demo_token,
                    "data": {"token": demo_token},
                },
                {"action": "subscribe", "channel": "watchOrders"},
            ):
                assert await call(ws, msg) == denied, msg
            pong = await call(ws, {"action": "ping", "token": demo_token})
            replies.append(pong)
        return replies

    *auth_replies, pong = asyncio.run(run())
    for reply in auth_replies:
        assert reply["success"] is False
        assert reply["message"].startswith("Unknown action: ")
        assert demo_token not in reply["message"]
    assert pong == {"success": True, "message": "pong", "subscriptions": []}


def test_token_only_in_the_query_string(sim: Simulator) -> None:
    token = signin(sim, "demo")

    async def refused(**kw: Any) -> int:
        with pytest.raises(websockets.InvalidStatus) as info:
            async with websockets.connect(f"{sim.ws_url}/", open_timeout=5, **kw):
                pass
        return info.value.response.status_code

    # a token in a header or a cookie does not authenticate the connection
    assert asyncio.run(refused(additional_headers={"Authorization": f"Bearer {token}"})) == 401
    assert asyncio.run(refused(additional_headers={"Cookie": f"token={token}"})) == 401
