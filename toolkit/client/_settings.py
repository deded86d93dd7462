"""Configuration of the client: where the service is, the credentials, the transport, and
the service profile that holds every assumption about what the spec leaves unshown."""

from __future__ import annotations

import dataclasses
import os
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from toolkit.errors import InvalidRequest, redact_url
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, profile_from_env
from toolkit.protocol import validate_profile_id

#: where ``toolkit sim`` listens when no port is given
DEFAULT_LOCAL_URL = "http://127.0.0.1:8765"


class Environment(StrEnum):
    """Where the client points: the local simulator, or one of the service's environments."""

    LOCAL = "local"
    SANDBOX = "sandbox"
    PRODUCTION = "production"


#: the assumption keywords that were Settings fields and are profile settings now
MOVED_TO_PROFILE: dict[str, str] = {
    "signin_path": "signin.path",
    "signin_key_field": "signin.key_field",
    "signin_secret_field": "signin.secret_field",
    "token_field": "signin.token_field",
    "expires_at_field": "signin.expiry_field",
    "auth_header": "rest.auth_header",
    "auth_scheme": "rest.auth_scheme",
    "fetch_order_path": "rest.fetch_order_path",
    "fetch_order_param": "rest.fetch_order_param",
    "limit_orders_path": "rest.limit_orders_path",
    "cancel_path": "rest.cancel_path",
    "batch_cancel_path": "rest.batch_cancel_path",
    "cancel_profile_in": "rest.cancel_profile_in",
    "batch_cancel_max": "rest.batch_cancel_max",
    "page_size_max": "listing.page_max",
    "timestamp_unit": "orders.timestamp_unit",
    "status_case": "orders.status_case",
    "active_statuses": "listing.active_statuses",
    "finalized_statuses": "listing.finalized_statuses",
}


def reject_moved_settings(options: Mapping[str, Any]) -> None:
    """InvalidRequest for an old assumption keyword, naming the profile setting to use."""
    for name, value in options.items():
        dotted = MOVED_TO_PROFILE.get(name)
        if dotted is None:
            continue
        shown = sorted(value) if isinstance(value, set | frozenset) else value
        raise InvalidRequest(
            f"{name} is a profile setting now: "
            f"profile=DEFAULT_PROFILE.replace({{{dotted!r}: {shown!r}}})"
        )


