"""Helpers shared by the simulator tests: the order field sets of the spec, signin and an
authenticated HTTP client, limit orders over REST, and JSON calls on a WebSocket.

Imported as ``from _helpers import ...``: pytest puts this folder on ``sys.path`` (rootdir
based, no ``__init__.py`` in ``tests/``). The fixtures built on them live in ``conftest.py``."""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

import httpx

from toolkit.sim._accounts import API_KEYS

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

    from toolkit.sim import Simulator

# ------------------------------------------------------------------ order field sets
BASE = {
    "id",
    "exchange",
    "symbol",
    "side",
    "type",
    "status",
    "errorMessage",
    "amount",
    "quoteAmount",
    "quoteAmountOriginal",
    "remainingQuoteAmount",
    "average",
    "createdAt",
    "updatedAt",
    "channel",
    "rule",
    "operationalFees",
}
OPTIONAL_BASE = {"executedAt", "executedExchange", "evaluatedTickers"}
EXTENDED = {
    "account",
    "orderPoolId",
    "filledStatus",
    "amountOriginal",
    "remainingAmount",
    "filled",
    "remaining",
    "cost",
    "price",
    "info",
    "fee",
    "trades",
}
LIMIT = {"limitPrice", "expiresAt", "statusGroup", "statusReason"}


# ------------------------------------------------------------------ auth
def signin(sim: Simulator, key: str = "demo") -> str:
    """A bearer token of API key ``key``."""
    resp = httpx.post(
        f"{sim.base_url}/auth/signin", json={"apiKey": key, "apiSecret": API_KEYS[key].secret}
    )
    resp.raise_for_status()
    token: str = resp.json()["token"]
    return token


def session(sim: Simulator, key: str = "demo") -> httpx.Client:
    """An HTTP client on ``sim`` carrying the bearer token of ``key`` (the caller closes it)."""
    http = httpx.Client(base_url=sim.base_url, timeout=10)
    http.headers["Authorization"] = f"Bearer {signin(sim, key)}"
    return http


# ------------------------------------------------------------------ limit orders over REST
def future_ms(seconds: float) -> int:
    """Unix milliseconds ``seconds`` from now."""
    return int((time.time() + seconds) * 1000)


def limit_body(*, expires_in_s: float = 3600, **over: Any) -> dict[str, Any]:
    """A valid limit-order body (buy 0.001 BTC/BRL at 1000 on P1), ``over`` replacing fields;
    a field set to ``None`` is left out."""
    body: dict[str, Any] = {
        "profileId": "P1",
        "symbol": "BTC/BRL",
        "side": "buy",
        "amount": "0.001",
        "limitPrice": "1000",
        "expiresAt": future_ms(expires_in_s),
    }
    body.update(over)
    return {k: v for k, v in body.items() if v is not None}


def create_limit(http: httpx.Client, **over: Any) -> dict[str, Any]:
    """Creates a limit order (``limit_body(**over)``), asserting 201; returns the order."""
    resp = http.post("/orders/limit/orders", json=limit_body(**over))
    assert resp.status_code == 201, resp.text
    order: dict[str, Any] = resp.json()
    return order


def create_limit_id(http: httpx.Client, **over: Any) -> str:
    """``create_limit``, returning the order id only."""
    order_id: str = create_limit(http, **over)["id"]
    return order_id


def fetch_order(http: httpx.Client, order_id: str) -> dict[str, Any]:
    """fetchOrder of ``order_id``, asserting 200."""
    resp = http.get("/orders/fetchOrder", params={"orderId": order_id})
    assert resp.status_code == 200, resp.text
    order: dict[str, Any] = resp.json()
    return order


def order_status(http: httpx.Client, order_id: str) -> str:
    value: str = fetch_order(http, order_id)["status"]
    return value


def cancel(http: httpx.Client, order_id: str, **body: Any) -> httpx.Response:
    """PATCH cancel of ``order_id`` (profile P1 unless ``body`` names one)."""
    body.setdefault("profileId", "P1")
    return http.patch(f"/orders/limit/orders/{order_id}/cancel", json=body)


def wait_status(
    http: httpx.Client, order_id: str, want: str, timeout: float = 5, poll: float = 0.01
) -> dict[str, Any]:
    """Polls fetchOrder every ``poll`` s until ``order_id`` has status ``want``; fails after
    ``timeout`` s. Returns the order as last fetched."""
    deadline = time.monotonic() + timeout
    while (order := fetch_order(http, order_id))["status"] != want:
        assert time.monotonic() < deadline, f"still {order['status']}, wanted {want}"
        time.sleep(poll)
    return order


# ------------------------------------------------------------------ WebSocket
async def recv(ws: ClientConnection) -> dict[str, Any]:
    """The next message on ``ws``, decoded (5 s at the most)."""
    reply: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 5))
    return reply


async def call(ws: ClientConnection, msg: dict[str, Any] | str) -> dict[str, Any]:
    """Sends ``msg`` (a dict as JSON, a string as is) and returns the next message."""
    await ws.send(msg if isinstance(msg, str) else json.dumps(msg))
    return await recv(ws)
