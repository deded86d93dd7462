"""``ServiceProfile``: every choice the spec leaves unshown, as one declarative object that
both the client and the simulator take. The default is PRODUCT.md's table of decisions."""

from __future__ import annotations

import dataclasses
import os
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolkit.errors import InvalidRequest

TimeUnit = Literal["auto", "s", "ms"]

_LIMIT = ("OPEN", "TRIGGERED", "PROCESSING", "CANCELLING", "EXECUTED", "CLOSED")
_LIMIT_ALL = (*_LIMIT, "EXPIRED", "CANCELLED", "REJECTED")


@dataclass(frozen=True)
class Signin:
    """``POST`` sign-in that yields the operational token (spec 4.4, 5.1: shape not shown)."""

    #: route of the sign-in
    path: str = "/auth/signin"
    #: request body field that carries the API key
    key_field: str = "apiKey"
    #: request body field that carries the API secret
    secret_field: str = "apiSecret"
    #: response field of the token (dotted path for a nested one, e.g. ``data.token``)
    token_field: str = "token"
    #: response field of the token's expiry
    expiry_field: str = "expiresAt"
    #: ``absolute``: the field is a moment (Unix time); ``ttl``: seconds/ms to live
    expiry_kind: Literal["absolute", "ttl"] = "absolute"
    #: unit of the expiry field; ``auto``: a moment by magnitude, a time to live by the
    #: field's name (``ttlMs``), else seconds unless longer than 30 days
    expiry_unit: TimeUnit = "auto"
    #: HTTP statuses of the sign-in that mean "bad API key or secret"
    bad_credentials_statuses: tuple[int, ...] = (401,)


@dataclass(frozen=True)
class Rest:
    """How REST requests carry identity, and the routes whose shapes are not shown."""

    #: header that carries the token
    auth_header: str = "Authorization"
    #: prefix of that header's value; empty for the bare token
    auth_scheme: str = "Bearer"
    #: route of one order (spec 4.4)
    fetch_order_path: str = "/orders/fetchOrder"
    #: its query parameter
    fetch_order_param: str = "orderId"
    #: list (GET) and create (POST) of limit orders
    limit_orders_path: str = "/orders/limit/orders"
    #: cancel one (PATCH); ``{order_id}`` is replaced by the escaped id
    cancel_path: str = "/orders/limit/orders/{order_id}/cancel"
    #: where ``profileId`` travels on cancel (spec 4.3: not shown)
    cancel_profile_in: Literal["body", "query"] = "body"
    #: success status of an accepted cancel (the client accepts any 2xx)
    cancel_status: int = 202
    #: batch cancel (POST): route
    batch_cancel_path: str = "/orders/limit/orders/cancel"
    #: batch cancel: request body field of the id list
    batch_ids_field: str = "orderIds"
    #: ids per batch-cancel request
    batch_cancel_max: int = 100
    #: field of the human-readable text in error bodies (the client never needs it)
    error_message_field: str = "message"


@dataclass(frozen=True)
class Listing:
    """``GET /orders/limit/orders``: page size and the nine list-item fields (spec 2.5, 8)."""

    #: page size asked for when none is given, and the smallest and largest the listing
    #: accepts (spec 4.2: a size out of bounds is a 400)
    page_default: int = 50
    page_min: int = 1
    page_max: int = 100
    #: the item fields, by meaning; dotted paths reach nested fields
    id_field: str = "id"
    symbol_field: str = "symbol"
    side_field: str = "side"
    type_field: str = "type"
    status_field: str = "status"
    limit_price_field: str = "limitPrice"
    expires_at_field: str = "expiresAt"
    created_at_field: str = "createdAt"
    updated_at_field: str = "updatedAt"
    #: members of the filter shortcuts (spec 4.2: not shown)
    active_statuses: tuple[str, ...] = ("OPEN", "TRIGGERED", "PROCESSING")
    finalized_statuses: tuple[str, ...] = (
        "CANCELLING",
        "EXECUTED",
        "CLOSED",
        "EXPIRED",
        "CANCELLED",
        "REJECTED",
    )


@dataclass(frozen=True)
class Orders:
    """Order bodies (fetchOrder and watchOrders share them, spec 2.4)."""

    #: unit of every Unix timestamp; ``auto`` infers s vs ms per value by magnitude
    timestamp_unit: TimeUnit = "auto"
    #: case of limit statuses in payloads (market ones are lowercase, spec 3.1): ``mixed`` =
    #: upper except ``closed``; ``upper`` = all upper; ``lower`` = all lower
    status_case: Literal["mixed", "upper", "lower"] = "mixed"
    #: ``evaluatedTickers`` element fields (spec 2.4: structure not shown)
    quote_venue_field: str = "exchange"
    quote_price_field: str = "price"
    quote_time_field: str = "quotedAt"
    quote_reason_field: str = "reason"


