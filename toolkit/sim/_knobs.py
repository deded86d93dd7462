"""Settings of the simulator: the decisions PRODUCT.md takes where the spec is silent,
and the fault knobs that tests flip at run time through ``/_sim/knobs``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolkit.errors import InvalidRequest
from toolkit.profile import ServiceProfile
from toolkit.profile._model import SettingError, located
from toolkit.profile._toml import setting_line
from toolkit.sim._ids import NUMERIC_IDS, NumericIds

EventMode = Literal["all", "outcome_only"]
PayloadTimeFormat = Literal["unix", "iso"]
StatusCase = Literal["mixed", "upper", "lower"]


@dataclass
class Knobs:
    """Every knob has the product's default; all are settable on ``Simulator(**knobs)``,
    on ``toolkit sim --knob name=value`` and at run time with ``PATCH /_sim/knobs``. The
    ones that duplicate a profile point start from the simulator's profile
    (:func:`profile_knobs`)."""

    seed: int = 7
    #: orders in the seeded history of account A1 (A2 gets a tenth)
    history_orders: int = 2000
    #: added to every REST response, in milliseconds
    latency_ms: float = 0.0
    #: share of listing calls answered 503
    listing_503_rate: float = 0.0
    #: a fault on a given page: every call for page N (1 = the first; 0 = none) of a
    #: listing is answered ``listing_fault_status`` (503: unavailable, retried by a
    #: client; 404: the route deactivated while the listing is read)
    listing_fault_page: int = 0
    listing_fault_status: int = 503
    #: eventual consistency: the listing shows the store as it was this many seconds ago
    listing_lag_s: float = 0.0
    #: the limit-order routes (list, create, cancel, batch cancel); False -> 404 on every call
    limit_routes_active: bool = True
    #: tokens rebuilt on every page: the listing silently restarts at page one
    rebuild_pagination_tokens: bool = False
    #: requests per second per API key; None = no limit; beyond -> 429 + Retry-After
    rate_limit_per_s: float | None = None
    #: a service gone silent (a black hole): every service route (sign-in included) takes
    #: the connection and the request and never answers while this is true; the control
    #: API under /_sim/ still answers, so a test can flip it back
    silent: bool = False
    #: the service answers this many more requests of its routes, then turns ``silent``
    #: on (counts down with each one; None = never), so a test can silence it mid-load
    silent_after_requests: int | None = None
    #: lifetime of an operational token
    token_ttl_s: float = 3600.0
    #: WebSocket connection limits (spec 8): max duration and idle limit
    ws_max_duration_s: float = 7200.0
    ws_idle_limit_s: float = 600.0
    #: close code of a connection ended at either limit (1000; a gateway may use its own)
    ws_limit_close_code: int = 1000
    #: which limit-order events watchOrders publishes (spec 6 contradiction)
    limit_events: EventMode = "all"
    #: case of statuses in notifications: limit statuses uppercase, market lowercase
    status_case: StatusCase = "mixed"
    #: the live engine: price ticks and random market/limit activity
    engine: bool = True
    tick_interval_s: float = 0.5
    #: mean seconds between random market orders of the engine; 0 = none
    order_interval_s: float = 3.0
    #: delay of the asynchronous CANCELLING -> CANCELLED completion
    cancel_completion_s: float = 0.2
    #: beat of the execution cycle TRIGGERED -> PROCESSING -> EXECUTED -> closed
    execution_step_s: float = 0.05
    #: share of engine-triggered limit orders whose execution fails recoverably and re-arms
    #: to OPEN (spec 3.2); triggers from ``/_sim/prices`` always execute, for determinism
    rearm_rate: float = 0.05
    #: resolution of an order's ``updatedAt``, in ms: at 1 it strictly increases with
    #: every state, so no two states of an order tie; at 1000 it is whole seconds (the
    #: spec shows no unit) and the states of one second share it
    updated_at_resolution_ms: int = 1
    #: page size rules of the listing (``listing.page_*`` of the profile)
    page_default: int = 50
    page_max: int = 100
    page_min: int = 1
    #: ids per batch-cancel request; more -> 400
    batch_cancel_max: int = 100
    #: order ids as integers (spec 2.5 shows no field types): ``listing`` serves them as
    #: JSON numbers in list items (their decimal text elsewhere), ``all`` in fetchOrder
    #: bodies and notifications too; ``off``: the simulator's own text ids
    numeric_ids: NumericIds = "off"
    #: added to every numeric id (``2**60``: beyond a double's exact integers, 2**53)
    numeric_id_base: int = 0
    #: market orders' bodies (fetchOrder, notifications) carry no ``type``: spec 2.4 says
    #: market is the default, so a service may leave it out
    omit_market_type: bool = False
    #: name in `exchange` for service-managed orders
    service_name: str = "toolkit-sim"
    #: status of an input refusal (400; a gateway may say 422)
    validation_status: int = 400
    #: the cancel reads ``profileId`` only where ``rest.cancel_profile_in`` says (the
    #: default body placement also takes the query unless this is set)
    cancel_profile_strict: bool = False
    #: times of ticker and balance payloads and of ``evaluatedTickers`` quotes: Unix
    #: numbers in ``orders.timestamp_unit`` (``unix``) or ISO-8601 text (``iso``); the
    #: spec shows neither payload, and says "Unix" only of order and trade stamps
    payload_time_format: PayloadTimeFormat = "unix"
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_profile(cls, profile: ServiceProfile, seed: int = 7) -> Knobs:
        """Knobs whose profile points (page sizes, batch size, connection limits, limit
        events, status case) start from ``profile``, then the knobs of its
        ``[simulator]`` table; still settable at run time.

        Raises
        ------
        InvalidRequest
            A knob of the ``[simulator]`` table is unknown or its value does not fit; the
            message names the knob, and the profile's file and line when it was loaded
            from one.
        """
        knobs = cls(seed=seed)
        knobs.update(**profile_knobs(profile))
        for name, value in profile.simulator.items():
            try:
                knobs.update(**{name: value})
            except InvalidRequest as exc:
                raise _located(profile, name, exc.message) from None
        return knobs

    def update(self, **changes: Any) -> None:
        """Set knobs; every value is checked by type and range first (ValueError naming
        the knob, nothing changed), so a bad one fails at start or on ``PATCH``, never as
        500s on every request afterwards."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise InvalidRequest(f"unknown simulator knob(s): {', '.join(unknown)}")
        checked = {name: check_knob(name, value) for name, value in changes.items()}
        for name, value in checked.items():
            setattr(self, name, value)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _located(profile: ServiceProfile, name: str, message: str) -> InvalidRequest:
    """``message`` about knob ``name`` of ``profile``'s ``[simulator]`` table, said of its
    file and line when it came from one."""
    setting = f"simulator.{name}"
    error = SettingError(f"profile {message}", setting)
    if not profile.origin:
        return located(error, f"profile {profile.name!r}")
    try:
        text = Path(profile.origin).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return located(error, profile.origin)
    return located(error, profile.origin, setting_line(text, (setting,)))


