"""The simulator's control API under ``/_sim/`` (no auth, simulator only) and ``SimControl``,
the synchronous Python helper tests and notebooks use to drive it."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import quote

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolkit.sim._accounts import PROFILES
from toolkit.sim._ids import wire_id
from toolkit.sim._rest import error
from toolkit.sim._state import InvalidCommand, SimState


def _state(request: Request) -> SimState:
    state: SimState = request.app.state.sim
    return state


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    body = json.loads(raw)
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    return body


def _positive(body: dict[str, Any], name: str) -> Decimal | None:
    value = body.get(name)
    if value is None:
        return None
    number = Decimal(str(value))
    if not number.is_finite() or number <= 0:
        raise ValueError(f"{name} must be positive")
    return number


async def get_knobs(request: Request) -> Response:
    return JSONResponse(_state(request).knobs.as_dict())


async def patch_knobs(request: Request) -> Response:
    state = _state(request)
    try:
        changes = await _body(request)
        engine = changes.pop("engine", None)
        state.knobs.update(**changes)
    except (ValueError, TypeError) as exc:
        return error(400, str(exc))
    if engine is not None:
        await state.set_engine(bool(engine))
    state.tokens.ttl_s = float(state.knobs.token_ttl_s)
    return JSONResponse(state.knobs.as_dict())


async def get_profile(request: Request) -> Response:
    """The service profile this simulator serves (``ServiceProfile.to_dict``)."""
    return JSONResponse(_state(request).profile.to_dict())


async def market_order(request: Request) -> Response:
    state = _state(request)
    try:
        body = await _body(request)
        account = body.get("account", "A1")
        symbol, side = body.get("symbol"), body.get("side")
        outcome = body.get("outcome", "closed")
        if account not in PROFILES:
            raise ValueError(f"unknown account: {account}")
        if symbol not in state.symbols:
            raise ValueError(f"unknown symbol: {symbol}")
        if side not in ("buy", "sell"):
            raise ValueError("side must be 'buy' or 'sell'")
        if outcome not in ("closed", "rejected", "pending", "executed", "expired"):
            raise ValueError(f"unknown outcome: {outcome}")
        amount, quote = _positive(body, "amount"), _positive(body, "quoteAmount")
        if amount is not None and quote is not None:
            raise ValueError("give at most one of amount and quoteAmount")
        if amount is None and quote is None:
            quote = Decimal(1000)
    except (ValueError, InvalidOperation) as exc:
        return error(400, str(exc))
    order = state.market_order(account, symbol, side, amount, quote, outcome)
    return JSONResponse(state.format(order))


async def advance(request: Request) -> Response:
    state = _state(request)
    try:
        body = await _body(request)
        to = body.get("to")
        if not isinstance(to, str):
            raise ValueError("'to' is required")
        reason = body.get("reason")
        order = state.advance(request.path_params["order_id"], to, reason)
    except KeyError:
        return error(404, "order not found")
    except InvalidCommand as exc:
        return error(409, str(exc))
    except ValueError as exc:
        return error(400, str(exc))
    return JSONResponse(state.format(order))


async def move_price(request: Request) -> Response:
    state = _state(request)
    try:
        body = await _body(request)
        symbol = body.get("symbol")
        if symbol not in state.symbols:
            raise ValueError(f"unknown symbol: {symbol}")
        price = _positive(body, "price")
        if price is None:
            raise ValueError("price is required")
    except (ValueError, InvalidOperation) as exc:
        return error(400, str(exc))
    triggered = state.move_price(symbol, price)
    return JSONResponse(
        {"ticker": state.market.ticker(symbol, state.now_ms()), "triggered": triggered}
    )


async def order_ids(request: Request) -> Response:
    state = _state(request)
    account = request.query_params.get("account", "A1")
    kind = request.query_params.get("type")  # market or limit; all orders without it
    mode, base = state.knobs.numeric_ids, state.knobs.numeric_id_base
    # as a client reads them (``numeric_ids``: the decimal form of the number)
    ids = [
        wire_id(oid, mode, base)
        for oid in state.by_account.get(account, [])
        if kind is None or state.orders[oid].type == kind
    ]
    return JSONResponse({"ids": ids})


async def order_events(request: Request) -> Response:
    state = _state(request)
    order = state.lookup(request.path_params["order_id"])
    if order is None:
        return error(404, "order not found")
    return JSONResponse({"events": list(state.events.get(order.id, []))})


async def balances(request: Request) -> Response:
    state = _state(request)
    return JSONResponse(state.balance_message(request.query_params.get("account", "A1")))


async def drop(request: Request) -> Response:
    return JSONResponse({"dropped": _state(request).bus.drop_all()})


async def engine(request: Request) -> Response:
    state = _state(request)
    try:
        body = await _body(request)
        running = body.get("running")
        if not isinstance(running, bool):
            raise ValueError("'running' must be a boolean")
    except ValueError as exc:
        return error(400, str(exc))
    await state.set_engine(running)
    return JSONResponse({"running": state.engine.running})


def routes() -> list[Route]:
    return [
        Route("/_sim/knobs", get_knobs, methods=["GET"]),
        Route("/_sim/knobs", patch_knobs, methods=["PATCH"]),
        Route("/_sim/profile", get_profile, methods=["GET"]),
        Route("/_sim/orders/market", market_order, methods=["POST"]),
        Route("/_sim/orders/{order_id}/advance", advance, methods=["POST"]),
        Route("/_sim/orders/{order_id}/events", order_events, methods=["GET"]),
        Route("/_sim/orders", order_ids, methods=["GET"]),
        Route("/_sim/prices", move_price, methods=["POST"]),
        Route("/_sim/balances", balances, methods=["GET"]),
        Route("/_sim/ws/drop", drop, methods=["POST"]),
        Route("/_sim/engine", engine, methods=["POST"]),
    ]


class SimControlError(RuntimeError):
    """The control API refused a command; carries the HTTP status and the message."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"{status_code}: {message}")
        self.status_code = status_code
        self.message = message


