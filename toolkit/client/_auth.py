"""The default authentication as a replaceable ``httpx.Auth``: sign in with the API key and
secret as the service profile describes, send the token in the profile's header, renew it
before it expires and once on a 401."""

from __future__ import annotations

import asyncio
import logging
import random
import re
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping
from typing import Any, Literal

import httpx

from toolkit.client._body import keep_body, read_capped, read_capped_sync
from toolkit.client._settings import Settings, clean_credential, mask_key
from toolkit.client._signin import SIGNIN_ATTEMPTS, TRANSIENT_SIGNIN_STATUSES, signin_failure
from toolkit.errors import (
    AuthenticationError,
    InvalidRequest,
    InvalidResponse,
    redact_url,
    scrub,
)
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, get_path, set_path
from toolkit.protocol import JsonShapeError, loads_bounded, to_epoch_ms

Clock = Callable[[], float]
logger = logging.getLogger("toolkit.auth")

#: the longest wait between two sign-in tries, whatever a Retry-After asks
SIGNIN_MAX_WAIT_S = 30.0


class TokenAuth(httpx.Auth):
    """Token auth as the profile describes it: ``POST signin.path`` with the key and secret
    under ``signin.key_field``/``signin.secret_field``, the token read at
    ``signin.token_field`` and its expiry at ``signin.expiry_field`` (dotted paths reach
    nested fields), then ``rest.auth_header: <rest.auth_scheme> <token>`` on every request
    (the bare token when the scheme is empty).

    Expiry (``signin.expiry_kind``/``signin.expiry_unit``): ``absolute`` is a Unix moment
    (``auto``: seconds vs milliseconds by magnitude); ``ttl`` is a time to live (``auto``:
    the unit the expiry field's name says, as in ``ttlMs``, ``expires_in_ms``,
    ``expiryMillis``, ``ttl_s``, ``expiresInSeconds``; else seconds, unless the number is
    above 30 days in seconds, an implausible token lifetime, when it is read as
    milliseconds). The token is renewed when less than ``renew_margin_s`` (at
    most a tenth of its lifetime) is left, and once more when a request answers 401 with
    the token it carried; a second 401 is returned to the caller. A token whose expiry is
    missing, unreadable or already past by our clock is used until a 401 (never a sign-in
    before every call). Concurrent requests share one sign-in. A sign-in answered 429,
    502, 503 or 504 is tried again (``SIGNIN_ATTEMPTS`` tries in all, waiting the larger
    of its Retry-After and a backoff with jitter, at most ``SIGNIN_MAX_WAIT_S``), so a
    renewal in the middle of a long load survives a busy moment; after the last try the
    error is RateLimited (429) or ServiceUnavailable (5xx). The flows read each sign-in
    answer, and a 401 answer, within ``max_response_bytes`` (decoded a bounded piece at a
    time, as every answer of the client); the deadline is the sender's (the client's
    ``timeout`` covers the sign-ins of a request). ``clock`` (wall seconds), ``sleep`` and
    ``sync_sleep`` are injectable for tests.

    Parameters
    ----------
    api_key : str
        The API key (not empty).
    api_secret : str
        The API secret (not empty).
    base_url : str
        The service's REST root; the sign-in goes to ``base_url`` + ``signin.path``.
    profile : ServiceProfile, default DEFAULT_PROFILE
        Its ``signin`` section and ``rest.auth_header``/``rest.auth_scheme``.
    renew_margin_s : float, default 30.0
        Renew the token this long before it expires (at most a tenth of its lifetime).
    clock : callable, default time.time
        Wall clock in Unix seconds, read against the token's expiry.
    sleep : async callable, default asyncio.sleep
        Waits between sign-in tries in the async flow.
    sync_sleep : callable, default time.sleep
        Waits between sign-in tries in the sync flow.
    max_response_bytes : int, default 67108864
        The largest sign-in (or 401) answer the flows read, counted after decompression
        (the client passes its own setting).

    Raises
    ------
    InvalidRequest
        An empty key or secret, a sign-in URL that cannot be built, or
        ``max_response_bytes`` not an int >= 1.
    """

    # the flows read the sign-in bodies themselves; other responses are left to the caller
    requires_response_body = False

    def __init__(
        self,
        api_key: str,
        api_secret: str,
        base_url: str,
        *,
        profile: ServiceProfile = DEFAULT_PROFILE,
        renew_margin_s: float = 30.0,
        clock: Clock = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        sync_sleep: Callable[[float], None] = time.sleep,
        max_response_bytes: int = Settings.max_response_bytes,
    ) -> None:
        # as Settings does: a newline pasted around them dropped, one inside refused
        api_key = clean_credential(api_key, "api_key", "TOOLKIT_API_KEY") or ""
        api_secret = clean_credential(api_secret, "api_secret", "TOOLKIT_API_SECRET") or ""
        if not api_key or not api_secret:
            raise InvalidRequest("api_key and api_secret are both required to sign in")
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1
        ):
            raise InvalidRequest(
                f"max_response_bytes must be an int >= 1, not {max_response_bytes!r}"
            )
        self._max_bytes = max_response_bytes
        self._api_key = api_key
        self._api_secret = api_secret
        self._signin = profile.signin
        self._signin_url = base_url.rstrip("/") + profile.signin.path
        try:
            httpx.URL(self._signin_url)  # what signin_request() will build: refused now
        except (httpx.InvalidURL, ValueError) as exc:
            raise InvalidRequest(
                f"cannot build the sign-in URL {redact_url(self._signin_url)!r} ({exc}); check "
                "the profile's signin.path and base_url"
            ) from None
        self._header = profile.rest.auth_header
        self._scheme = profile.rest.auth_scheme
        self._renew_margin_s = renew_margin_s
        self._clock = clock
        self._sleep = sleep
        self._sync_sleep = sync_sleep
        self._token: str | None = None
        self._renew_at: float | None = None  # wall seconds; None = only on a 401
        self._thread_lock = threading.Lock()
        self._async_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]
        self._async_locks = weakref.WeakKeyDictionary()
        #: sign-ins performed (tests and diagnostics)
        self.signins = 0

    @classmethod
    def from_settings(cls, settings: Settings, *, clock: Clock = time.time) -> TokenAuth:
        """The auth of a client's settings: its credentials, base URL, profile and
        ``token_renew_margin_s``.

        Parameters
        ----------
        settings : Settings
            The client's settings.
        clock : callable, default time.time
            Wall clock in Unix seconds.

        Returns
        -------
        TokenAuth

        Raises
        ------
        InvalidRequest
            ``settings`` has no API key or secret.
        """
        if not settings.api_key or not settings.api_secret:
            raise InvalidRequest(
                "no credentials: pass api_key= and api_secret= (or set TOOLKIT_API_KEY and "
                "TOOLKIT_API_SECRET), or pass auth= with your own httpx.Auth"
            )
        return cls(
            settings.api_key,
            settings.api_secret,
            settings.base_url,
            profile=settings.profile,
            renew_margin_s=settings.token_renew_margin_s,
            clock=clock,
            max_response_bytes=settings.max_response_bytes,
        )

    def __repr__(self) -> str:
        state = "set" if self._token else "none"
        return f"TokenAuth(api_key={mask_key(self._api_key)!r}, token=<{state}>)"

    # -- state --------------------------------------------------------------------------

    @property
    def secrets(self) -> tuple[str | None, ...]:
        """Values that must never appear in text we produce."""
        return (self._api_secret, self._token, self._api_key)

    @property
    def renew_at(self) -> float | None:
        """Wall seconds after which the token is renewed before use; None: only on a 401."""
        return self._renew_at

    def needs_signin(self) -> bool:
        """True when no token is held, or ``clock`` has passed its renewal moment."""
        if self._token is None:
            return True
        return self._renew_at is not None and self._clock() >= self._renew_at

    def invalidate(self) -> None:
        """Forget the token: the next request signs in again."""
        self._token = None
        self._renew_at = None

    def signin_request(self) -> httpx.Request:
        """The sign-in request: ``POST`` to ``signin.path`` with the key and secret at
        ``signin.key_field`` and ``signin.secret_field`` of a JSON body."""
        body: dict[str, Any] = {}
        # dotted fields are nested objects, as everywhere in the profile ("auth.key")
        set_path(body, self._signin.key_field, self._api_key)
        set_path(body, self._signin.secret_field, self._api_secret)
        return httpx.Request("POST", self._signin_url, json=body)

    def retry_wait(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before sign-in try ``attempt + 1`` when ``response`` is a
        transient refusal (429, 502, 503, 504) and tries are left; else None (the answer
        is taken, or its error raised). The wait is the larger of the Retry-After hint and
        an exponential backoff with jitter, at most ``SIGNIN_MAX_WAIT_S``.

        Parameters
        ----------
        response : httpx.Response
            The answer to a sign-in.
        attempt : int
            Which try it answered, from 0.

        Returns
        -------
        float or None
        """
        if response.status_code not in TRANSIENT_SIGNIN_STATUSES:
            return None
        if attempt + 1 >= SIGNIN_ATTEMPTS:
            return None
        from toolkit.client._transport import parse_retry_after

        backoff = 0.25 * 2**attempt * (0.5 + random.random() / 2)
        hint = parse_retry_after(response.headers.get("Retry-After")) or 0.0
        wait = min(SIGNIN_MAX_WAIT_S, max(hint, backoff))
        logger.info(
            "sign-in answered %s; trying again in %.2f s (%d of %d)",
            response.status_code,
            wait,
            attempt + 2,
            SIGNIN_ATTEMPTS,
        )
        return wait

    def accept_signin(self, response: httpx.Response) -> str:
        """Take the token from a sign-in response, or raise.

        The token is kept, with the moment to renew it, for the requests that follow.

        Parameters
        ----------
        response : httpx.Response
            The answer to :meth:`signin_request`, its body read.

        Returns
        -------
        str
            The token.

        Raises
        ------
        AuthenticationError
            A status among ``signin.bad_credentials_statuses``, or another 401 or 403.
        ServiceError
            404 or 405 (check ``signin.path``), 400 or 422 (check ``signin.key_field``
            and ``signin.secret_field``), or another refusal.
        RateLimited
            429.
        ServiceUnavailable
            A 5xx.
        InvalidResponse
            A body that is not JSON, or without a non-empty string at
            ``signin.token_field``.
        """
        text = scrub(response.text, self.secrets)
        url = str(response.request.url)
        status = response.status_code
        where: dict[str, Any] = {"method": "POST", "url": url, "status": status}
        if status in self._signin.bad_credentials_statuses:
            raise AuthenticationError(
                f"sign-in refused with HTTP {status}: bad API key/secret; check "
                "TOOLKIT_API_KEY and TOOLKIT_API_SECRET (or api_key=/api_secret=)",
                body=text,
                **where,
            )
        if not response.is_success:
            raise signin_failure(status, text, self._signin, where)
        try:
            payload: Any = loads_bounded(response.content)
        except JsonShapeError as exc:
            what = "is not JSON" if str(exc).startswith("not JSON") else f"is refused: {exc}"
            raise InvalidResponse(
                f"sign-in answer {what}; the token is expected at signin.token_field "
                f"({self._signin.token_field!r})",
                **where,
            ) from None
        token = get_path(payload, self._signin.token_field)
        if token is None:
            raise InvalidResponse(
                f"sign-in answer has no token at signin.token_field "
                f"({self._signin.token_field!r}); the answer's fields: "
                f"{scrub(', '.join(field_names(payload)), self.secrets) or '(none)'}",
                **where,
            )
        if not isinstance(token, str) or not token:
            raise InvalidResponse(
                f"sign-in answer's signin.token_field ({self._signin.token_field!r}) is not a "
                "non-empty string",
                **where,
            )
        now = self._clock()
        expires = expiry_seconds(
            get_path(payload, self._signin.expiry_field),
            kind=self._signin.expiry_kind,
            unit=self._signin.expiry_unit,
            now=now,
            field=self._signin.expiry_field,
        )
        renew_at: float | None = None
        if expires is None:
            logger.info(
                "sign-in answer has no readable expiry at signin.expiry_field (%r): the token "
                "is used until the service answers 401",
                self._signin.expiry_field,
            )
        elif expires <= now:
            logger.warning(
                "sign-in answer's expiry (signin.expiry_field %r, kind %s, unit %s) is already "
                "past by this machine's clock: the token is used until the service answers "
                "401; check the clock or signin.expiry_kind/expiry_unit",
                self._signin.expiry_field,
                self._signin.expiry_kind,
                self._signin.expiry_unit,
            )
        else:
            lifetime = expires - now
            renew_at = expires - min(self._renew_margin_s, lifetime / 10.0)
        self._token = token
        self._renew_at = renew_at
        self.signins += 1
        return token

    def apply(self, request: httpx.Request, token: str) -> None:
        """Put ``token`` in ``request``'s ``rest.auth_header``, after ``rest.auth_scheme``.

        Parameters
        ----------
        request : httpx.Request
            The request to authenticate, changed in place.
        token : str
            The token.
        """
        request.headers[self._header] = auth_value(self._scheme, token)

    # -- flows --------------------------------------------------------------------------

    async def _aread(self, response: httpx.Response) -> None:
        # httpx hands the flow an unread answer and reads it (aread()) after the flow has
        # moved on: read here within the cap, and keep the body where aread() finds it
        keep_body(response, await read_capped(response, self._max_bytes))

    def _read(self, response: httpx.Response) -> None:
        keep_body(response, read_capped_sync(response, self._max_bytes))

    def _async_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._async_locks.get(loop)
        if lock is None:
            lock = self._async_locks[loop] = asyncio.Lock()
        return lock

    async def async_token(self, send: Callable[[httpx.Request], Awaitable[httpx.Response]]) -> str:
        """A valid token, signing in through ``send`` when needed.

        Parameters
        ----------
        send : async callable
            Sends a request and returns its response, body read.

        Returns
        -------
        str

        Raises
        ------
        ToolkitError
            The sign-in's errors, as :meth:`accept_signin` raises them.
        """
        if self.needs_signin():
            async with self._async_lock():
                if self.needs_signin():
                    for attempt in range(SIGNIN_ATTEMPTS):
                        response = await send(self.signin_request())
                        wait = self.retry_wait(response, attempt)
                        if wait is None:
                            return self.accept_signin(response)
                        await self._sleep(wait)
        assert self._token is not None
        return self._token

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """httpx's auth flow, async: sign in when needed, send ``request`` with the token,
        and on a 401 sign in again (unless another request already did) and send it once
        more.

        Parameters
        ----------
        request : httpx.Request
            The request to authenticate.

        Yields
        ------
        httpx.Request
            The sign-in requests and ``request``; httpx sends each back its response.
        """
        if self.needs_signin():
            async with self._async_lock():
                if self.needs_signin():
                    for attempt in range(SIGNIN_ATTEMPTS):
                        signin = yield self.signin_request()
                        await self._aread(signin)
                        wait = self.retry_wait(signin, attempt)
                        if wait is None:
                            self.accept_signin(signin)
                            break
                        await self._sleep(wait)
        token = self._token
        assert token is not None
        self.apply(request, token)
        response = yield request
        if response.status_code != 401:
            return
        await self._aread(response)  # httpx reads it before the next request: capped here
        async with self._async_lock():
            if self._token == token:  # nobody renewed it meanwhile
                self.invalidate()
                for attempt in range(SIGNIN_ATTEMPTS):
                    signin = yield self.signin_request()
                    await self._aread(signin)
                    wait = self.retry_wait(signin, attempt)
                    if wait is None:
                        self.accept_signin(signin)
                        break
                    await self._sleep(wait)
        assert self._token is not None
        self.apply(request, self._token)
        yield request

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        """httpx's auth flow, sync: as :meth:`async_auth_flow`.

        Parameters
        ----------
        request : httpx.Request
            The request to authenticate.

        Yields
        ------
        httpx.Request
            The sign-in requests and ``request``; httpx sends each back its response.
        """
        if self.needs_signin():
            with self._thread_lock:
                if self.needs_signin():
                    for attempt in range(SIGNIN_ATTEMPTS):
                        signin = yield self.signin_request()
                        self._read(signin)
                        wait = self.retry_wait(signin, attempt)
                        if wait is None:
                            self.accept_signin(signin)
                            break
                        self._sync_sleep(wait)
        token = self._token
        assert token is not None
        self.apply(request, token)
        response = yield request
        if response.status_code != 401:
            return
        self._read(response)
        with self._thread_lock:
            if self._token == token:
                self.invalidate()
                for attempt in range(SIGNIN_ATTEMPTS):
                    signin = yield self.signin_request()
                    self._read(signin)
                    wait = self.retry_wait(signin, attempt)
                    if wait is None:
                        self.accept_signin(signin)
                        break
                    self._sync_sleep(wait)
        assert self._token is not None
        self.apply(request, self._token)
        yield request


def auth_value(scheme: str, token: str) -> str:
    """The identity header's value: ``<scheme> <token>``, or the bare token."""
    return f"{scheme} {token}" if scheme else token


#: a ttl above this many seconds (30 days) is an implausible token lifetime: under
#: ``expiry_unit = "auto"`` (and a field name that says no unit) it is read as milliseconds
TTL_AUTO_MS_ABOVE = 30 * 86_400

_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_MS_WORDS = frozenset({"ms", "msec", "msecs", "milli", "millis", "millisecond", "milliseconds"})
_S_WORDS = frozenset({"s", "sec", "secs", "second", "seconds"})


def unit_in_name(field: str) -> Literal["s", "ms"] | None:
    """``ms`` or ``s`` when the last part of a (dotted) field name says its unit (``ttlMs``,
    ``expires_in_ms``, ``expiryMillis``, ``TTL_MS``, ``ttl_s``, ``expiresInSeconds``,
    ``ttlSec``); None when it says neither, or both."""
    name = field.rsplit(".", 1)[-1]
    words = {w.lower() for w in _NAME_WORDS.findall(name)}
    ms, s = bool(words & _MS_WORDS), bool(words & _S_WORDS)
    if ms == s:
        return None
    return "ms" if ms else "s"


def expiry_seconds(
    value: object, *, kind: str, unit: str, now: float, field: str = ""
) -> float | None:
    """The moment (wall seconds) a token expires, from the sign-in answer's expiry value;
    None when it is missing or not a number.

    ``absolute``: a Unix moment, ``auto`` telling seconds from milliseconds by magnitude
    (unambiguous for moments near now). ``ttl``: a time to live from ``now``; ``auto``
    takes the unit the name of ``field`` (the configured ``signin.expiry_field``) says
    (:func:`unit_in_name`); when it says none, the number is seconds unless it is above
    :data:`TTL_AUTO_MS_ABOVE` (30 days: no plausible token lives that long, while 2.6e6
    milliseconds is 43 minutes), then milliseconds.
    """
    if value is None or value == "" or isinstance(value, bool):
        return None
    if kind == "ttl":
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        if number != number or number in (float("inf"), float("-inf")):
            return None
        if unit == "auto":
            unit = unit_in_name(field) or ("ms" if number > TTL_AUTO_MS_ABOVE else "s")
        if unit == "ms":
            number /= 1000.0
        return now + number
    try:
        ms = to_epoch_ms(value, unit)
    except (InvalidResponse, OverflowError, ValueError):
        return None
    return None if ms is None else ms / 1000.0


def field_names(payload: object, prefix: str = "", depth: int = 3) -> list[str]:
    """Dotted names of the fields of a JSON object (nested objects too, a few levels);
    never their values."""
    if not isinstance(payload, Mapping):
        return []
    names: list[str] = []
    for key, value in payload.items():
        name = f"{prefix}{key}"
        names.append(name)
        if depth > 1 and isinstance(value, Mapping):
            names.extend(field_names(value, f"{name}.", depth - 1))
    return names
