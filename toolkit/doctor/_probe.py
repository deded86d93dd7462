"""The state one doctor run shares between its steps: where the service is, the credentials,
the assumed profile, what earlier steps learnt (token, identity header, page bounds, items),
and the raw HTTP helpers (which never raise for a status, and redact what they keep; each
answer is read whole within ``timeout`` and at most ``max_bytes`` long, like the client's)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from toolkit.client._body import BodyTooLarge, read_capped
from toolkit.doctor._report import Findings, Redactor
from toolkit.errors import InvalidResponse, redact_url
from toolkit.profile import ServiceProfile

#: the client's default ``max_response_bytes``
DEFAULT_MAX_BYTES = 64 * 1024 * 1024


class LimitExceeded(Exception):
    """An answer broke one of the doctor's limits: it did not arrive whole within the
    deadline, or it was larger than the size cap. The step it came in stops there, and
    its ``check:`` row shows ``observed`` (``"timed out"``, ``"too large"``) and why."""

    def __init__(self, message: str, observed: str) -> None:
        super().__init__(message)
        self.observed = observed


@dataclass
class Answer:
    """One HTTP answer as the doctor keeps it (status 0: no answer, ``error`` says why)."""

    status: int
    body: Any = None
    text: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclass
class Probe:
    base_url: str
    ws_url: str
    api_key: str
    api_secret: str
    assumed: ServiceProfile
    http: httpx.AsyncClient
    findings: Findings
    redact: Redactor
    timeout: float = 10.0
    payload_timeout: float = 10.0
    #: the largest answer read (decoded), and the largest WebSocket message taken
    max_bytes: int = DEFAULT_MAX_BYTES
    max_message_bytes: int = DEFAULT_MAX_BYTES
    #: the profileId a write-shaped probe sends (only with ``probe_cancel``)
    profile_id: str | None = None
    probe_cancel: bool = False
    # learnt on the way
    token: str | None = None
    signin_path: str = ""
    key_field: str = ""
    secret_field: str = ""
    auth: tuple[str, str] | None = None  # (header, scheme) the service accepted
    listing_active: bool | None = None
    page_min: int | None = None
    page_max: int | None = None
    items: list[dict[str, Any]] = field(default_factory=list)
    item_fields: dict[str, str | None] = field(default_factory=dict)
    orders: list[dict[str, Any]] = field(default_factory=list)
    symbol: str | None = None
    notifications: list[dict[str, Any]] = field(default_factory=list)
    #: one (step, observed, why) per step that failed or was stopped
    steps: list[tuple[str, str, str]] = field(default_factory=list)

    def headers(self, auth: tuple[str, str] | None = None) -> dict[str, str]:
        header, scheme = (
            auth or self.auth or (self.assumed.rest.auth_header, self.assumed.rest.auth_scheme)
        )
        if not self.token:
            return {}
        return {header: f"{scheme} {self.token}" if scheme else self.token}

    def failed(self, step: str, exc: BaseException) -> None:
        if isinstance(exc, LimitExceeded):
            self.stopped(step, exc.observed, str(exc))
        else:
            self.stopped(step, "failed", f"{type(exc).__name__}: {exc}")

    def stopped(self, step: str, observed: str, why: str) -> None:
        self.steps.append((step, observed, self.redact(why)))

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
        retries: int = 2,
    ) -> Answer:
        """One request; 503 and 429 are repeated a couple of times (spec 4.2 rule 3).

        Raises LimitExceeded when an answer does not arrive whole within ``timeout`` or
        decodes to more than ``max_bytes``."""
        for attempt in range(retries + 1):
            request = self.http.build_request(
                method, path, params=params, json=json_body, headers=headers
            )
            try:
                r, content = await self._exchange(request)
            except httpx.HTTPError as exc:
                return Answer(0, error=self.redact(f"{type(exc).__name__}: {exc}"))
            if r.status_code in (429, 503) and attempt < retries:
                await asyncio.sleep(0.2 * (attempt + 1))
                continue
            text = self.redact(_text(content, r.charset_encoding)[:2000])
            try:
                body = json.loads(content) if content else None
            except ValueError:
                body = None
            return Answer(r.status_code, body, text)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _exchange(self, request: httpx.Request) -> tuple[httpx.Response, bytes]:
        """Send ``request`` and read its whole answer within ``timeout`` seconds (connect,
        headers and body together: a gateway dripping bytes is cut), through the client's
        capped reader (``read_capped``: a body that decodes to more than ``max_bytes`` is
        refused as it is read, so a gzip bomb is never held whole)."""
        where = f"{request.method} {redact_url(request.url)}"
        try:
            async with asyncio.timeout(self.timeout):
                response = await self.http.send(request, stream=True)
                try:
                    content = await read_capped(response, self.max_bytes)
                finally:
                    await response.aclose()
        except TimeoutError:
            raise LimitExceeded(
                f"{where}: no complete answer within timeout={self.timeout}s (the deadline "
                "covers the whole answer)",
                "timed out",
            ) from None
        except InvalidResponse as exc:
            if isinstance(exc.__cause__, BodyTooLarge):
                raise LimitExceeded(
                    f"{where} -> {response.status_code}: answer larger than "
                    f"max_response_bytes={self.max_bytes} (decoded); not read further",
                    "too large",
                ) from None
            # a body not in its declared encoding: a failed step, as a network error is
            raise httpx.DecodingError(exc.message, request=request) from None
        return response, content

    async def get(self, path: str, params: dict[str, Any] | None = None, **kw: Any) -> Answer:
        headers = kw.pop("headers", None)
        return await self.request(
            "GET", path, params=params, headers=headers or self.headers(), **kw
        )


def _text(content: bytes, charset: str | None) -> str:
    try:
        return content.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return content.decode("utf-8", errors="replace")