@dataclass(frozen=True)
class Stream:
    """The WebSocket: refusal, keep-alive, limits, confirmations, which events exist."""

    #: HTTP statuses before the upgrade that mean "token refused"
    refusal_http_statuses: tuple[int, ...] = (401, 403)
    #: close codes after the upgrade that mean "token refused"
    refusal_close_codes: tuple[int, ...] = (1008, 4001, 4003, 4401, 4403)
    #: how this service refuses (the simulator uses it; the client accepts both kinds)
    refusal_kind: Literal["http", "close"] = "http"
    #: keep-alive action as sent; empty: the service has none (the client then relies on
    #: data and WebSocket pings to stay within the idle limit)
    keepalive_action: str = "ping"
    #: field/value that recognise the keep-alive reply (``message`` == ``pong``)
    keepalive_reply_field: str = "message"
    keepalive_reply_value: str = "pong"
    #: seconds between keep-alives; must stay below the idle limit
    keepalive_interval_s: float = 60.0
    #: connection limits (spec 8: values not shown)
    max_duration_s: float = 7200.0
    idle_limit_s: float = 600.0
    #: confirmation texts; ``{channel}`` and ``{symbol}`` are lowercase, symbol without slash.
    #: The one with a symbol is fixed by spec 2.2; the others are not shown.
    subscribed_text: str = "Successfully subscribed to channel: {channel}#{symbol}"
    subscribed_text_no_symbol: str = "Successfully subscribed to channel: {channel}"
    unsubscribed_text: str = "Successfully unsubscribed from channel: {channel}#{symbol}"
    unsubscribed_text_no_symbol: str = "Successfully unsubscribed from channel: {channel}"
    #: which limit-order events watchOrders publishes (spec 6 contradiction)
    limit_events: Literal["all", "outcome_only"] = "all"
    #: type of ``onlyPriority`` on watchTickers (spec 4.1: not shown)
    only_priority_type: Literal["bool", "int", "str"] = "bool"


@dataclass(frozen=True)
class Payloads:
    """Where the fields of the watchTicker, watchTickers and watchBalance payloads are
    (spec 6: not shown). Dotted paths reach nested fields; an empty list path means the
    payload itself is the list."""

    #: pair of a watchTicker payload
    ticker_symbol: str = "symbol"
    #: best bid of a ticker
    ticker_bid: str = "bid"
    #: best ask of a ticker
    ticker_ask: str = "ask"
    #: last traded price of a ticker
    ticker_last: str = "last"
    #: time of a ticker (Unix, ``orders.timestamp_unit``)
    ticker_time: str = "timestamp"
    #: the list of tickers in a watchTickers payload (empty: the payload is the list)
    tickers_list: str = "tickers"
    #: the list of balances in a watchBalance payload (empty: the payload is the list)
    balance_list: str = "balances"
    #: asset of one balance
    balance_asset: str = "asset"
    #: amount free to trade
    balance_free: str = "free"
    #: amount held by open orders
    balance_locked: str = "locked"
    #: free + locked
    balance_total: str = "total"
    #: time of a balance (Unix, ``orders.timestamp_unit``)
    balance_time: str = "timestamp"


SECTIONS: dict[str, type] = {
    "signin": Signin,
    "rest": Rest,
    "listing": Listing,
    "orders": Orders,
    "stream": Stream,
    "payloads": Payloads,
}