@dataclass(frozen=True, repr=False)
class Settings:
    """Everything the client needs: where the service is, the credentials, the transport,
    and the :class:`~toolkit.profile.ServiceProfile` that holds every assumption about what
    the spec leaves unshown (sign-in, identity header, routes, list-item fields, page
    bounds, ACTIVE/FINALIZED membership, timestamp units). Change an assumption with
    ``Client(..., profile=DEFAULT_PROFILE.replace({"rest.fetch_order_param": "id"}))`` or
    ``TOOLKIT_PROFILE=path/to/profile.toml``; the old keywords (``fetch_order_param=`` ...)
    raise InvalidRequest naming the profile setting.

    The client-side settings (``page_size``, ``max_pages``, ``token_renew_margin_s``) and
    the transport settings (``concurrency``, ``timeout``, ``max_response_bytes``, the
    retries and their waits) are below. TLS verification is always on.

    ``repr`` shows at most the API key's last four characters; never the secret.

    Parameters
    ----------
    base_url : str
        The service's REST root, an absolute http(s) URL without credentials or query (a
        trailing slash is dropped).
    ws_url : str, optional
        The WebSocket address, an absolute ws(s) URL (default: ``base_url`` with http ->
        ws, https -> wss).
    api_key : str, optional
        The API key to sign in with.
    api_secret : str, optional
        The API secret to sign in with.
    profile_id : str, optional
        The account profile (``profileId``) of creates and cancels that name none.
    environment : Environment or str, default Environment.LOCAL
        Where the client points: ``local``, ``sandbox`` or ``production``.
    concurrency : int, default 16
        Requests in flight at once (>= 1).
    timeout : float, default 10.0
        Deadline of one attempt in seconds: connecting, sending and reading the whole
        answer; each retry gets its own.
    max_retries : int, default 5
        Retries of a request whose failure is worth retrying (>= 0); the retries that
        wait a 429's Retry-After do not count.
    backoff_base_s : float, default 0.2
        First wait between retries, doubled each time (the wait is between half and all
        of it, at random).
    backoff_max_s : float, default 10.0
        Longest backoff wait.
    retry_after_max_s : float, default 60.0
        Longest Retry-After waited for; a longer one fails the request.
    rate_limit_budget_s : float, default 300.0
        The most one request waits in total on 429s that carry a Retry-After before it
        fails with RateLimited.
    breaker_after_s : float, optional
        When every request has failed on the network (refused, reset, timed out; an
        HTTP status never counts) for this many seconds, the service is taken as gone:
        every call in progress and every new one stops with one TransportError saying
        so, instead of trying each remaining request (default: twice ``timeout``, so a
        load stops within about three timeouts of the service going silent; 0 turns the
        breaker off).
    max_response_bytes : int, default 67108864
        Largest answer (64 MiB), counted after decompression; a larger one is refused
        with InvalidResponse.
    token_renew_margin_s : float, default 30.0
        Renew the token this long before it expires (at most a tenth of its lifetime).
    page_size : int, optional
        Page size we ask the listing for, within ``listing.page_min``..``page_max``
        (default: the profile's ``listing.page_default``).
    max_pages : int, default 10000
        Page budget of one listing.
    profile : ServiceProfile, default DEFAULT_PROFILE
        Every assumption about what the spec leaves unshown.

    Raises
    ------
    InvalidRequest
        A URL that is missing, malformed, of the wrong scheme or with credentials or a
        query; a profile that is no ServiceProfile; an invalid ``profile_id``; or a
        ``concurrency``, ``timeout``, ``max_retries``, backoff or Retry-After limit,
        ``max_response_bytes`` or ``page_size`` out of its range (the message names it).
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
    rate_limit_budget_s: float = 300.0
    #: None -> twice ``timeout``; 0 -> off (toolkit.client._breaker)
    breaker_after_s: float | None = None
    max_response_bytes: int = 64 * 1024 * 1024
    # client-side choices
    token_renew_margin_s: float = 30.0
    #: page size we ask for; None -> the profile's listing.page_default
    page_size: int | None = None
    max_pages: int = 10_000
    # every unshown choice about the service (toolkit.profile)
    profile: ServiceProfile = DEFAULT_PROFILE

    def __post_init__(self) -> None:
        base = _check_url(self.base_url, ("http", "https"), "base_url")
        object.__setattr__(self, "base_url", base)
        ws = self.ws_url or derive_ws_url(base)
        object.__setattr__(self, "ws_url", _check_url(ws, ("ws", "wss"), "ws_url"))
        object.__setattr__(self, "environment", Environment(self.environment))
        if not isinstance(self.profile, ServiceProfile):
            raise InvalidRequest(
                f"profile must be a ServiceProfile (e.g. load_profile(path)), not "
                f"{type(self.profile).__name__}"
            )
        for name, variable in (
            ("api_key", "TOOLKIT_API_KEY"),
            ("api_secret", "TOOLKIT_API_SECRET"),
        ):
            object.__setattr__(self, name, clean_credential(getattr(self, name), name, variable))
        if self.profile_id is not None:
            validate_profile_id(self.profile_id)
        if (
            isinstance(self.concurrency, bool)
            or not isinstance(self.concurrency, int)
            or self.concurrency < 1
        ):
            raise InvalidRequest(f"concurrency must be an int >= 1, not {self.concurrency!r}")
        if not _finite_positive(self.timeout):
            raise InvalidRequest(f"timeout must be a finite number > 0, not {self.timeout!r}")
        if (
            isinstance(self.max_response_bytes, bool)
            or not isinstance(self.max_response_bytes, int)
            or self.max_response_bytes < 1
        ):
            raise InvalidRequest(
                f"max_response_bytes must be an int >= 1, not {self.max_response_bytes!r}"
            )
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or self.max_retries < 0
        ):
            raise InvalidRequest(f"max_retries must be an int >= 0, not {self.max_retries!r}")
        for name in ("backoff_base_s", "backoff_max_s", "retry_after_max_s", "rate_limit_budget_s"):
            value = getattr(self, name)
            if not (_finite_positive(value) or (_number(value) and value == 0)):
                raise InvalidRequest(
                    f"{name} must be a finite number of seconds >= 0, not {value!r}"
                )
        breaker = self.breaker_after_s
        off = _number(breaker) and breaker == 0
        if breaker is not None and not (_finite_positive(breaker) or off):
            raise InvalidRequest(
                f"breaker_after_s must be None or a finite number of seconds >= 0, not {breaker!r}"
            )
        listing = self.profile.listing
        if self.page_size is None:
            object.__setattr__(self, "page_size", listing.page_default)
        elif (
            isinstance(self.page_size, bool)
            or not isinstance(self.page_size, int)
            or not listing.page_min <= self.page_size <= listing.page_max
        ):
            raise InvalidRequest(
                f"page_size must be in {listing.page_min}..{listing.page_max} (the profile's "
                f"listing.page_min..listing.page_max), not {self.page_size!r}"
            )

    def __repr__(self) -> str:
        return (
            f"Settings(environment={self.environment.value!r}, base_url={self.base_url!r}, "
            f"ws_url={self.ws_url!r}, api_key={mask_key(self.api_key)!r}, "
            f"api_secret={'<hidden>' if self.api_secret else None!r}, "
            f"profile_id={self.profile_id!r})"
        )

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied. A new ``profile`` brings its own default page
        size unless ``page_size`` was chosen apart from the old profile's default.

        Parameters
        ----------
        **changes : Any
            Setting name -> new value.

        Returns
        -------
        Settings

        Raises
        ------
        InvalidRequest
            An unknown setting, an old assumption keyword (the message names the profile
            setting to use), or a value the class refuses.
        """
        reject_moved_settings(changes)
        unknown = sorted(set(changes) - self.field_names())
        if unknown:
            raise InvalidRequest(f"unknown setting(s): {', '.join(unknown)}")
        if (
            "profile" in changes
            and "page_size" not in changes
            and self.page_size == self.profile.listing.page_default
        ):
            changes["page_size"] = None
        return dataclasses.replace(self, **changes)

    @classmethod
    def field_names(cls) -> frozenset[str]:
        """The names of every setting (the keywords of the constructor)."""
        return frozenset(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from TOOLKIT_ENV, TOOLKIT_BASE_URL, TOOLKIT_WS_URL, TOOLKIT_API_KEY,
        TOOLKIT_API_SECRET, TOOLKIT_PROFILE_ID and TOOLKIT_PROFILE (a profile TOML path,
        read when no ``profile=`` is given); keyword ``overrides`` win.

        TOOLKIT_ENV is ``local`` (the base URL then defaults to the simulator's
        http://127.0.0.1:8765), ``sandbox`` or ``production``. We know no built-in address
        of the service's environments, so those two require TOOLKIT_BASE_URL; with neither
        TOOLKIT_ENV nor TOOLKIT_BASE_URL set, InvalidRequest names the variables to set.
        Whitespace around a value (a newline pasted with it) is not part of it; an API key
        or secret with whitespace or a control character inside is refused, naming the
        position, never the value.

        Parameters
        ----------
        environ : mapping of str to str, optional
            The variables to read (default: ``os.environ``).
        **overrides : Any
            Settings by name; a value given (not empty) wins over its variable.

        Returns
        -------
        Settings

        Raises
        ------
        InvalidRequest
            No service configured, an unknown TOOLKIT_ENV, sandbox or production without
            TOOLKIT_BASE_URL or TOOLKIT_WS_URL, an unknown setting or old assumption
            keyword, a profile file that cannot be read, or a value the class refuses.
        """
        reject_moved_settings(overrides)
        # a value pasted with its newline or a space: whitespace around is never meant
        source = os.environ if environ is None else environ
        env = {k: v.strip() for k, v in source.items() if k.startswith("TOOLKIT_")}
        chosen_env = overrides.pop("environment", None) or env.get("TOOLKIT_ENV")
        raw_env = chosen_env or "local"
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
            if not chosen_env:
                # nothing set at all: a silent client for 127.0.0.1 would fail later and
                # far from the cause
                raise InvalidRequest(
                    "no service configured: set TOOLKIT_BASE_URL (and TOOLKIT_WS_URL, "
                    "TOOLKIT_API_KEY, TOOLKIT_API_SECRET) for the service, or "
                    f"TOOLKIT_ENV=local for the simulator at {DEFAULT_LOCAL_URL}"
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
        profile = overrides.pop("profile", None) or profile_from_env(env)
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
            profile=profile,
            **overrides,
        )


_NAMED = {" ": "a space", "\t": "a tab", "\n": "a line break", "\r": "a carriage return"}


def clean_credential(value: object, name: str, variable: str) -> str | None:
    """An API key or secret without the whitespace around it (a value pasted with its
    newline); one with whitespace or a control or format character inside is refused,
    naming its position and length, never the value."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"{name} must be a string, not {type(value).__name__}")
    text = value.strip()
    for position, char in enumerate(text, 1):
        category = unicodedata.category(char)
        if char.isspace() or category in ("Cc", "Cf"):
            what = _NAMED.get(char, f"U+{ord(char):04X}")
            raise InvalidRequest(
                f"{name} ({variable}) holds {what} at character {position} of {len(text)}: "
                "no key or secret has one; copy it again, on one line"
            )
    return text or None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite_positive(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and value > 0
        and value != float("inf")
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
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 -- raises ValueError for a port that is no number or too big
    except ValueError as exc:
        raise InvalidRequest(f"{name} is not a valid URL ({exc}): {redact_url(url)!r}") from None
    if parts.scheme not in schemes or not parts.netloc:
        raise InvalidRequest(
            f"{name} must be an absolute {'/'.join(schemes)} URL, not {redact_url(url)!r}"
        )
    if parts.username or parts.password or parts.query:
        # credentials in a URL end up in logs; they belong in api_key/api_secret
        raise InvalidRequest(f"{name} must not carry credentials or a query string")
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
