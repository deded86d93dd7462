"""The ``Client`` facade people hold in a notebook: async methods (``a...``) for every REST
call of the service, each with a sync twin, plus the loaders and ``stream()``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import enum
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from toolkit.client._auth import TokenAuth
from toolkit.client._items import ListItems, statuses_for
from toolkit.client._orders import LimitOrderWrites, checked_order
from toolkit.client._pagination import Paginator
from toolkit.client._settings import Settings, mask_key, reject_moved_settings
from toolkit.client._sync import LoopThread, with_sync_twins
from toolkit.client._transport import AsyncRest, Route, Sleep, decode_json
from toolkit.errors import InvalidRequest, ToolkitError, redact_url
from toolkit.profile import ServiceProfile
from toolkit.profile._learned import Learned
from toolkit.protocol import validate_limit, validate_order_id, validate_status_filter

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client._loaders import TimeBound
    from toolkit.frames._frames import OrderFrames
    from toolkit.stream._session import StreamSession

T = TypeVar("T")
#: how long a sync close() waits for a pool of a loop running in another thread
_CLOSE_WAIT_S = 5.0


class ClientState(enum.Enum):
    """A client's life: created, used, closed; a closed client never reopens."""

    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


@with_sync_twins
class Client(LimitOrderWrites):
    """The trading service, from Python.

    ``Client(base_url, api_key=..., api_secret=...)`` or ``Client.from_env(profile=...)``.
    ``profile`` (a :class:`~toolkit.profile.ServiceProfile`, default ``DEFAULT_PROFILE``)
    holds every assumption about what the spec leaves unshown. Every argument given
    replaces that field of ``settings`` (or of fresh :class:`~toolkit.client.Settings`).

    Every network call is a coroutine (``afetch_order``...); the twin without the ``a``
    runs it on the client's private loop thread and waits, so it works in a script and
    inside Jupyter's running loop alike. Use as ``with``/``async with``, or call
    ``close()``/``aclose()``.

    Parameters
    ----------
    base_url : str, optional
        The service's REST root, an absolute http(s) URL; required unless ``settings``
        gives it.
    ws_url : str, optional
        The WebSocket address (default: ``base_url`` with http -> ws, https -> wss).
    api_key : str, optional
        The API key to sign in with.
    api_secret : str, optional
        The API secret to sign in with.
    profile_id : str, optional
        The account profile (``profileId``) of creates and cancels that name none.
    profile : ServiceProfile, optional
        Every assumption about what the spec leaves unshown (default
        ``DEFAULT_PROFILE``).
    concurrency : int, optional
        Requests in flight at once (default 16, the ``Settings`` default).
    timeout : float, optional
        Deadline of one attempt in seconds, the whole answer included (default 10.0, the
        ``Settings`` default).
    auth : httpx.Auth, optional
        Replaces the default :class:`~toolkit.client.TokenAuth` (made from ``api_key``
        and ``api_secret`` when both are set).
    settings : Settings, optional
        All settings at once; the arguments above and ``**options`` replace its fields.
    transport : httpx.AsyncBaseTransport, optional
        The httpx transport to send through (tests use ``httpx.MockTransport``).
    event_hooks : mapping of str to list of callables, optional
        httpx event hooks (``"request"``, ``"response"``).
    sleep : async callable, default asyncio.sleep
        How retries wait (tests inject a fake).
    clock : callable, default time.time
        Wall-clock seconds, for the token's expiry.
    **options : Any
        Any other :class:`~toolkit.client.Settings` field (``max_retries``,
        ``page_size``, ``rate_limit_budget_s``...).

    Raises
    ------
    InvalidRequest
        No ``base_url`` (nor ``settings``), an unknown setting, an old keyword the profile
        now holds (naming its setting), or a setting out of its range.
    """

    def __init__(
        self,
        base_url: str | None = None,
        ws_url: str | None = None,
        api_key: str | None = None,
        api_secret: str | None = None,
        *,
        profile_id: str | None = None,
        profile: ServiceProfile | None = None,
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
            "profile": profile,
            "concurrency": concurrency,
            "timeout": timeout,
        }
        changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        reject_moved_settings(options)
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
        self._learned = Learned()
        #: called with the whole order a create answered (an order book follows them)
        self._order_listeners: list[Callable[[dict[str, Any]], Any]] = []

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **options: Any) -> Client:
        """A client configured from TOOLKIT_ENV, TOOLKIT_BASE_URL, TOOLKIT_WS_URL,
        TOOLKIT_API_KEY, TOOLKIT_API_SECRET and TOOLKIT_PROFILE (a profile TOML path, when
        no ``profile=`` is given; see :meth:`Settings.from_env`)."""
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
    def profile(self) -> ServiceProfile:
        """The service profile: every unshown choice about the service this client assumes."""
        return self._settings.profile

    @property
    def state(self) -> ClientState:
        return self._state

    @property
    def learned(self) -> Learned:
        """The profile settings this client learnt from the service's answers, by dotted
        name (:class:`~toolkit.profile._learned.LearnedSetting`: the value used for the rest
        of the session, the profile's, the evidence, how many requests used it). Each was
        logged once as a warning naming the line to write in the profile. Today: where a
        cancel's ``profileId`` travels (``rest.cancel_profile_in``), learnt when the
        service refuses one placement with 400/422 and takes the other; whether
        ``watchOrders`` carries every limit state (``stream.limit_events``), learnt by an
        order book when an order this client created is never notified."""
        return self._learned

    def add_order_listener(self, fn: Callable[[dict[str, Any]], Any]) -> Callable[[], None]:
        """Call ``fn(order)`` with the whole order each limit-order create of this client
        answers (spec 4.4), on the thread that made the call; returns a remover.

        Parameters
        ----------
        fn : callable
            Takes the order dict; an exception it raises is logged, never the caller's.

        Returns
        -------
        callable
            Removes ``fn``.
        """
        self._order_listeners.append(fn)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._order_listeners.remove(fn)

        return remove

    def _own_order(self, order: dict[str, Any]) -> None:
        for fn in list(self._order_listeners):
            try:
                fn(order)
            except Exception:
                logging.getLogger("toolkit.client").exception("an order listener failed")

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
        """Close every connection pool the client opened (on this loop, on the private
        loop of the sync calls, on any other running loop); the client cannot be used
        afterwards."""
        if self._state is ClientState.CLOSED:
            return
        self._state = ClientState.CLOSED
        await self._rest.aclose()
        if not self._loop_thread.in_own_thread():
            self._loop_thread.stop()

    def close(self) -> None:
        """Sync twin of :meth:`aclose`. Called inside a running loop (a Jupyter cell), the
        pool of that loop is closed by a task on it as soon as the cell yields."""
        if self._state is ClientState.CLOSED:
            return
        self._state = ClientState.CLOSED
        for pending in self._rest.close_from_sync():
            if isinstance(pending, concurrent.futures.Future):
                with contextlib.suppress(Exception):
                    pending.result(timeout=_CLOSE_WAIT_S)
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
            "no way to obtain an operational token: set TOOLKIT_API_KEY and "
            "TOOLKIT_API_SECRET (or give api_key=/api_secret=), or an auth= object with an "
            "async_token(send) method"
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
        response = await self._fetch(order_id)
        checked_order(response, validate_order_id(order_id))
        return response.content

    async def _fetch(self, order_id: str) -> httpx.Response:
        try:
            oid = validate_order_id(order_id)
        except InvalidRequest as exc:
            if isinstance(order_id, str):
                exc.order_id = order_id  # the order the call was about, even a refused id
            raise
        rest = self.profile.rest
        return await self._request(
            "GET",
            rest.fetch_order_path,
            route=Route.FETCH_ORDER,
            params={rest.fetch_order_param: oid},
        )

    def fetch_order_raw(self, order_id: str) -> bytes:
        return self._run(self.afetch_order_raw(order_id))

    async def afetch_order(self, order_id: str) -> dict[str, Any]:
        """The order's current state (``GET /orders/fetchOrder``); OrderNotFound on 404."""
        response = await self._fetch(order_id)
        return checked_order(response, validate_order_id(order_id))

    def fetch_order(self, order_id: str) -> dict[str, Any]:
        return self._run(self.afetch_order(order_id))

    def _paginator(
        self, status: str | Iterable[str] | None, limit: int | None, max_pages: int | None
    ) -> Paginator:
        s = self._settings
        listing = s.profile.listing
        # sent uppercase whatever case the service writes (spec 4.2: always uppercase)
        status_value = validate_status_filter(status)
        size = s.page_size if limit is None else limit
        return Paginator(
            status=status_value,
            limit=validate_limit(size, listing.page_max, listing.page_min),
            max_pages=_positive_int(s.max_pages if max_pages is None else max_pages, "max_pages"),
            items=ListItems(listing, s.profile.orders.timestamp_unit),
            statuses=statuses_for(status_value, listing),
        )

    def aiter_limit_orders(
        self,
        status: str | Iterable[str] | None = None,
        *,
        limit: int | None = None,
        max_pages: int | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Every limit-order list item matching ``status`` (spec 4.2), page by page.

        The arguments are checked now, before anything is sent (``limit`` within the
        profile's ``listing.page_min..page_max``). Items are the service's own objects; their
        fields are read with the profile's ``listing.*_field`` mapping (the id inferred from
        the usual names when ``listing.id_field`` is absent). An order seen on an
        earlier page is not yielded again; an item outside ``status`` (ACTIVE/FINALIZED as
        the profile defines them) is left out, since the service ignores a filter it does
        not recognise. A 503 is retried on the same token; a listing
        that restarts raises PaginationLoop; 404 raises RouteNotActive.
        """
        paginator = self._paginator(status, limit, max_pages)
        return self._pages(paginator)

    async def _pages(self, paginator: Paginator) -> AsyncIterator[dict[str, Any]]:
        while not paginator.done:
            response = await self._request(
                "GET",
                self.profile.rest.limit_orders_path,
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
        """All list items, each order once, in the newest updated-at seen."""
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

    # create / cancel / batch cancel (and their sync twins): LimitOrderWrites, in _orders.py

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
        concurrency: int | None = None,
        page_rule: str = "error",
        overlap_s: float = 600.0,
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
            concurrency=concurrency,
            page_rule=page_rule,
            overlap_s=overlap_s,
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
        concurrency: int | None = None,
        page_rule: str = "error",
        overlap_s: float = 600.0,
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
                concurrency=concurrency,
                page_rule=page_rule,
                overlap_s=overlap_s,
            )
        )

    # -- streams ----------------------------------------------------------------------------

    def stream(self, **kwargs: Any) -> StreamSession:
        """A WebSocket session (``async with client.stream() as s``); see
        :class:`toolkit.stream._session.StreamSession`."""
        from toolkit.stream._session import StreamSession

        self._open()
        return StreamSession(self, **kwargs)


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRequest(f"{name} must be a positive integer, not {value!r}")
    return value