@dataclass(frozen=True)
class ServiceProfile:
    """Every choice the spec leaves unshown, grouped by where it shows.

    The default instance holds PRODUCT.md's decisions. Load another from TOML with
    ``ServiceProfile.load(path)`` (or ``TOOLKIT_PROFILE=path``), change single points with
    ``profile.replace({"rest.fetch_order_param": "id"})``, compare two with ``diff``, and
    write one with ``dump``. ``Client(..., profile=p)`` and ``Simulator(profile=p)`` take
    the same object, so a test suite can run both sides under another profile.

    Sections: ``signin``, ``rest``, ``listing``, ``orders``, ``stream``, ``payloads``; the
    fields of each are documented on their classes and in ``profiles/default.toml``.
    """

    name: str = "default"
    signin: Signin = field(default_factory=Signin)
    rest: Rest = field(default_factory=Rest)
    listing: Listing = field(default_factory=Listing)
    orders: Orders = field(default_factory=Orders)
    stream: Stream = field(default_factory=Stream)
    payloads: Payloads = field(default_factory=Payloads)

    def __post_init__(self) -> None:
        _check(self)

    # -- files ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ServiceProfile:
        """The profile in a TOML file (see ``profiles/default.toml``)."""
        from toolkit.profile._toml import load_profile

        return load_profile(path)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServiceProfile:
        """The profile of the TOML file named by ``TOOLKIT_PROFILE``, or the default."""
        from toolkit.profile._toml import profile_from_env

        return profile_from_env(environ)

    def dump(self, path: str | os.PathLike[str]) -> Path:
        """Write this profile as TOML, whole or not at all."""
        from toolkit.profile._toml import dump_profile

        return dump_profile(self, path)

    def to_toml(self) -> str:
        """This profile as TOML text."""
        from toolkit.profile._toml import dumps_profile

        return dumps_profile(self)

    # -- building ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "profile") -> ServiceProfile:
        """A profile from nested tables (as TOML gives); unknown names are errors, missing
        ones keep the default."""
        unknown = sorted(set(data) - {"name", *SECTIONS})
        if unknown:
            raise InvalidRequest(
                f"{source}: unknown section(s) {', '.join(unknown)}; "
                f"known: name, {', '.join(SECTIONS)}"
            )
        parts: dict[str, Any] = {}
        for section, klass in SECTIONS.items():
            table = data.get(section, {})
            if not isinstance(table, Mapping):
                raise InvalidRequest(f"{source}: [{section}] must be a table")
            parts[section] = _build_section(klass, section, table, source)
        name = data.get("name", "default")
        if not isinstance(name, str):
            raise InvalidRequest(f"{source}: name must be a string")
        return cls(name=name, **parts)

    def to_dict(self) -> dict[str, Any]:
        """Nested plain values (tuples as lists), the inverse of ``from_dict``."""
        out: dict[str, Any] = {"name": self.name}
        for section in SECTIONS:
            table = dataclasses.asdict(getattr(self, section))
            out[section] = {k: list(v) if isinstance(v, tuple) else v for k, v in table.items()}
        return out

    def replace(self, changes: Mapping[str, Any] | None = None, **kw: Any) -> ServiceProfile:
        """A copy with dotted changes applied: ``replace({"rest.auth_scheme": "Token"})``."""
        data = self.to_dict()
        for dotted, value in {**(changes or {}), **kw}.items():
            if dotted == "name":
                data["name"] = value
                continue
            section, _, name = dotted.partition(".")
            if section not in SECTIONS or not name:
                raise InvalidRequest(
                    f"unknown profile setting {dotted!r}; use section.field, e.g. "
                    "'rest.fetch_order_param'"
                )
            data[section][name] = value
        return ServiceProfile.from_dict(data, source="profile.replace")

    def settings(self) -> list[tuple[str, Any]]:
        """Every setting as (dotted name, value), in declaration order."""
        out: list[tuple[str, Any]] = []
        for section in SECTIONS:
            for f in dataclasses.fields(getattr(self, section)):
                out.append((f"{section}.{f.name}", getattr(getattr(self, section), f.name)))
        return out

    def get(self, dotted: str) -> Any:
        """The value of one setting by its dotted name."""
        section, _, name = dotted.partition(".")
        if section not in SECTIONS:
            raise KeyError(dotted)
        return getattr(getattr(self, section), name)

    def diff(self, other: ServiceProfile) -> list[tuple[str, Any, Any]]:
        """(setting, this value, other value) for every setting that differs."""
        theirs = dict(other.settings())
        return [(k, v, theirs[k]) for k, v in self.settings() if theirs[k] != v]


def _build_section(klass: type, section: str, table: Mapping[str, Any], source: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(klass)}
    unknown = sorted(set(table) - set(fields))
    if unknown:
        raise InvalidRequest(
            f"{source}: unknown setting(s) in [{section}]: {', '.join(unknown)}; "
            f"known: {', '.join(fields)}"
        )
    defaults = klass()
    values: dict[str, Any] = {}
    for name, value in table.items():
        default = getattr(defaults, name)
        values[name] = _coerce(value, default, f"{section}.{name}", source)
    return klass(**values)


