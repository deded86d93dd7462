"""The default authentication of PRODUCT.md as a replaceable ``httpx.Auth``: sign in with
the API key and secret, send the token as a bearer header, renew it before it expires and
once on a 401."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from typing import Any

import httpx

from toolkit.client._settings import Settings, mask_key
from toolkit.errors import (
    AuthenticationError,
    InvalidRequest,
    InvalidResponse,
    ServiceError,
    scrub,
)
from toolkit.protocol import to_epoch_ms

Clock = Callable[[], float]


class TokenAuth(httpx.Auth):
    """Bearer-token auth: ``POST signin_url`` ``{apiKey, apiSecret}`` -> ``{token,
    expiresAt}``, then ``Authorization: Bearer <token>`` on every request.

    The token is renewed when less than ``renew_margin_s`` (at most a tenth of its
    lifetime) is left before ``expiresAt``, and once more when a request answers 401 with
    the token it carried; a second 401 is returned to the caller. Concurrent requests
    share one sign-in. ``clock`` (wall seconds) is injectable for tests. Field names and
    the header come from :class:`~toolkit.client._settings.Settings`.
    """

    # the flows read the sign-in bodies themselves; other responses are left to the caller
    requires_response_body = False

    def __init__(
        self,
        api_key: str,
        api_secret: str,
        signin_url: str,
        *,
        key_field: str = "apiKey",
        secret_field: str = "apiSecret",
        token_field: str = "token",
        expires_at_field: str = "expiresAt",
        header: str = "Authorization",
        scheme: str = "Bearer",
        renew_margin_s: float = 30.0,
        clock: Clock = time.time,
    ) -> None:
        if not api_key or not api_secret:
            raise InvalidRequest("api_key and api_secret are both required to sign in")
        self._api_key = api_key
        self._api_secret = api_secret
        self._signin_url = signin_url
        self._key_field = key_field
        self._secret_field = secret_field
        self._token_field = token_field
        self._expires_at_field = expires_at_field
        self._header = header
        self._scheme = scheme
        self._renew_margin_s = renew_margin_s
        self._clock = clock
        self._token: str | None = None
        self._renew_at: float | None = None  # wall seconds; None = only on a 401
        self._thread_lock = threading.Lock()
        self._async_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]
        self._async_locks = weakref.WeakKeyDictionary()
        #: sign-ins performed (tests and diagnostics)
        self.signins = 0

    @classmethod
    def from_settings(cls, settings: Settings, *, clock: Clock = time.time) -> TokenAuth:
        if not settings.api_key or not settings.api_secret:
            raise InvalidRequest(
                "no credentials: pass api_key= and api_secret= (or set TOOLKIT_API_KEY and "
                "TOOLKIT_API_SECRET), or pass auth= with your own httpx.Auth"
            )
        return cls(
            settings.api_key,
            settings.api_secret,
            settings.base_url + settings.signin_path,
            key_field=settings.signin_key_field,
            secret_field=settings.signin_secret_field,
            token_field=settings.token_field,
            expires_at_field=settings.expires_at_field,
            header=settings.auth_header,
            scheme=settings.auth_scheme,
            renew_margin_s=settings.token_renew_margin_s,
            clock=clock,
        )

    def __repr__(self) -> str:
        state = "set" if self._token else "none"
        return f"TokenAuth(api_key={mask_key(self._api_key)!r}, token=<{state}>)"

    # -- state --------------------------------------------------------------------------

    @property
    def secrets(self) -> tuple[str | None, ...]:
        """Values that must never appear in text we produce."""
        return (self._api_secret, self._token, self._api_key)

    def needs_signin(self) -> bool:
        if self._token is None:
            return True
        return self._renew_at is not None and self._clock() >= self._renew_at

    def invalidate(self) -> None:
        self._token = None
        self._renew_at = None

    def signin_request(self) -> httpx.Request:
        body = {self._key_field: self._api_key, self._secret_field: self._api_secret}
        return httpx.Request("POST", self._signin_url, json=body)

    def accept_signin(self, response: httpx.Response) -> str:
        """Take the token from a sign-in response, or raise."""
        text = scrub(response.text, self.secrets)
        url = str(response.request.url)
        if response.status_code in (401, 403):
            raise AuthenticationError(
                "sign-in refused: check the API key and secret",
                method="POST",
                url=url,
                status=response.status_code,
                body=text,
            )
        if not response.is_success:
            raise ServiceError(
                "sign-in failed", method="POST", url=url, status=response.status_code, body=text
            )
        try:
            payload: Any = json.loads(response.content)
            token = payload[self._token_field]
        except (ValueError, KeyError, TypeError):
            raise InvalidResponse(
                f"sign-in response without a {self._token_field!r} field",
                method="POST",
                url=url,
                status=response.status_code,
            ) from None
        if not isinstance(token, str) or not token:
            raise InvalidResponse("sign-in returned an empty token", method="POST", url=url)
        now = self._clock()
        renew_at: float | None = None
        try:
            expires_ms = to_epoch_ms(payload.get(self._expires_at_field))
        except InvalidResponse:
            expires_ms = None
        if expires_ms is not None:
            expires = expires_ms / 1000.0
            lifetime = max(0.0, expires - now)
            renew_at = expires - min(self._renew_margin_s, lifetime / 10.0)
        self._token = token
        self._renew_at = renew_at
        self.signins += 1
        return token

    def apply(self, request: httpx.Request, token: str) -> None:
        request.headers[self._header] = f"{self._scheme} {token}" if self._scheme else token

    # -- flows --------------------------------------------------------------------------

    def _async_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._async_locks.get(loop)
        if lock is None:
            lock = self._async_locks[loop] = asyncio.Lock()
        return lock

    async def async_token(self, send: Callable[[httpx.Request], Awaitable[httpx.Response]]) -> str:
        """A valid token, signing in through ``send`` when needed."""
        if self.needs_signin():
            async with self._async_lock():
                if self.needs_signin():
                    response = await send(self.signin_request())
                    return self.accept_signin(response)
        assert self._token is not None
        return self._token

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self.needs_signin():
            async with self._async_lock():
                if self.needs_signin():
                    signin = yield self.signin_request()
                    await signin.aread()
                    self.accept_signin(signin)
        token = self._token
        assert token is not None
        self.apply(request, token)
        response = yield request
        if response.status_code != 401:
            return
        async with self._async_lock():
            if self._token == token:  # nobody renewed it meanwhile
                self.invalidate()
                signin = yield self.signin_request()
                await signin.aread()
                self.accept_signin(signin)
        assert self._token is not None
        self.apply(request, self._token)
        yield request

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        if self.needs_signin():
            with self._thread_lock:
                if self.needs_signin():
                    signin = yield self.signin_request()
                    signin.read()
                    self.accept_signin(signin)
        token = self._token
        assert token is not None
        self.apply(request, token)
        response = yield request
        if response.status_code != 401:
            return
        with self._thread_lock:
            if self._token == token:
                self.invalidate()
                signin = yield self.signin_request()
                signin.read()
                self.accept_signin(signin)
        assert self._token is not None
        self.apply(request, self._token)
        yield request