def _number(name: str, value: Any, low: float, high: float, *, low_open: bool) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRequest(f"knob {name} must be a number, not {value!r}")
    number = float(value)
    too_low = number <= low if low_open else number < low
    if number != number or too_low or number > high:
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        upper = "" if high == float("inf") else f" and <= {high:g}"
        raise InvalidRequest(f"knob {name} must be {bound}{upper}, not {value!r}")
    return value


def _integer(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidRequest(f"knob {name} must be an integer >= {low}, not {value!r}")
    return value


_INF = float("inf")
#: knob -> (kind, lower bound, lower bound excluded, upper bound)
_NUMBERS: dict[str, tuple[float, bool, float]] = {
    "latency_ms": (0, False, 600_000),
    "listing_503_rate": (0, False, 1),
    "listing_lag_s": (0, False, _INF),
    "token_ttl_s": (0, False, _INF),  # 0: every token is born expired (tests use it)
    "ws_max_duration_s": (0, True, _INF),
    "ws_idle_limit_s": (0, True, _INF),
    "tick_interval_s": (0, True, _INF),
    "order_interval_s": (0, False, _INF),
    "cancel_completion_s": (0, False, _INF),
    "execution_step_s": (0, True, _INF),
    "rearm_rate": (0, False, 1),
}
_INTEGERS: dict[str, int] = {
    "seed": 0,
    "history_orders": 0,
    "page_default": 1,
    "page_max": 1,
    "page_min": 1,
    "batch_cancel_max": 1,
    "updated_at_resolution_ms": 1,
    "numeric_id_base": 0,
    "listing_fault_page": 0,
}
#: what a listing page fault may answer
_FAULT_STATUSES = (404, 500, 502, 503, 504)
_CHOICES: dict[str, tuple[str, ...]] = {
    "limit_events": ("all", "outcome_only"),
    "status_case": ("mixed", "upper", "lower"),
    "numeric_ids": NUMERIC_IDS,
    "payload_time_format": ("unix", "iso"),
}


def check_knob(name: str, value: Any) -> Any:
    """``value`` if it fits knob ``name`` (type and range), else ValueError naming both."""
    if name in _NUMBERS:
        low, low_open, high = _NUMBERS[name]
        return _number(name, value, low, high, low_open=low_open)
    if name in _INTEGERS:
        return _integer(name, value, _INTEGERS[name])
    if name in _CHOICES:
        if value not in _CHOICES[name]:
            raise InvalidRequest(
                f"knob {name} must be one of {', '.join(_CHOICES[name])}, not {value!r}"
            )
        return value
    if name == "silent_after_requests":
        return None if value is None else _integer(name, value, 0)
    if name in (
        "limit_routes_active",
        "rebuild_pagination_tokens",
        "engine",
        "omit_market_type",
        "cancel_profile_strict",
        "silent",
    ):
        if not isinstance(value, bool):
            raise InvalidRequest(f"knob {name} must be true or false, not {value!r}")
        return value
    if name == "ws_limit_close_code":
        if isinstance(value, bool) or not isinstance(value, int) or not 1000 <= value <= 4999:
            raise InvalidRequest(f"knob {name} must be a close code 1000..4999, not {value!r}")
        return value
    if name == "validation_status":
        if value not in (400, 422):
            raise InvalidRequest(f"knob {name} must be 400 or 422, not {value!r}")
        return value
    if name == "listing_fault_status":
        if value not in _FAULT_STATUSES or isinstance(value, bool):
            raise InvalidRequest(
                f"knob {name} must be one of {', '.join(map(str, _FAULT_STATUSES))}, not {value!r}"
            )
        return value
    if name == "rate_limit_per_s":
        return None if value is None else _number(name, value, 0, _INF, low_open=True)
    if name == "service_name":
        if not isinstance(value, str) or not value.strip():
            raise InvalidRequest(f"knob {name} must be a non-empty string, not {value!r}")
        return value
    if name == "extra":
        if not isinstance(value, dict):
            raise InvalidRequest(f"knob extra must be an object, not {value!r}")
        return value
    return value


def profile_knobs(profile: ServiceProfile) -> dict[str, Any]:
    """The knobs that duplicate a point of ``profile``, with the profile's values."""
    return {
        "page_default": profile.listing.page_default,
        "page_min": profile.listing.page_min,
        "page_max": profile.listing.page_max,
        "batch_cancel_max": profile.rest.batch_cancel_max,
        "ws_max_duration_s": profile.stream.max_duration_s,
        "ws_idle_limit_s": profile.stream.idle_limit_s,
        "limit_events": profile.stream.limit_events,
        "status_case": profile.orders.status_case,
    }
