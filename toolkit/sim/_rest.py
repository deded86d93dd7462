"""The simulated service's REST routes (docs/contracts.md "REST routes"): signin, fetchOrder,
the limit-order listing, create, cancel and batch cancel, with auth, faults and rate limits."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolkit.sim._accounts import PROFILES, Principal
from toolkit.sim._orders import ACTIVE, FINALIZED, LIMIT_STATUSES, PRICE_DP
from toolkit.sim._state import SimState, retry_after_header

Handler = Callable[[Request, SimState, Principal], Awaitable[Response]]


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status, headers=headers)


class BadRequest(Exception):
    """Raised by input parsing; becomes a 400 with its message."""


def _state(request: Request) -> SimState:
    state: SimState = request.app.state.sim
    return state


async def _with_latency(state: SimState, response: Response) -> Response:
    latency = float(state.knobs.latency_ms)
    if latency > 0:
        await asyncio.sleep(latency / 1000)
    return response


def service_route(
    handler: Handler, *, limit_route: bool = False
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a handler with what every service route does: bearer auth (401), the per-key
    rate limit (429 + Retry-After), the inactive-route switch (404) and latency."""

    async def endpoint(request: Request) -> Response:
        state = _state(request)
        response = await _guarded(request, state, handler, limit_route)
        return await _with_latency(state, response)

    return endpoint


async def _guarded(
    request: Request, state: SimState, handler: Handler, limit_route: bool
) -> Response:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    principal = state.tokens.resolve(token.strip()) if scheme.lower() == "bearer" else None
    if principal is None:
        return error(401, "missing, invalid or expired token")
    wait = state.rate_limiter.check(principal.api_key.key, state.knobs.rate_limit_per_s)
    if wait is not None:
        return error(429, "rate limit exceeded", {"Retry-After": retry_after_header(wait)})
    if limit_route and not state.knobs.limit_routes_active:
        return error(404, "route not active")
    try:
        return await handler(request, state, principal)
    except BadRequest as exc:
        return error(400, str(exc))


async def _json_body(request: Request, *, optional: bool = False) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        if optional:
            return {}
        raise BadRequest("a JSON body is required")
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise BadRequest("the body is not valid JSON") from exc
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


async def signin(request: Request) -> Response:
    state = _state(request)
    try:
        body = await _json_body(request)
    except BadRequest as exc:
        return await _with_latency(state, error(400, str(exc)))
    key, secret = body.get("apiKey"), body.get("apiSecret")
    if not isinstance(key, str) or not isinstance(secret, str):
        return await _with_latency(state, error(400, "apiKey and apiSecret are required"))
    state.tokens.ttl_s = float(state.knobs.token_ttl_s)
    principal = state.tokens.signin(key, secret)
    if principal is None:
        return await _with_latency(state, error(401, "invalid credentials"))
    body = {"token": principal.token, "expiresAt": principal.expires_at_ms}
    return await _with_latency(state, JSONResponse(body))


async def fetch_order(request: Request, state: SimState, principal: Principal) -> Response:
    order_id = request.query_params.get("orderId")
    if not order_id:
        raise BadRequest("orderId is required")
    order = state.find(principal.account, order_id)
    if order is None:
        return error(404, "order not found")
    return JSONResponse(state.format(order))


def parse_status_filter(value: str | None) -> frozenset[str] | None:
    """ACTIVE, FINALIZED or a comma list of the nine, uppercase only; anything else drops
    the filter silently (spec 4.2)."""
    if not value:
        return None
    if value == "ACTIVE":
        return ACTIVE
    if value == "FINALIZED":
        return FINALIZED
    parts = value.split(",")
    if all(p in LIMIT_STATUSES for p in parts):
        return frozenset(parts)
    return None


async def list_limit_orders(request: Request, state: SimState, principal: Principal) -> Response:
    params = request.query_params
    raw_limit = params.get("limit")
    limit = int(state.knobs.page_default)
    if raw_limit is not None:
        try:
            limit = int(raw_limit)
        except ValueError as exc:
            raise BadRequest("limit must be an integer") from exc
    if not 1 <= limit <= int(state.knobs.page_max):
        raise BadRequest(f"limit must be between 1 and {state.knobs.page_max}")
    statuses = parse_status_filter(params.get("status"))
    if state.should_fail_listing():
        return error(503, "query temporarily unavailable, try again")
    items, token = state.list_limit_orders(
        principal.account, statuses, limit, params.get("paginationToken")
    )
    body: dict[str, Any] = {"orders": items}
    if token is not None:
        body["paginationToken"] = token
    return JSONResponse(body)


def _decimal(body: dict[str, Any], name: str) -> Decimal | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise BadRequest(f"{name} must be a decimal string")
    try:
        number = Decimal(str(value))
    except InvalidOperation as exc:
        raise BadRequest(f"{name} must be a decimal string") from exc
    if not number.is_finite() or number <= 0:
        raise BadRequest(f"{name} must be positive")
    return number


