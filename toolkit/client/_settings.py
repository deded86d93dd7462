"""Configuration of the client: where the service is, the credentials, and every assumption
about what the spec leaves unshown, each a setting (the README's "Assumptions" table)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from toolkit.errors import InvalidRequest, redact_url
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.protocol import ACTIVE, FINALIZED

#: where ``toolkit sim`` listens when no port is given
DEFAULT_LOCAL_URL = "http://127.0.0.1:8765"


class Environment(StrEnum):
    """Where the client points: the local simulator, or one of the service's environments."""

    LOCAL = "local"
    SANDBOX = "sandbox"
    PRODUCTION = "production"


@dataclass(frozen=True, repr=False)
class Settings:
    """Everything the client needs, including every assumption about the service.

    Assumptions about the service (defaults follow PRODUCT.md; change any of them with
    ``Client(..., name=value)`` or ``dataclasses.replace(settings, name=value)``):

    ==========================  ===========================  ====================================
    setting                     default                      what the spec leaves unshown
    ==========================  ===========================  ====================================
    ``signin_path``             ``/auth/signin``             route that yields the token
    ``signin_key_field``        ``apiKey``                   body field of the API key
    ``signin_secret_field``     ``apiSecret``                body field of the API secret
    ``token_field``             ``token``                    response field of the token
    ``expires_at_field``        ``expiresAt``                response field of its expiry
    ``auth_header``             ``Authorization``            header that carries the token
    ``auth_scheme``             ``Bearer``                   prefix of that header's value
    ``token_renew_margin_s``    ``30``                       renew this long before expiry
                                                             (at most a tenth of its lifetime)
    ``fetch_order_path``        ``/orders/fetchOrder``       route of one order
    ``fetch_order_param``       ``orderId``                  its query parameter
    ``limit_orders_path``       ``/orders/limit/orders``     list (GET) / create (POST)
    ``cancel_path``             ``.../{order_id}/cancel``    cancel one (PATCH)
    ``batch_cancel_path``       ``/orders/limit/orders/      cancel many (POST
                                cancel``                     ``{profileId, orderIds}``)
    ``cancel_profile_in``       ``body``                     where ``profileId`` travels
                                                             (``body`` or ``query``)
    ``batch_cancel_max``        ``100``                      ids per batch-cancel request
    ``page_size``               ``50``                       page size we ask for
    ``page_size_max``           ``100``                      largest page the service allows
    ``max_pages``               ``10000``                    page budget of one listing
    ``timestamp_unit``          ``auto``                     ``auto`` detects s vs ms by
                                                             magnitude; or ``s`` / ``ms``
    ``status_case``             ``upper``                    case of statuses we send
    ``active_statuses``         OPEN, TRIGGERED, PROCESSING  members of ACTIVE
    ``finalized_statuses``      the other six                members of FINALIZED
    ==========================  ===========================  ====================================

    Transport settings: ``concurrency`` (requests in flight, 16), ``timeout`` (seconds per
    request, 10), ``max_retries`` (5), ``backoff_base_s`` (0.2), ``backoff_max_s`` (10),
    ``retry_after_max_s`` (60: a longer Retry-After is not waited for). TLS verification
    is always on.

    ``repr`` shows at most the API key's last four characters; never the secret.
    """

    base_url: str
    ws_url: str = ""
    api_key: str | None = None
    api_secret: str | None = None
    profile_id: str | None = None
    environment: Environment = Environment.LOCAL
    # transport
    concurrency: int = 16
    timeout: float = 10.0
    max_retries: int = 5
    backoff_base_s: float = 0.2
    backoff_max_s: float = 10.0
    retry_after_max_s: float = 60.0
    # auth assumptions
    signin_path: str = "/auth/signin"
    signin_key_field: str = "apiKey"
    signin_secret_field: str = "apiSecret"
    token_field: str = "token"
    expires_at_field: str = "expiresAt"
    auth_header: str = "Authorization"
    auth_scheme: str = "Bearer"
    token_renew_margin_s: float = 30.0
    # route assumptions
    fetch_order_path: str = "/orders/fetchOrder"
    fetch_order_param: str = "orderId"
    limit_orders_path: str = "/orders/limit/orders"
    cancel_path: str = "/orders/limit/orders/{order_id}/cancel"
    batch_cancel_path: str = "/orders/limit/orders/cancel"
    cancel_profile_in: Literal["body", "query"] = "body"
    batch_cancel_max: int = 100
    # listing assumptions
    page_size: int = 50
    page_size_max: int = 100
    max_pages: int = 10_000
    # data assumptions
    timestamp_unit: Literal["auto", "s", "ms"] = "auto"
    status_case: Literal["upper", "lower"] = "upper"
    active_statuses: frozenset[str] = ACTIVE
    finalized_statuses: frozenset[str] = FINALIZED
    # every unshown choice about the service (toolkit.profile)
    profile: ServiceProfile = DEFAULT_PROFILE

    def __post_init__(self) -> None:
        base = _check_url(self.base_url, ("http", "https"), "base_url")
        object.__setattr__(self, "base_url", base)
        ws = self.ws_url or derive_ws_url(base)
        object.__setattr__(self, "ws_url", _check_url(ws, ("ws", "wss"), "ws_url"))
        object.__setattr__(self, "environment", Environment(self.environment))
        if self.concurrency < 1:
            raise InvalidRequest(f"concurrency must be >= 1, not {self.concurrency}")
        if self.timeout <= 0:
            raise InvalidRequest(f"timeout must be > 0, not {self.timeout}")
        if self.max_retries < 0:
            raise InvalidRequest(f"max_retries must be >= 0, not {self.max_retries}")
        if not 1 <= self.page_size <= self.page_size_max:
            raise InvalidRequest(f"page_size must be in 1..{self.page_size_max}")
        if self.cancel_profile_in not in ("body", "query"):
            raise InvalidRequest("cancel_profile_in must be 'body' or 'query'")
        if self.timestamp_unit not in ("auto", "s", "ms"):
            raise InvalidRequest("timestamp_unit must be 'auto', 's' or 'ms'")
        object.__setattr__(self, "active_statuses", frozenset(self.active_statuses))
        object.__setattr__(self, "finalized_statuses", frozenset(self.finalized_statuses))

    def __repr__(self) -> str:
        return (
            f"Settings(environment={self.environment.value!r}, base_url={self.base_url!r}, "
            f"ws_url={self.ws_url!r}, api_key={mask_key(self.api_key)!r}, "
            f"api_secret={'<hidden>' if self.api_secret else None!r}, "
            f"profile_id={self.profile_id!r})"
        )

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def field_names(cls) -> frozenset[str]:
        return frozenset(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from TOOLKIT_ENV, TOOLKIT_BASE_URL, TOOLKIT_WS_URL, TOOLKIT_API_KEY,
        TOOLKIT_API_SECRET (and TOOLKIT_PROFILE_ID); keyword ``overrides`` win.

        TOOLKIT_ENV is ``local`` (default; base URL defaults to the simulator's
        http://127.0.0.1:8765), ``sandbox`` or ``production``. We know no built-in address
        of the service's environments, so those two require TOOLKIT_BASE_URL.
        """
        env = os.environ if environ is None else environ
        raw_env = overrides.pop("environment", None) or env.get("TOOLKIT_ENV") or "local"
        try:
            environment = Environment(str(raw_env).strip().lower())
        except ValueError:
            raise InvalidRequest(
                f"TOOLKIT_ENV must be one of local, sandbox, production, not {raw_env!r}"
            ) from None
        base_url = overrides.pop("base_url", None) or env.get("TOOLKIT_BASE_URL")
        if not base_url:
            if environment is not Environment.LOCAL:
                raise InvalidRequest(
                    f"TOOLKIT_ENV={environment.value} needs TOOLKIT_BASE_URL (and "
                    "TOOLKIT_WS_URL): the toolkit has no built-in address for the "
                    f"{environment.value} environment"
                )
            base_url = DEFAULT_LOCAL_URL
        ws_url = overrides.pop("ws_url", None) or env.get("TOOLKIT_WS_URL") or ""
        if not ws_url and environment is not Environment.LOCAL:
            raise InvalidRequest(
                f"TOOLKIT_ENV={environment.value} needs TOOLKIT_WS_URL: the WebSocket "
                "address of that environment is not derived from the REST one"
            )
        api_key = overrides.pop("api_key", None) or env.get("TOOLKIT_API_KEY")
        api_secret = overrides.pop("api_secret", None) or env.get("TOOLKIT_API_SECRET")
        profile_id = overrides.pop("profile_id", None) or env.get("TOOLKIT_PROFILE_ID")
        unknown = sorted(set(overrides) - cls.field_names())
        if unknown:
            raise InvalidRequest(f"unknown setting(s): {', '.join(unknown)}")
        return cls(
            base_url=base_url,
            ws_url=ws_url,
            api_key=api_key,
            api_secret=api_secret,
            profile_id=profile_id,
            environment=environment,
            **overrides,
        )


def mask_key(api_key: str | None) -> str | None:
    """The API key as ``…abcd`` (last four characters at most, none when it is short)."""
    if not api_key:
        return None
    return "…" + api_key[-4:] if len(api_key) > 8 else "…"


def derive_ws_url(base_url: str) -> str:
    """The WebSocket address served next to ``base_url`` (the simulator serves both on one
    port): http -> ws, https -> wss, same host and path."""
    parts = urlsplit(base_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, parts.path, "", ""))


def _check_url(url: object, schemes: tuple[str, ...], name: str) -> str:
    if not isinstance(url, str) or not url.strip():
        raise InvalidRequest(f"{name} is required")
    parts = urlsplit(url.strip())
    if parts.scheme not in schemes or not parts.netloc:
        raise InvalidRequest(
            f"{name} must be an absolute {'/'.join(schemes)} URL, not {redact_url(url)!r}"
        )
    if parts.username or parts.password or parts.query:
        # credentials in a URL end up in logs; they belong in api_key/api_secret
        raise InvalidRequest(f"{name} must not carry credentials or a query string")
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