class SimControl:
    """Synchronous driver of a running simulator's ``/_sim/`` API."""

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.base_url = base_url
        self._http = httpx.Client(base_url=base_url, timeout=timeout)

    def __repr__(self) -> str:
        return f"SimControl({self.base_url!r})"

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        response = self._http.request(method, path, **kw)
        if response.status_code >= 400:
            try:
                message = str(response.json().get("message", response.text))
            except ValueError:
                message = response.text
            raise SimControlError(response.status_code, message)
        return response.json()

    def knobs(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/_sim/knobs")
        return result

    def set_knobs(self, **knobs: Any) -> dict[str, Any]:
        result: dict[str, Any] = self._call("PATCH", "/_sim/knobs", json=knobs)
        return result

    def profile(self) -> dict[str, Any]:
        """The served service profile as nested tables (``ServiceProfile.from_dict`` reads
        it back)."""
        result: dict[str, Any] = self._call("GET", "/_sim/profile")
        return result

    def market_order(self, **kw: Any) -> dict[str, Any]:
        """Place a market order: ``symbol``, ``side``, ``amount`` or ``quoteAmount``,
        ``account`` ("A1"), ``outcome`` ("closed" | "rejected" | "pending")."""
        body = {k: (str(v) if isinstance(v, Decimal) else v) for k, v in kw.items()}
        if "quote_amount" in body:
            body["quoteAmount"] = body.pop("quote_amount")
        result: dict[str, Any] = self._call("POST", "/_sim/orders/market", json=body)
        return result

    def advance(self, order_id: str, to: str, reason: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"to": to}
        if reason is not None:
            body["reason"] = reason
        path = f"/_sim/orders/{quote(order_id, safe='')}/advance"
        result: dict[str, Any] = self._call("POST", path, json=body)
        return result

    def move_price(self, symbol: str, price: float | str | Decimal) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "POST", "/_sim/prices", json={"symbol": symbol, "price": str(price)}
        )
        return result

    def order_ids(self, account: str = "A1", type: str | None = None) -> list[str]:
        """The ids of ``account``'s orders as a client reads them, oldest first; only the
        ``type`` ones (``"market"``, ``"limit"``) when given."""
        params = {"account": account} if type is None else {"account": account, "type": type}
        ids: list[str] = self._call("GET", "/_sim/orders", params=params)["ids"]
        return ids

    def events(self, order_id: str) -> list[str]:
        """Statuses published on watchOrders for the order so far, in order."""
        path = f"/_sim/orders/{quote(order_id, safe='')}/events"
        events: list[str] = self._call("GET", path)["events"]
        return events

    def balances(self, account: str = "A1") -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/_sim/balances", params={"account": account})
        return result

    def drop_connections(self) -> int:
        return int(self._call("POST", "/_sim/ws/drop")["dropped"])

    def set_engine(self, running: bool) -> bool:
        return bool(self._call("POST", "/_sim/engine", json={"running": running})["running"])
