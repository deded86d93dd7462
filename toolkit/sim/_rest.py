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

from toolkit.profile import ServiceProfile, get_path
from toolkit.sim._accounts import PROFILES, Principal
from toolkit.sim._orders import LIMIT_STATUSES, PRICE_DP
from toolkit.sim._state import SimState, retry_after_header

Handler = Callable[[Request, SimState, Principal], Awaitable[Response]]


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """An error of the control API (``{"message": ...}``, whatever the profile)."""
    return JSONResponse({"message": message}, status_code=status, headers=headers)


def service_error(
    state: SimState, status: int, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """An error of a service route: the text under ``rest.error_message_field``."""
    return JSONResponse(state.shape.error(message), status_code=status, headers=headers)


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


#: how often a request held by a silent service looks whether to go on holding it
_SILENT_POLL_S = 0.05


def goes_silent(state: SimState) -> bool:
    """Whether this request of a service route meets a silent service (knobs ``silent``
    and ``silent_after_requests``, which counts down here)."""
    knobs = state.knobs
    if not knobs.silent and knobs.silent_after_requests is not None:
        if knobs.silent_after_requests <= 0:
            knobs.silent, knobs.silent_after_requests = True, None
        else:
            knobs.silent_after_requests -= 1
    return knobs.silent


async def hold_silently(request: Request, state: SimState) -> Response:
    """Hold a request without answering while the service is silent (the client sees a
    connection that was taken and never answered); once its client gave up there is
    no one to answer. If ``silent`` is switched off meanwhile, a 503 (nothing was done)."""
    while state.knobs.silent:
        if await request.is_disconnected():
            break
        await asyncio.sleep(_SILENT_POLL_S)
    return service_error(state, 503, "the service was silent and did not process this request")


def service_route(
    handler: Handler, *, limit_route: bool = False
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a handler with what every service route does: token auth per ``rest.auth_*``
    (401), the per-key rate limit (429 + Retry-After), the inactive-route switch (404)
    and latency."""

    async def endpoint(request: Request) -> Response:
        state = _state(request)
        if goes_silent(state):
            return await hold_silently(request, state)
        response = await _guarded(request, state, handler, limit_route)
        return await _with_latency(state, response)

    return endpoint


async def _guarded(
    request: Request, state: SimState, handler: Handler, limit_route: bool
) -> Response:
    principal = state.tokens.resolve(request_token(request, state.profile))
    if principal is None:
        return service_error(state, 401, "missing, invalid or expired token")
    wait = state.rate_limiter.check(principal.api_key.key, state.knobs.rate_limit_per_s)
    if wait is not None:
        retry = {"Retry-After": retry_after_header(wait)}
        return service_error(state, 429, "rate limit exceeded", retry)
    if limit_route and not state.knobs.limit_routes_active:
        return service_error(state, 404, "route not active")
    try:
        return await handler(request, state, principal)
    except BadRequest as exc:
        return service_error(state, _refused(state), str(exc))


def request_token(request: Request, profile: ServiceProfile) -> str | None:
    """The token of a REST request: header ``rest.auth_header``, value ``<scheme> <token>``
    (scheme case-insensitive) or the bare token when ``rest.auth_scheme`` is empty."""
    header = request.headers.get(profile.rest.auth_header, "")
    scheme = profile.rest.auth_scheme
    if not scheme:
        return header.strip() or None
    given, _, token = header.strip().partition(" ")
    if given.lower() != scheme.lower():
        return None
    return token.strip() or None


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


def _refused(state: SimState) -> int:
    """The status of an input refusal (knob ``validation_status``: 400, or a gateway's
    422), the sign-in's included."""
    return int(state.knobs.validation_status)


async def signin(request: Request) -> Response:
    """``signin.path``: key and secret at ``signin.key_field``/``secret_field``; the token
    and its expiry at ``signin.token_field``/``expiry_field`` (``expiry_kind``/``_unit``)."""
    state = _state(request)
    if goes_silent(state):
        return await hold_silently(request, state)
    si = state.profile.signin
    try:
        body = await _json_body(request)
    except BadRequest as exc:
        return await _with_latency(state, service_error(state, _refused(state), str(exc)))
    key, secret = get_path(body, si.key_field), get_path(body, si.secret_field)
    if not isinstance(key, str) or not isinstance(secret, str):
        text = f"{si.key_field} and {si.secret_field} are required"
        return await _with_latency(state, service_error(state, _refused(state), text))
    state.tokens.ttl_s = float(state.knobs.token_ttl_s)
    principal = state.tokens.signin(key, secret)
    if principal is None:
        status = si.bad_credentials_statuses[0]
        return await _with_latency(state, service_error(state, status, "invalid credentials"))
    out = state.shape.signin(principal.token, principal.expires_at_ms, state.now_ms())
    return await _with_latency(state, JSONResponse(out))


async def fetch_order(request: Request, state: SimState, principal: Principal) -> Response:
    param = state.profile.rest.fetch_order_param
    order_id = request.query_params.get(param)
    if not order_id:
        raise BadRequest(f"{param} is required")
    order = state.find(principal.account, order_id)
    if order is None:
        return service_error(state, 404, "order not found")
    return JSONResponse(state.format(order))


def parse_status_filter(
    value: str | None, active: frozenset[str], finalized: frozenset[str]
) -> frozenset[str] | None:
    """ACTIVE, FINALIZED (members per the profile) or a comma list of the nine, uppercase
    only; anything else drops the filter silently (spec 4.2)."""
    if not value:
        return None
    if value == "ACTIVE":
        return active
    if value == "FINALIZED":
        return finalized
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
    low, high = int(state.knobs.page_min), int(state.knobs.page_max)
    if not low <= limit <= high:
        raise BadRequest(f"limit must be between {low} and {high}")
    shape = state.shape
    statuses = parse_status_filter(params.get("status"), shape.active, shape.finalized)
    if state.should_fail_listing():
        return service_error(state, 503, "query temporarily unavailable, try again")
    fault = state.listing_fault(statuses, params.get("paginationToken"))
    if fault is not None:
        return service_error(state, fault, f"listing page fault ({fault}, knob listing_fault_page)")
    items, token = state.list_limit_orders(
        principal.account, statuses, limit, params.get("paginationToken")
    )
    if state.knobs.numeric_ids != "off":
        items = [{**i, "id": state.wire_value(i["id"], listing=True)} for i in items]
    body: dict[str, Any] = {"orders": [shape.list_item(item) for item in items]}
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
    expires_at = state.shape.ms_from_input(body.get("expiresAt"))
    if expires_at is None:
        unit = "seconds" if state.shape.in_seconds else "milliseconds"
        raise BadRequest(f"expiresAt must be a Unix timestamp in {unit}")
    if expires_at <= state.now_ms():
        raise BadRequest("expiresAt is in the past")
    client_order_id = body.get("clientOrderId")
    if client_order_id is not None and not isinstance(client_order_id, str):
        raise BadRequest("clientOrderId must be a string")
    if profile is None:
        return service_error(state, 404, "profile not found in this account")
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
    """``profileId`` where ``rest.cancel_profile_in`` says (``body`` also takes the query,
    as the default always did, unless the ``cancel_profile_strict`` knob is set); success
    answered with ``rest.cancel_status``."""
    body = await _json_body(request, optional=True)
    query = request.query_params
    given = query.get("profileId")
    if state.profile.rest.cancel_profile_in == "body":
        given = body.get("profileId") or (None if state.knobs.cancel_profile_strict else given)
    profile = _profile(principal, given)
    reason = body.get("reason", query.get("reason"))
    if reason is not None and not isinstance(reason, str):
        raise BadRequest("reason must be a string")
    order_id = request.path_params["order_id"]
    if profile is None:
        return service_error(state, 404, "order not found in this profile")
    outcome, order = state.cancel(principal.account, profile, order_id, reason)
    if outcome == "not_found" or order is None:
        return service_error(state, 404, "order not found in this profile")
    if outcome != "accepted":
        return service_error(state, 409, _CANCEL_409[outcome])
    out = {
        "id": state.wire_value(order.id),
        "status": "CANCELLING",
        "cancelRequestedAt": order.cancel_requested_at,
    }
    return JSONResponse(state.shape.stamp(out), status_code=state.profile.rest.cancel_status)


async def batch_cancel(request: Request, state: SimState, principal: Principal) -> Response:
    body = await _json_body(request)
    profile = _profile(principal, body.get("profileId"))
    field = state.profile.rest.batch_ids_field
    ids = get_path(body, field)
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise BadRequest(f"{field} must be a non-empty list of order ids")
    most = int(state.knobs.batch_cancel_max)
    if len(ids) > most:
        raise BadRequest(f"at most {most} {field} per call")
    reason = body.get("reason") if isinstance(body.get("reason"), str) else None
    results: list[dict[str, Any]] = []
    for order_id in ids:
        if profile is None:
            results.append({"id": order_id, "accepted": False, "status": "NOT_FOUND"})
            continue
        outcome, order = state.cancel(principal.account, profile, order_id, reason, batch=True)
        if outcome == "accepted" and order is not None:
            accepted = {
                "id": order_id,
                "accepted": True,
                "status": "CANCELLING",
                "cancelRequestedAt": order.cancel_requested_at,
            }
            results.append(state.shape.stamp(accepted))
        else:
            status = order.status if order is not None else "NOT_FOUND"
            results.append({"id": order_id, "accepted": False, "status": status})
    return JSONResponse({"orders": results}, status_code=202)


def routes(profile: ServiceProfile) -> list[Route]:
    """The service routes at the profile's paths (``signin.path``, ``rest.*_path``)."""
    rest = profile.rest
    return [
        Route(profile.signin.path, signin, methods=["POST"]),
        Route(rest.fetch_order_path, service_route(fetch_order), methods=["GET"]),
        Route(
            rest.limit_orders_path,
            service_route(list_limit_orders, limit_route=True),
            methods=["GET"],
        ),
        Route(
            rest.limit_orders_path,
            service_route(create_limit_order, limit_route=True),
            methods=["POST"],
        ),
        Route(
            rest.batch_cancel_path,
            service_route(batch_cancel, limit_route=True),
            methods=["POST"],
        ),
        Route(
            rest.cancel_path,
            service_route(cancel_limit_order, limit_route=True),
            methods=["PATCH"],
        ),
    ]
