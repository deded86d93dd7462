"""The ``Client`` facade people hold in a notebook: async methods (``a...``) for every REST
call of the service, each with a sync twin, plus the loaders and ``stream()``."""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from toolkit.client import _cancel
from toolkit.client._auth import TokenAuth
from toolkit.client._cancel import CancelResult
from toolkit.client._pagination import Paginator
from toolkit.client._settings import Settings, mask_key
from toolkit.client._sync import LoopThread
from toolkit.client._transport import AsyncRest, Route, Sleep, decode_json
from toolkit.errors import (
    Conflict,
    InvalidRequest,
    InvalidResponse,
    OrderNotFound,
    RouteNotActive,
    ToolkitError,
    redact_url,
)
from toolkit.protocol import (
    order_id_path_segment,
    validate_decimal,
    validate_limit,
    validate_order_id,
    validate_order_ids,
    validate_profile_id,
    validate_side,
    validate_status_filter,
    validate_symbol,
)

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client._loaders import TimeBound
    from toolkit.frames._frames import OrderFrames
    from toolkit.stream._session import StreamSession

T = TypeVar("T")


class ClientState(enum.Enum):
    """A client's life: created, used, closed; a closed client never reopens."""

    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


class Client:
    """The trading service, from Python.

    ``Client(base_url, ws_url=None, api_key=None, api_secret=None, *, profile_id=None,
    concurrency=16, timeout=10.0, auth=None, **settings)`` or ``Client.from_env()``.
    Any :class:`~toolkit.client._settings.Settings` field can be given as a keyword. ``auth``
    replaces the default :class:`~toolkit.client._auth.TokenAuth` with any ``httpx.Auth``.

    Every network call is a coroutine (``afetch_order``...); the twin without the ``a``
    runs it on the client's private loop thread and waits, so it works in a script and
    inside Jupyter's running loop alike. Use as ``with``/``async with``, or call
    ``close()``/``aclose()``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        ws_url: str | None = None,
        api_key: str | None = None,
        api_secret: str | None = None,
        *,
        profile_id: str | None = None,
        concurrency: int | None = None,
        timeout: float | None = None,
        auth: httpx.Auth | None = None,
        settings: Settings | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        event_hooks: Mapping[str, list[Callable[..., Any]]] | None = None,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        **options: Any,
    ) -> None:
        given = {
            "base_url": base_url,
            "ws_url": ws_url,
            "api_key": api_key,
            "api_secret": api_secret,
            "profile_id": profile_id,
            "concurrency": concurrency,
            "timeout": timeout,
        }
        changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        unknown = sorted(set(options) - Settings.field_names())
        if unknown:
            raise InvalidRequest(f"unknown setting(s): {', '.join(unknown)}")
        changes.update(options)
        if settings is None:
            if "base_url" not in changes:
                raise InvalidRequest("base_url is required (or use Client.from_env())")
            settings = Settings(**changes)
        elif changes:
            settings = settings.replace(**changes)
        self._settings = settings
        if auth is None and settings.api_key and settings.api_secret:
            auth = TokenAuth.from_settings(settings, clock=clock)
        self._auth = auth
        self._rest = AsyncRest(
            settings,
            auth,
            transport=transport,
            event_hooks=event_hooks,
            sleep=sleep,
            secrets=self._secret_values,
        )
        self._loop_thread = LoopThread("toolkit-client-loop")
        self._state = ClientState.UNOPENED

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **options: Any) -> Client:
        """A client configured from TOOLKIT_ENV, TOOLKIT_BASE_URL, TOOLKIT_WS_URL,
        TOOLKIT_API_KEY, TOOLKIT_API_SECRET (see :meth:`Settings.from_env`)."""
        client_only = {
            k: options.pop(k)
            for k in ("auth", "transport", "event_hooks", "sleep", "clock")
            if k in options
        }
        return cls(settings=Settings.from_env(environ, **options), **client_only)

    # -- identity and life ----------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def state(self) -> ClientState:
        return self._state

    @property
    def auth(self) -> httpx.Auth | None:
        return self._auth

    @property
    def rest(self) -> AsyncRest:
        """The REST layer (diagnostics: ``rest.sent``, ``rest.retries``)."""
        return self._rest

    def __repr__(self) -> str:
        return (
            f"Client(base_url={self._settings.base_url!r}, "
            f"environment={self._settings.environment.value!r}, "
            f"api_key={mask_key(self._settings.api_key)!r}, state={self._state.value!r})"
        )

    def _secret_values(self) -> tuple[str | None, ...]:
        values: list[str | None] = [self._settings.api_secret, self._settings.api_key]
        if isinstance(self._auth, TokenAuth):
            values.extend(self._auth.secrets)
        return tuple(values)

    def _open(self) -> None:
        if self._state is ClientState.CLOSED:
            raise RuntimeError("the client is closed; create a new one")
        self._state = ClientState.OPEN

    async def aclose(self) -> None:
        """Close the connection pools; the client cannot be used afterwards."""
        if self._state is ClientState.CLOSED:
            return
        self._state = ClientState.CLOSED
        await self._rest.aclose()
        loop = self._loop_thread.loop
        if self._loop_thread.running and loop is not None:
            if self._loop_thread.in_own_thread():
                return
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._rest.aclose(), loop))
            self._loop_thread.stop()

    def close(self) -> None:
        """Sync twin of :meth:`aclose`."""
        if self._state is ClientState.CLOSED:
            return
        self._state = ClientState.CLOSED
        if self._loop_thread.running:
            self._loop_thread.run(self._rest.aclose())
        self._loop_thread.stop()

    async def __aenter__(self) -> Client:
        self._open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __enter__(self) -> Client:
        self._open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._state is ClientState.CLOSED:
            coro.close()
            raise RuntimeError("the client is closed; create a new one")
        return self._loop_thread.run(coro)

    async def _request(
        self,
        method: str,
        path: str,
        *,
        route: Route,
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
        idempotent: bool | None = None,
    ) -> httpx.Response:
        self._open()
        return await self._rest.request(
            method, path, route=route, params=params, json_body=json_body, idempotent=idempotent
        )

    # -- auth -----------------------------------------------------------------------------

    async def atoken(self) -> str:
        """A valid operational token (signs in when needed), e.g. for the WebSocket URL."""
        self._open()
        auth = self._auth
        if isinstance(auth, TokenAuth):
            return await auth.async_token(self._rest.send_unauthenticated)
        hook = getattr(auth, "async_token", None)
        if hook is not None:
            token: str = await hook(self._rest.send_unauthenticated)
            return token
        raise InvalidRequest(
            "no way to obtain an operational token: give api_key/api_secret, or an auth= "
            "object with an async_token(send) method"
        )

    def token(self) -> str:
        return self._run(self.atoken())

    async def asignin(self) -> None:
        """Sign in now, replacing any token held (the default auth only)."""
        if not isinstance(self._auth, TokenAuth):
            raise InvalidRequest("asignin() needs the default TokenAuth (api_key/api_secret)")
        self._auth.invalidate()
        await self.atoken()

    def signin(self) -> None:
        self._run(self.asignin())

    # -- orders -----------------------------------------------------------------------------

    async def afetch_order_raw(self, order_id: str) -> bytes:
        """The fetchOrder response body as the service sent it."""
        oid = validate_order_id(order_id)
        s = self._settings
        response = await self._request(
            "GET", s.fetch_order_path, route=Route.FETCH_ORDER, params={s.fetch_order_param: oid}
        )
        return response.content

    def fetch_order_raw(self, order_id: str) -> bytes:
        return self._run(self.afetch_order_raw(order_id))

    async def afetch_order(self, order_id: str) -> dict[str, Any]:
        """The order's current state (``GET /orders/fetchOrder``); OrderNotFound on 404."""
        oid = validate_order_id(order_id)
        s = self._settings
        response = await self._request(
            "GET", s.fetch_order_path, route=Route.FETCH_ORDER, params={s.fetch_order_param: oid}
        )
        return _as_order(decode_json(response), response)

    def fetch_order(self, order_id: str) -> dict[str, Any]:
        return self._run(self.afetch_order(order_id))

    def _paginator(
        self, status: str | Iterable[str] | None, limit: int | None, max_pages: int | None
    ) -> Paginator:
        s = self._settings
        status_value = validate_status_filter(status)
        if status_value is not None and s.status_case == "lower":
            status_value = status_value.lower()
        return Paginator(
            status=status_value,
            limit=validate_limit(s.page_size if limit is None else limit, s.page_size_max),
            max_pages=_positive_int(s.max_pages if max_pages is None else max_pages, "max_pages"),
        )

    def aiter_limit_orders(
        self,
        status: str | Iterable[str] | None = None,
        *,
        limit: int | None = None,
        max_pages: int | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Every limit-order list item matching ``status`` (spec 4.2), page by page.

        The arguments are checked now, before anything is sent. An order seen on an
        earlier page is not yielded again. A 503 is retried on the same token; a listing
        that restarts raises PaginationLoop; 404 raises RouteNotActive.
        """
        paginator = self._paginator(status, limit, max_pages)
        return self._pages(paginator)

    async def _pages(self, paginator: Paginator) -> AsyncIterator[dict[str, Any]]:
        while not paginator.done:
            response = await self._request(
                "GET",
                self._settings.limit_orders_path,
                route=Route.LIST_LIMIT,
                params=paginator.params(),
                idempotent=True,
            )
            try:
                fresh = paginator.feed(decode_json(response))
            except ToolkitError as exc:
                if exc.method is None:
                    exc.method, exc.url = "GET", redact_url(response.request.url)
                raise
            for item in fresh:
                yield item

    def iter_limit_orders(
        self,
        status: str | Iterable[str] | None = None,
        *,
        limit: int | None = None,
        max_pages: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        agen = self.aiter_limit_orders(status, limit=limit, max_pages=max_pages)
        if self._state is ClientState.CLOSED:
            raise RuntimeError("the client is closed; create a new one")
        return self._loop_thread.iterate(agen)

    async def alist_limit_orders(
        self,
        status: str | Iterable[str] | None = None,
        *,
        limit: int | None = None,
        max_pages: int | None = None,
    ) -> list[dict[str, Any]]:
        """All list items, each order once, in the newest ``updatedAt`` seen."""
        paginator = self._paginator(status, limit, max_pages)
        async for _ in self._pages(paginator):
            pass
        return list(paginator.latest.values())

    def list_limit_orders(
        self,
        status: str | Iterable[str] | None = None,
        *,
        limit: int | None = None,
        max_pages: int | None = None,
    ) -> list[dict[str, Any]]:
        return self._run(self.alist_limit_orders(status, limit=limit, max_pages=max_pages))

    async def acreate_limit_order(
        self,
        symbol: str,
        side: str,
        limit_price: object,
        *,
        amount: object = None,
        quote_amount: object = None,
        expires_at: datetime | int | None = None,
        profile_id: str | None = None,
        client_order_id: str | None = None,
    ) -> dict[str, Any]:
        """Create a limit order; returns the whole order (OPEN, or REJECTED with its
        ``statusReason``). Give exactly one of ``amount`` (crypto) and ``quote_amount``
        (fiat). ``expires_at``: aware datetime or Unix ms; default 24 h from now.
        Never retried on 503 or a network error (it is not idempotent)."""
        body: dict[str, Any] = {
            "profileId": validate_profile_id(profile_id or self._settings.profile_id),
            "symbol": validate_symbol(symbol),
            "side": validate_side(side),
            "limitPrice": validate_decimal(limit_price, "limit_price"),
        }
        if (amount is None) == (quote_amount is None):
            raise InvalidRequest("give exactly one of amount= and quote_amount=")
        if amount is not None:
            body["amount"] = validate_decimal(amount, "amount")
        else:
            body["quoteAmount"] = validate_decimal(quote_amount, "quote_amount")
        body["expiresAt"] = _expires_ms(expires_at)
        if client_order_id is not None:
            body["clientOrderId"] = validate_order_id(client_order_id)
        response = await self._request(
            "POST",
            self._settings.limit_orders_path,
            route=Route.CREATE_LIMIT,
            json_body=body,
            idempotent=False,
        )
        return _as_order(decode_json(response), response)

    def create_limit_order(
        self,
        symbol: str,
        side: str,
        limit_price: object,
        *,
        amount: object = None,
        quote_amount: object = None,
        expires_at: datetime | int | None = None,
        profile_id: str | None = None,
        client_order_id: str | None = None,
    ) -> dict[str, Any]:
        return self._run(
            self.acreate_limit_order(
                symbol,
                side,
                limit_price,
                amount=amount,
                quote_amount=quote_amount,
                expires_at=expires_at,
                profile_id=profile_id,
                client_order_id=client_order_id,
            )
        )

    async def acancel_limit_order(
        self, order_id: str, *, profile_id: str | None = None, reason: str | None = None
    ) -> CancelResult:
        """Cancel one limit order (spec 4.3) and say what that achieved.

        202 -> ACCEPTED. 409 is never retried: the order is read with fetchOrder and the
        result says DEFERRED (executing: recorded, do not resend), ALREADY_FINAL or
        ALREADY_CANCELLING. 404 raises RouteNotActive when the limit routes are not active
        here, else OrderNotFound (unknown order, or not in that profile).
        """
        oid = validate_order_id(order_id)
        path = self._settings.cancel_path.format(order_id=order_id_path_segment(oid))
        pid = validate_profile_id(profile_id or self._settings.profile_id)
        body: dict[str, Any] = {}
        params: dict[str, str] = {}
        if reason is not None:
            if not isinstance(reason, str):
                raise InvalidRequest(f"reason must be a string, not {reason!r}")
            body["reason"] = reason
        if self._settings.cancel_profile_in == "query":
            params["profileId"] = pid
        else:
            body["profileId"] = pid
        try:
            response = await self._request(
                "PATCH",
                path,
                route=Route.CANCEL_LIMIT,
                params=params or None,
                json_body=body,
                idempotent=False,
            )
        except Conflict:
            # the 409 body is not relied on: the order's state says which 409 this was
            order = await self.afetch_order(oid)
            return _cancel.refused(oid, order, 409, self._settings.finalized_statuses)
        except OrderNotFound as exc:
            await self._raise_if_routes_inactive(exc)
            raise
        payload = decode_json(response)
        if not isinstance(payload, dict):
            raise InvalidResponse("cancel response is not an object", method="PATCH", url=path)
        return _cancel.accepted(oid, payload, response.status_code)

    def cancel_limit_order(
        self, order_id: str, *, profile_id: str | None = None, reason: str | None = None
    ) -> CancelResult:
        return self._run(self.acancel_limit_order(order_id, profile_id=profile_id, reason=reason))

    async def _raise_if_routes_inactive(self, exc: OrderNotFound) -> None:
        """A 404 on cancel means either no such order or an inactive route; the listing
        (which has no order to miss) tells which."""
        try:
            await self._request(
                "GET",
                self._settings.limit_orders_path,
                route=Route.LIST_LIMIT,
                params={"limit": "1"},
                idempotent=True,
            )
        except RouteNotActive as probe:
            raise RouteNotActive(
                probe.message, method=exc.method, url=exc.url, status=exc.status, body=exc.body
            ) from exc

    async def acancel_limit_orders(
        self,
        order_ids: Iterable[str],
        *,
        profile_id: str | None = None,
        reason: str | None = None,
    ) -> list[CancelResult]:
        """Cancel many limit orders in one request; one result per distinct id, in order.

        Accepted items come from the batch response; for the others the order is read
        with fetchOrder to decide (as for a single 409). Not found -> NOT_FOUND.
        """
        ids = validate_order_ids(order_ids)
        pid = validate_profile_id(profile_id or self._settings.profile_id)
        if reason is not None and not isinstance(reason, str):
            raise InvalidRequest(f"reason must be a string, not {reason!r}")
        if not ids:
            return []
        by_id: dict[str, dict[str, Any]] = {}
        http_status: int | None = None
        size = max(1, self._settings.batch_cancel_max)
        for start in range(0, len(ids), size):
            body: dict[str, Any] = {"profileId": pid, "orderIds": ids[start : start + size]}
            if reason is not None:
                body["reason"] = reason
            response = await self._request(
                "POST",
                self._settings.batch_cancel_path,
                route=Route.BATCH_CANCEL,
                json_body=body,
                idempotent=False,
            )
            http_status = response.status_code
            payload = decode_json(response)
            items = payload.get("orders") if isinstance(payload, dict) else None
            if not isinstance(items, list):
                raise InvalidResponse(
                    "batch cancel response without an 'orders' array",
                    method="POST",
                    url=response.request.url,
                    status=response.status_code,
                )
            by_id.update((i["id"], i) for i in items if isinstance(i, dict) and "id" in i)

        async def decide(oid: str) -> CancelResult:
            item = by_id.get(oid)
            if item is not None and item.get("accepted") is True:
                return _cancel.accepted(oid, item, http_status)
            # the item's status is not relied on: the order's own state decides
            try:
                order = await self.afetch_order(oid)
            except OrderNotFound:
                return _cancel.not_found(oid, http_status)
            return _cancel.refused(oid, order, http_status, self._settings.finalized_statuses)

        return list(await asyncio.gather(*(decide(oid) for oid in ids)))

    def cancel_limit_orders(
        self,
        order_ids: Iterable[str],
        *,
        profile_id: str | None = None,
        reason: str | None = None,
    ) -> list[CancelResult]:
        return self._run(self.acancel_limit_orders(order_ids, profile_id=profile_id, reason=reason))

    # -- loaders ----------------------------------------------------------------------------

    async def aload_orders(
        self,
        status: str | Iterable[str] | None = None,
        since: TimeBound = None,
        until: TimeBound = None,
        symbols: str | Iterable[str] | None = None,
        ids: Iterable[str] | None = None,
        exact: bool = False,
        progress: bool = True,
    ) -> OrderFrames:
        """Every order (or the given ``ids``) as DataFrames; see
        :func:`toolkit.client._loaders.aload_orders`."""
        from toolkit.client._loaders import aload_orders

        return await aload_orders(
            self,
            status=status,
            since=since,
            until=until,
            symbols=symbols,
            ids=ids,
            exact=exact,
            progress=progress,
        )

    def load_orders(
        self,
        status: str | Iterable[str] | None = None,
        since: TimeBound = None,
        until: TimeBound = None,
        symbols: str | Iterable[str] | None = None,
        ids: Iterable[str] | None = None,
        exact: bool = False,
        progress: bool = True,
    ) -> OrderFrames:
        """Sync twin of :meth:`aload_orders`."""
        return self._run(
            self.aload_orders(
                status=status,
                since=since,
                until=until,
                symbols=symbols,
                ids=ids,
                exact=exact,
                progress=progress,
            )
        )

    # -- streams ----------------------------------------------------------------------------

    def stream(self, **kwargs: Any) -> StreamSession:
        """A WebSocket session (``async with client.stream() as s``); see
        :class:`toolkit.stream._session.StreamSession`."""
        from toolkit.stream._session import StreamSession

        self._open()
        return StreamSession(self, **kwargs)


def _as_order(payload: object, response: httpx.Response) -> dict[str, Any]:
    if not isinstance(payload, dict) or not isinstance(payload.get("id"), str):
        raise InvalidResponse(
            "order response is not an object with an 'id'",
            method=response.request.method,
            url=response.request.url,
            status=response.status_code,
        )
    return payload


def _expires_ms(expires_at: datetime | int | None) -> int:
    if expires_at is None:
        return int(time.time() * 1000) + 24 * 3600 * 1000
    if isinstance(expires_at, datetime):
        if expires_at.tzinfo is None:
            raise InvalidRequest("expires_at must be timezone-aware (e.g. tzinfo=UTC)")
        ms = int(expires_at.astimezone(UTC).timestamp() * 1000)
    elif isinstance(expires_at, int) and not isinstance(expires_at, bool):
        ms = expires_at
    else:
        raise InvalidRequest(f"expires_at must be a datetime or Unix ms, not {expires_at!r}")
    if ms <= int(time.time() * 1000):
        raise InvalidRequest("expires_at is in the past")
    return ms


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRequest(f"{name} must be a positive integer, not {value!r}")
    return value
