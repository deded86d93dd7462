"""The state one doctor run shares between its steps: where the service is, the credentials,
the assumed profile, what earlier steps learnt (token, identity header, page bounds, items),
and the raw HTTP helpers (which never raise for a status, and redact what they keep)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from toolkit.doctor._report import Findings, Redactor
from toolkit.profile import ServiceProfile


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
    steps: list[str] = field(default_factory=list)  # one line per step that failed

    def headers(self, auth: tuple[str, str] | None = None) -> dict[str, str]:
        header, scheme = (
            auth or self.auth or (self.assumed.rest.auth_header, self.assumed.rest.auth_scheme)
        )
        if not self.token:
            return {}
        return {header: f"{scheme} {self.token}" if scheme else self.token}

    def failed(self, step: str, exc: BaseException) -> None:
        self.steps.append(self.redact(f"{step}: {type(exc).__name__}: {exc}"))

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
        """One request; 503 and 429 are repeated a couple of times (spec 4.2 rule 3)."""
        for attempt in range(retries + 1):
            try:
                r = await self.http.request(
                    method, path, params=params, json=json_body, headers=headers
                )
            except httpx.HTTPError as exc:
                return Answer(0, error=self.redact(f"{type(exc).__name__}: {exc}"))
            if r.status_code in (429, 503) and attempt < retries:
                await asyncio.sleep(0.2 * (attempt + 1))
                continue
            text = self.redact(r.text[:2000])
            try:
                body = json.loads(r.content) if r.content else None
            except ValueError:
                body = None
            return Answer(r.status_code, body, text)
        raise AssertionError("unreachable")  # pragma: no cover

    async def get(self, path: str, params: dict[str, Any] | None = None, **kw: Any) -> Answer:
        headers = kw.pop("headers", None)
        return await self.request(
            "GET", path, params=params, headers=headers or self.headers(), **kw
        )