def _coerce(value: Any, default: Any, dotted: str, source: str) -> Any:
    def bad(kind: str) -> InvalidRequest:
        return InvalidRequest(f"{source}: {dotted} must be {kind}, not {value!r}")

    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if isinstance(default, tuple):
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
            raise bad("a list")
        kind = type(default[0]) if default else None
        items = tuple(value)
        if kind is not None and not all(
            isinstance(v, kind) and not isinstance(v, bool) for v in items
        ):
            raise bad(f"a list of {kind.__name__}")
        return items
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad("a number")
        return float(value)
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        return value
    if isinstance(default, str):
        if not isinstance(value, str):
            raise bad("a string")
        return value
    return value


_CHOICES: dict[str, tuple[str, ...]] = {
    "signin.expiry_kind": ("absolute", "ttl"),
    "signin.expiry_unit": ("auto", "s", "ms"),
    "rest.cancel_profile_in": ("body", "query"),
    "orders.timestamp_unit": ("auto", "s", "ms"),
    "orders.status_case": ("mixed", "upper", "lower"),
    "stream.refusal_kind": ("http", "close"),
    "stream.limit_events": ("all", "outcome_only"),
    "stream.only_priority_type": ("bool", "int", "str"),
}


def _check(p: ServiceProfile) -> None:
    for dotted, choices in _CHOICES.items():
        if p.get(dotted) not in choices:
            raise InvalidRequest(
                f"profile {dotted} must be one of {', '.join(choices)}, not {p.get(dotted)!r}"
            )
    lst = p.listing
    if not 1 <= lst.page_min <= lst.page_default <= lst.page_max:
        raise InvalidRequest(
            "profile listing needs 1 <= page_min <= page_default <= page_max, not "
            f"{lst.page_min}, {lst.page_default}, {lst.page_max}"
        )
    statuses = set(lst.active_statuses) | set(lst.finalized_statuses)
    if not statuses <= set(_LIMIT_ALL):
        raise InvalidRequest(
            f"profile listing statuses must be among {', '.join(_LIMIT_ALL)}: "
            f"{sorted(statuses - set(_LIMIT_ALL))}"
        )
    for dotted, value in p.settings():
        if dotted.endswith("path") and isinstance(value, str):
            _check_path(dotted, value)
    _check_cancel_path(p.rest.cancel_path)
    for dotted in ("stream.subscribed_text", "stream.unsubscribed_text"):
        if "{channel}" not in p.get(dotted) or "{symbol}" not in p.get(dotted):
            raise InvalidRequest(f"profile {dotted} must contain {{channel}} and {{symbol}}")
    for dotted in ("stream.subscribed_text_no_symbol", "stream.unsubscribed_text_no_symbol"):
        if "{channel}" not in p.get(dotted):
            raise InvalidRequest(f"profile {dotted} must contain {{channel}}")
    s = p.stream
    if s.keepalive_action and not 0 < s.keepalive_interval_s < s.idle_limit_s:
        raise InvalidRequest(
            "profile stream.keepalive_interval_s must be > 0 and below stream.idle_limit_s"
        )
    if not p.signin.bad_credentials_statuses:
        raise InvalidRequest("profile signin.bad_credentials_statuses must not be empty")
    for dotted in (
        "signin.token_field",
        "signin.expiry_field",
        "rest.fetch_order_param",
        "listing.id_field",
    ):
        if not p.get(dotted):
            raise InvalidRequest(f"profile {dotted} must not be empty")


def _check_path(dotted: str, path: str) -> None:
    """A route setting is joined to ``base_url`` as is: it must be an absolute path."""
    if not path.startswith("/"):
        raise InvalidRequest(f"profile {dotted} must start with '/', not {path!r}")
    if "?" in path or "#" in path:
        raise InvalidRequest(
            f"profile {dotted} must be a path without a query or fragment ('?', '#'): {path!r}"
        )


def _check_cancel_path(path: str) -> None:
    """``rest.cancel_path`` is formatted with the order id: ``{order_id}`` must be its one
    field (no other name, conversion or format spec), and its braces balanced."""
    bad = "profile rest.cancel_path must contain {order_id} as its only {...} field"
    try:
        fields = [(f, conv, spec) for _, f, spec, conv in string.Formatter().parse(path)]
    except ValueError as exc:
        raise InvalidRequest(
            f"{bad} ({exc}; write a literal brace as {{{{ or }}}}): {path!r}"
        ) from None
    named = [(f, conv, spec) for f, conv, spec in fields if f is not None]
    if not named or any(f != "order_id" or conv or spec for f, conv, spec in named):
        raise InvalidRequest(f"{bad}: {path!r}")


DEFAULT_PROFILE = ServiceProfile()
