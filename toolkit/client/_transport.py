"""The async REST layer: one httpx connection pool per event loop, bounded concurrency,
timeouts, retries with backoff, and the one place where httpx errors become ours."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import random
import time
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpx

from toolkit.client._body import ACCEPT_ENCODING, error_excerpt, error_message, read_capped
from toolkit.client._breaker import Breaker
from toolkit.client._retry import (
    Attempt,
    RetryState,
    backoff,
    default_retry_policy,
    parse_retry_after,
)
from toolkit.client._settings import Settings
from toolkit.errors import (
    AuthenticationError,
    BadRequest,
    Conflict,
    InvalidRequest,
    InvalidResponse,
    OrderNotFound,
    PermissionDenied,
    RateLimited,
    RouteNotActive,
    ServiceError,
    ServiceUnavailable,
    ToolkitError,
    TransportError,
    redact_url,
    scrub,
)
from toolkit.protocol import JsonShapeError, loads_bounded

logger = logging.getLogger("toolkit.rest")

Sleep = Callable[[float], Awaitable[None]]


class Route(StrEnum):
    """Which route a request goes to: a 404 means something different on each."""

    SIGNIN = "signin"
    FETCH_ORDER = "fetchOrder"
    LIST_LIMIT = "list limit orders"
    CREATE_LIMIT = "create limit order"
    CANCEL_LIMIT = "cancel limit order"
    BATCH_CANCEL = "batch cancel limit orders"
    OTHER = "other"


#: the profile setting that holds each route's path (named when a request cannot be built)
PATH_SETTINGS: dict[Route, str] = {
    Route.SIGNIN: "signin.path",
    Route.FETCH_ORDER: "rest.fetch_order_path",
    Route.LIST_LIMIT: "rest.limit_orders_path",
    Route.CREATE_LIMIT: "rest.limit_orders_path",
    Route.CANCEL_LIMIT: "rest.cancel_path",
    Route.BATCH_CANCEL: "rest.batch_cancel_path",
}

#: where a success response keeps the scrubber of the client that received it, so that
#: :func:`decode_json` can hide the secrets in the body it quotes
SCRUB_EXTENSION = "toolkit.scrub"
#: how much of a body is scrubbed and quoted: more than an error keeps (2000), so a secret
#: across the cut is still hidden whole
_SCRUB_WINDOW = 8000

#: routes published ahead of activation (spec 9): 404 on them means "not active here"
LIMIT_ROUTES = frozenset({Route.LIST_LIMIT, Route.CREATE_LIMIT, Route.BATCH_CANCEL})

NOT_ACTIVE_MESSAGE = (
    "{method} {path} answered 404: the limit-order route is published but not active in "
    "this environment (it activates first in sandbox, then in production)"
)
#: the batch-cancel path is a profile guess (spec 4.4: not shown), so its 404 has two causes
BATCH_NOT_FOUND_MESSAGE = (
    "{method} {path} answered 404: either the batch-cancel route is not active in this "
    "environment (the limit-order routes activate first in sandbox, then in production) or "
    "the profile's rest.batch_cancel_path ({setting!r}) is wrong (the spec does not show "
    "that route's path)"
)


class DeadlineExceeded(httpx.TimeoutException):
    """The whole answer did not arrive within ``settings.timeout`` (a network failure for
    the retry policy: retried on idempotent requests)."""


def _network_message(exc: Exception, attempts: int, timeout: float) -> str:
    if isinstance(exc, DeadlineExceeded):
        return (
            f"no complete answer within timeout={timeout}s (the deadline covers the whole "
            f"answer) after {attempts} attempt(s)"
        )
    return f"network error after {attempts} attempt(s): {type(exc).__name__}"


class _NoGate:
    # hook (issue 14): the gate when no limiter is installed
    async def __aenter__(self) -> Callable[[int, Any], None]:
        return lambda status, headers: None

    async def __aexit__(self, *exc: object) -> None:
        return None


_NO_GATE = _NoGate()


@dataclass
class _Pool:
    client: httpx.AsyncClient
    semaphore: asyncio.Semaphore
    closer: AsyncGenerator[None, None] | None = None

    async def aclose(self) -> None:
        closer, self.closer = self.closer, None
        if closer is not None:
            await closer.aclose()  # its finally closes the client
        else:
            await self.client.aclose()


#: close tasks scheduled by a sync close() inside a running loop, kept until done
_PENDING_CLOSES: set[asyncio.Task[None]] = set()


async def _close_at_loop_shutdown(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    """Suspended for the life of a pool: the loop's shutdown (``asyncio.run`` calls
    ``shutdown_asyncgens``) closes this generator, whose ``finally`` closes the pool, so a
    client used through several ``asyncio.run()`` calls leaves no connection open."""
    try:
        yield
    finally:
        await client.aclose()


class AsyncRest:
    """Sends requests for the client; everything network-shaped that can go wrong comes
    out of :meth:`request` as a :class:`~toolkit.errors.ToolkitError`.

    One ``httpx.AsyncClient`` (connection pool) per event loop that uses it, because a
    pool cannot cross loops (a sync twin runs on a private loop thread, a notebook on
    the kernel's). At most ``settings.concurrency`` requests are in flight per pool;
    a request waiting for a retry does not hold a slot. ``sleep``, ``rng`` and ``clock``
    (the :attr:`breaker`'s) are injectable so retry tests need no real waiting. The retry
    rules are :class:`~toolkit.client._retry.RetryState`'s; ``rate_limit_budget_s`` is the
    total one request may wait on 429s that carry a Retry-After (default: the settings').
    """

    def __init__(
        self,
        settings: Settings,
        auth: httpx.Auth | None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        event_hooks: Mapping[str, list[Callable[..., Any]]] | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: Callable[[], float] = random.random,
        retry_policy: Callable[[Attempt], bool] = default_retry_policy,
        secrets: Callable[[], Iterable[str | None]] = tuple,
        rate_limit_budget_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.auth = auth
        self._transport = transport
        self._event_hooks = {k: list(v) for k, v in (event_hooks or {}).items()}
        self._sleep = sleep
        self._rng = rng
        self._retry_policy = retry_policy
        self._secrets = secrets
        self.rate_limit_budget_s = (
            settings.rate_limit_budget_s if rate_limit_budget_s is None else rate_limit_budget_s
        )
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool]
        self._pools = weakref.WeakKeyDictionary()
        #: requests sent (every one: retries, sign-ins and the auth flow's resends too,
        #: counted by a request hook), retries made (diagnostics, benchmarks, sync summary)
        self.sent = 0
        self.retries = 0
        # hook (issue 14, toolkit.client._concurrency): an adaptive limiter that holds each
        # send of request() back and observes its answer; None = the fixed semaphore only
        self.gate: Any = None
        self.breaker = Breaker.of(settings, clock=clock)

    async def _pool(self) -> _Pool:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            limits = httpx.Limits(
                max_connections=self.settings.concurrency,
                max_keepalive_connections=self.settings.concurrency,
            )
            client = httpx.AsyncClient(
                auth=self.auth,
                timeout=httpx.Timeout(self.settings.timeout),
                limits=limits,
                transport=self._transport,
                event_hooks={
                    **self._event_hooks,
                    "request": [self._count_sent, *self._event_hooks.get("request", [])],
                    "response": [self._answered, *self._event_hooks.get("response", [])],
                },
                headers={"User-Agent": "toolkit/0.1", "Accept-Encoding": ACCEPT_ENCODING},
                verify=True,
            )
            pool = _Pool(client, asyncio.Semaphore(self.settings.concurrency))
            pool.closer = _close_at_loop_shutdown(client)
            # started here, so the loop's async-generator hooks register it: asyncio.run()
            # (and loop.shutdown_asyncgens()) closes it, and with it this loop's pool
            await pool.closer.asend(None)
            self._pools[loop] = pool
        return pool

    async def aclose(self) -> None:
        """Close every pool this client opened: the running loop's here, those of loops
        running in other threads there (waiting for them), and those of loops already
        closed were closed at their shutdown (see ``_close_at_loop_shutdown``)."""
        running = asyncio.get_running_loop()
        for loop, pool in list(self._pools.items()):
            self._pools.pop(loop, None)
            if loop is running:
                await pool.aclose()
            elif loop.is_running():
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(pool.aclose(), loop))

    def close_from_sync(self) -> list[concurrent.futures.Future[None] | asyncio.Task[None]]:
        """Close every pool from synchronous code: a pool of a loop running in another
        thread is closed there; the pool of a loop running in *this* thread (``close()``
        called in a Jupyter cell) is closed by a task on it, which runs as soon as the
        cell yields. Returns what is pending (tests await it)."""
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        pending: list[concurrent.futures.Future[None] | asyncio.Task[None]] = []
        for loop, pool in list(self._pools.items()):
            self._pools.pop(loop, None)
            if loop is here:
                task = loop.create_task(pool.aclose())
                _PENDING_CLOSES.add(task)
                task.add_done_callback(_PENDING_CLOSES.discard)
                pending.append(task)
            elif loop.is_running():
                pending.append(asyncio.run_coroutine_threadsafe(pool.aclose(), loop))
            elif not loop.is_closed():
                loop.run_until_complete(pool.aclose())
        return pending

    def scrub(self, text: str) -> str:
        """``text`` without this client's secrets (API secret and key, token), as is or
        encoded, nor bearer values."""
        return scrub(text, self._secrets())

    async def _count_sent(self, request: httpx.Request) -> None:
        # a request hook sees every request the pool sends, the auth flow's included
        self.sent += 1

    async def _answered(self, response: httpx.Response) -> None:
        self.breaker.answered()  # a status line came: the service is there

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: between half and all of base * 2**attempt."""
        settings = self.settings
        return backoff(attempt, settings.backoff_base_s, settings.backoff_max_s, self._rng)

    async def send_unauthenticated(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` as is, without the auth (used to sign in outside a request),
        under the same deadline and size cap as every request."""
        pool = await self._pool()
        started = self.breaker.check(request.method, request.url)
        try:
            async with pool.semaphore:
                return await self._exchange(pool, request, auth=None)
        except (httpx.HTTPError, DeadlineExceeded) as exc:
            self.breaker.failed_on(exc, started, request.method, request.url)
            raise TransportError(
                _network_message(exc, 1, self.settings.timeout),
                method=request.method,
                url=request.url,
            ) from exc

    async def _exchange(
        self,
        pool: _Pool,
        request: httpx.Request,
        auth: httpx.Auth | httpx._client.UseClientDefault | None = httpx.USE_CLIENT_DEFAULT,
    ) -> httpx.Response:
        """One attempt: send ``request`` and read the whole answer within
        ``settings.timeout`` seconds (connect, headers and body together: a server that
        drips bytes cannot hold the call longer), refusing a body that decodes to more
        than ``settings.max_response_bytes`` (decoded a bounded piece at a time: see
        :class:`~toolkit.client._body.BoundedBody`) or is not in its declared
        Content-Encoding. Returns a response whose body is read."""
        cap = self.settings.max_response_bytes
        try:
            async with asyncio.timeout(self.settings.timeout):
                response = await pool.client.send(request, auth=auth, stream=True)
                try:
                    content = await read_capped(response, cap)
                finally:
                    await response.aclose()
        except TimeoutError:
            raise DeadlineExceeded(
                f"no complete answer within timeout={self.settings.timeout}s", request=request
            ) from None
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        whole = httpx.Response(
            response.status_code,
            headers=headers,
            content=content,
            request=response.request,
            extensions=response.extensions,
        )
        whole.history = response.history
        return whole

    async def request(
        self,
        method: str,
        path: str,
        *,
        route: Route,
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
        idempotent: bool | None = None,
    ) -> httpx.Response:
        """Send one request with retries; return the 2xx response or raise. A fetchOrder's
        error carries ``order_id`` (its ``rest.fetch_order_param`` parameter)."""
        if idempotent is None:
            idempotent = method in ("GET", "HEAD", "OPTIONS")
        try:
            return await self._send(method, path, route, params, json_body, idempotent)
        except ToolkitError as exc:
            if exc.order_id is None and route is Route.FETCH_ORDER and params:
                exc.order_id = params.get(self.settings.profile.rest.fetch_order_param)
            raise

    async def _send(
        self,
        method: str,
        path: str,
        route: Route,
        params: Mapping[str, str] | None,
        json_body: Any,
        idempotent: bool,
    ) -> httpx.Response:
        url = self.settings.base_url + path
        pool = await self._pool()
        settings = self.settings
        retry = RetryState(
            method,
            idempotent,
            max_retries=settings.max_retries,
            backoff_base_s=settings.backoff_base_s,
            backoff_max_s=settings.backoff_max_s,
            retry_after_max_s=settings.retry_after_max_s,
            budget_s=self.rate_limit_budget_s,
            policy=self._retry_policy,
            rng=self._rng,
        )
        while True:
            attempt_at = self.breaker.check(method, url)  # open: stop, nothing sent
            request = self._build(pool, method, url, route, params, json_body)
            started = time.perf_counter()
            try:
                async with self._gate() as report, pool.semaphore:  # hook (issue 14)
                    response = await self._exchange(pool, request)
                    report(response.status_code, response.headers)
            except ToolkitError:
                raise  # from the auth flow or the size cap: already ours
            except (httpx.HTTPError, DeadlineExceeded) as exc:
                self.breaker.failed_on(exc, attempt_at, method, url)  # gone: stop now
                delay = retry.delay(None, exc)
                if delay is not None:
                    logger.debug(
                        "%s %s failed (%s); retry %d in %.2fs",
                        method, redact_url(url), type(exc).__name__, retry.attempts, delay,
                    )  # fmt: skip
                    await self._retry_wait(delay)
                    continue
                raise TransportError(
                    _network_message(exc, retry.attempts + 1, self.settings.timeout),
                    method=method,
                    url=url,
                ) from exc
            elapsed = time.perf_counter() - started
            status = response.status_code
            logger.debug(
                "%s %s -> %d in %.3fs", method, redact_url(response.request.url), status, elapsed
            )
            if response.is_success:
                response.extensions[SCRUB_EXTENSION] = self.scrub
                return response
            delay = retry.delay(status, None, response.headers.get("Retry-After"))
            if delay is None:
                raise self.error(response, route, retries=retry.attempts, note=retry.reason)
            logger.debug(
                "%s %s -> %d; retry %d in %.2fs",
                method, redact_url(url), status, retry.attempts, delay,
            )  # fmt: skip
            await self._retry_wait(delay)

    def _build(
        self,
        pool: _Pool,
        method: str,
        url: str,
        route: Route,
        params: Mapping[str, str] | None,
        json_body: Any,
    ) -> httpx.Request:
        """The request to send, or InvalidRequest (nothing sent) when it cannot be built:
        a URL httpx refuses names the profile setting of the route's path."""
        try:
            return pool.client.build_request(method, url, params=params, json=json_body)
        except httpx.InvalidURL as exc:
            setting = PATH_SETTINGS.get(route, "route path")
            raise InvalidRequest(
                f"{route.value}: cannot build the URL {redact_url(url)!r} "
                f"({self.scrub(str(exc))}); check the profile's {setting} and base_url",
                method=method,
            ) from None
        except (ValueError, TypeError) as exc:
            raise InvalidRequest(
                f"{route.value}: cannot build the request ({self.scrub(str(exc))})",
                method=method,
                url=url,
            ) from None

    def _gate(self) -> Any:
        # hook (issue 14): the installed limiter's slot, or a no-op
        return self.gate.slot() if self.gate is not None else _NO_GATE

    async def _retry_wait(self, delay: float) -> None:
        self.retries += 1
        await self._sleep(delay)

    def error(
        self, response: httpx.Response, route: Route, retries: int = 0, note: str = ""
    ) -> ServiceError:
        """The exception for a non-2xx ``response`` on ``route``; ``note`` says why the
        retries stopped (a 429 or 5xx)."""
        request = response.request
        method = request.method
        status = response.status_code
        text = response.text
        body = self.scrub(text[:_SCRUB_WINDOW])  # the error keeps less than this
        kwargs: dict[str, Any] = {
            "method": method,
            "url": request.url,
            "status": status,
            "body": body,
        }
        # decoding turns an escaped secret back into the clear one: scrub what it gives too
        detail = self.scrub(error_message(text, self.settings.profile.rest.error_message_field))
        # the service's own words, also when rest.error_message_field misses them
        suffix = (
            f": {detail}"
            if detail
            else (f": {self.scrub(error_excerpt(body))}" if body.strip() else "")
        )
        tried = (f" after {retries} retries" if retries else "") + note
        if status == 404 and route is Route.BATCH_CANCEL:
            guess = self.settings.profile.rest.batch_cancel_path
            why = BATCH_NOT_FOUND_MESSAGE.format(
                method=method, path=request.url.path, setting=guess
            )
            return RouteNotActive(why, **kwargs)
        if status == 404 and route in LIMIT_ROUTES:
            return RouteNotActive(
                NOT_ACTIVE_MESSAGE.format(method=method, path=request.url.path), **kwargs
            )
        if status == 404:
            return OrderNotFound(f"{route.value}: order not found{suffix}", **kwargs)
        if status in (400, 422):
            # a validation refusal (422: a gateway's word for it)
            hint = refusal_hint(route, request, self.settings)
            return BadRequest(
                f"{route.value}: the service refused the input{suffix}{hint}", **kwargs
            )
        if status == 401:
            why = (
                "no credentials: set TOOLKIT_API_KEY and TOOLKIT_API_SECRET, or give "
                "api_key=/api_secret= or auth="
                if self.auth is None
                else "the token was refused, also after a fresh sign-in"
            )
            return AuthenticationError(f"{route.value}: not authenticated ({why})", **kwargs)
        if status == 403:
            return PermissionDenied(f"{route.value}: permission denied{suffix}", **kwargs)
        if status == 409:
            return Conflict(f"{route.value}: conflict{suffix}", **kwargs)
        if status == 429:
            exc = RateLimited(f"{route.value}: rate limited{tried}", **kwargs)
            exc.retry_after = parse_retry_after(response.headers.get("Retry-After"))
            return exc
        if status >= 500:
            return ServiceUnavailable(
                f"{route.value}: service unavailable ({status}){tried}", **kwargs
            )
        # any other refusal names the settings that shaped the request, as a 400 does
        hint = refusal_hint(route, request, self.settings) if status < 500 else ""
        return ServiceError(f"{route.value}: unexpected status {status}{suffix}{hint}", **kwargs)


def refusal_hint(route: Route, request: httpx.Request, settings: Settings) -> str:
    """What to check when the service refuses ``request`` on ``route`` with a 4xx: the
    profile settings that shaped it, with their values ("" for a route without any), in
    the words of the sign-in's refusal ("check the profile's ...")."""
    rest, listing = settings.profile.rest, settings.profile.listing
    if route is Route.FETCH_ORDER:
        return (
            f"; check the profile's rest.fetch_order_param ({rest.fetch_order_param!r}, the "
            "query parameter that carried the order id)"
        )
    if route is Route.LIST_LIMIT:
        limit = request.url.params.get("limit")
        if limit == str(listing.page_default):
            origin = "the profile's listing.page_default"
        elif limit == str(settings.page_size):
            origin = "the client's page_size setting"
        else:
            origin = "the limit= given"
        status = request.url.params.get("status")
        return (
            f"; the page size sent was limit={limit} ({origin}): check the profile's "
            f"listing.page_default ({listing.page_default}), listing.page_min "
            f"({listing.page_min}) and listing.page_max ({listing.page_max})"
            + (f", and the status filter sent (status={status})" if status else "")
        )
    if route is Route.CANCEL_LIMIT:
        return (
            f"; check the profile's rest.cancel_profile_in ({rest.cancel_profile_in!r}, where "
            f"profileId was sent) and rest.cancel_path ({rest.cancel_path!r})"
        )
    if route is Route.BATCH_CANCEL:
        try:
            ids = json.loads(request.content).get(rest.batch_ids_field)
        except (ValueError, AttributeError):
            ids = None
        n = len(ids) if isinstance(ids, list) else None
        count = "" if n is None else f", which carried {n} id" + ("" if n == 1 else "s")
        return (
            f"; check the profile's rest.batch_cancel_path ({rest.batch_cancel_path!r}), "
            f"rest.batch_ids_field ({rest.batch_ids_field!r}{count}) and "
            f"rest.batch_cancel_max ({rest.batch_cancel_max} ids per request): the spec "
            "does not show the batch route's shape"
        )
    return ""


def decode_json(response: httpx.Response, *, order_id: str | None = None) -> Any:
    """The JSON body of a success response (nesting bounded by ``MAX_JSON_DEPTH``), or
    InvalidResponse saying what the body was (without the client's secrets)."""
    try:
        return loads_bounded(response.content)
    except JsonShapeError as exc:
        clean: Callable[[str], str] = response.extensions.get(
            SCRUB_EXTENSION, lambda text: scrub(text, ())
        )
        raise InvalidResponse(
            f"response body is {exc}" if str(exc) == "empty body" else f"response body: {exc}",
            method=response.request.method,
            url=response.request.url,
            status=response.status_code,
            body=clean(response.text[:_SCRUB_WINDOW])[:200],
            order_id=order_id,
        ) from exc