def _profile(principal: Principal, profile: Any) -> str | None:
    """The profile when it belongs to the caller's account, else None (answered 404)."""
    if not isinstance(profile, str) or not profile:
        raise BadRequest("profileId is required")
    return profile if profile in PROFILES.get(principal.account, ()) else None


async def create_limit_order(request: Request, state: SimState, principal: Principal) -> Response:
    body = await _json_body(request)
    profile = _profile(principal, body.get("profileId"))
    symbol = body.get("symbol")
    if symbol not in state.symbols:
        raise BadRequest(f"unknown symbol: {symbol}")
    side = body.get("side")
    if side not in ("buy", "sell"):
        raise BadRequest("side must be 'buy' or 'sell'")
    amount, quote = _decimal(body, "amount"), _decimal(body, "quoteAmount")
    if (amount is None) == (quote is None):
        raise BadRequest("give exactly one of amount and quoteAmount")
    limit_price = _decimal(body, "limitPrice")
    if limit_price is None:
        raise BadRequest("limitPrice is required")
    limit_price = limit_price.quantize(Decimal(1).scaleb(-PRICE_DP[symbol]))
    if limit_price <= 0:
        raise BadRequest("limitPrice is too small")
    expires_at = body.get("expiresAt")
    if isinstance(expires_at, bool) or not isinstance(expires_at, int):
        raise BadRequest("expiresAt must be a Unix timestamp in milliseconds")
    if expires_at <= state.now_ms():
        raise BadRequest("expiresAt is in the past")
    client_order_id = body.get("clientOrderId")
    if client_order_id is not None and not isinstance(client_order_id, str):
        raise BadRequest("clientOrderId must be a string")
    if profile is None:
        return error(404, "profile not found in this account")
    order = state.create_limit(
        principal.account,
        profile,
        symbol,
        side,
        amount,
        quote,
        limit_price,
        expires_at,
        client_order_id,
    )
    return JSONResponse(state.format(order), status_code=201)


_CANCEL_409 = {
    "executing": "order is executing; the cancel request is recorded and honoured if it "
    "returns to OPEN; do not resend",
    "cancelling": "cancellation already requested",
    "final": "order already finalized; nothing to cancel",
}


async def cancel_limit_order(request: Request, state: SimState, principal: Principal) -> Response:
    body = await _json_body(request, optional=True)
    profile = _profile(principal, body.get("profileId") or request.query_params.get("profileId"))
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise BadRequest("reason must be a string")
    order_id = request.path_params["order_id"]
    if profile is None:
        return error(404, "order not found in this profile")
    outcome, order = state.cancel(principal.account, profile, order_id, reason)
    if outcome == "not_found" or order is None:
        return error(404, "order not found in this profile")
    if outcome != "accepted":
        return error(409, _CANCEL_409[outcome])
    return JSONResponse(
        {"id": order.id, "status": "CANCELLING", "cancelRequestedAt": order.cancel_requested_at},
        status_code=202,
    )


async def batch_cancel(request: Request, state: SimState, principal: Principal) -> Response:
    body = await _json_body(request)
    profile = _profile(principal, body.get("profileId"))
    ids = body.get("orderIds")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise BadRequest("orderIds must be a non-empty list of order ids")
    if len(ids) > int(state.knobs.page_max):
        raise BadRequest(f"at most {state.knobs.page_max} orderIds per call")
    reason = body.get("reason") if isinstance(body.get("reason"), str) else None
    results: list[dict[str, Any]] = []
    for order_id in ids:
        if profile is None:
            results.append({"id": order_id, "accepted": False, "status": "NOT_FOUND"})
            continue
        outcome, order = state.cancel(principal.account, profile, order_id, reason, batch=True)
        if outcome == "accepted" and order is not None:
            results.append(
                {
                    "id": order_id,
                    "accepted": True,
                    "status": "CANCELLING",
                    "cancelRequestedAt": order.cancel_requested_at,
                }
            )
        else:
            status = order.status if order is not None else "NOT_FOUND"
            results.append({"id": order_id, "accepted": False, "status": status})
    return JSONResponse({"orders": results}, status_code=202)


def routes() -> list[Route]:
    return [
        Route("/auth/signin", signin, methods=["POST"]),
        Route("/orders/fetchOrder", service_route(fetch_order), methods=["GET"]),
        Route(
            "/orders/limit/orders",
            service_route(list_limit_orders, limit_route=True),
            methods=["GET"],
        ),
        Route(
            "/orders/limit/orders",
            service_route(create_limit_order, limit_route=True),
            methods=["POST"],
        ),
        Route(
            "/orders/limit/orders/cancel",
            service_route(batch_cancel, limit_route=True),
            methods=["POST"],
        ),
        Route(
            "/orders/limit/orders/{order_id}/cancel",
            service_route(cancel_limit_order, limit_route=True),
            methods=["PATCH"],
        ),
    ]
