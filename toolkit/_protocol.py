"""Sans-I/O rules of the service's REST surface: statuses and their canonical case, the
ACTIVE/FINALIZED sets, input validation, and the pagination guard of spec 4.2."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any
from urllib.parse import quote

from toolkit._exceptions import InvalidRequest, InvalidResponse, PaginationLoop


class LimitStatus(StrEnum):
    """The nine limit-order statuses (spec 3.2), in their canonical uppercase."""

    OPEN = "OPEN"
    TRIGGERED = "TRIGGERED"
    PROCESSING = "PROCESSING"
    CANCELLING = "CANCELLING"
    EXECUTED = "EXECUTED"
    CLOSED = "CLOSED"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"
    REJECTED = "REJECTED"


class MarketStatus(StrEnum):
    """Market-order statuses (spec 3.1); the service writes them lowercase, we compare in
    the canonical uppercase."""

    PENDING = "PENDING"
    EXECUTED = "EXECUTED"
    CLOSED = "CLOSED"
    REJECTED = "REJECTED"
    EXPIRED = "EXPIRED"


class StatusShortcut(StrEnum):
    """Filter shortcuts of the listing (spec 4.2)."""

    ACTIVE = "ACTIVE"
    FINALIZED = "FINALIZED"


ALL_LIMIT_STATUSES: tuple[str, ...] = tuple(s.value for s in LimitStatus)
#: PRODUCT.md reads the spec literally: ACTIVE "can still execute"
ACTIVE: frozenset[str] = frozenset({"OPEN", "TRIGGERED", "PROCESSING"})
#: ... and FINALIZED "no longer execute" (CANCELLING can no longer execute)
FINALIZED: frozenset[str] = frozenset(ALL_LIMIT_STATUSES) - ACTIVE
#: statuses after which an order never changes again (market and limit)
TERMINAL: frozenset[str] = frozenset({"EXECUTED", "CLOSED", "EXPIRED", "CANCELLED", "REJECTED"})
VALID_STATUS_VALUES: tuple[str, ...] = (*ALL_LIMIT_STATUSES, "ACTIVE", "FINALIZED")

MAX_ORDER_ID_LENGTH = 128
_SYMBOL = re.compile(r"^[A-Z0-9]{1,20}/[A-Z0-9]{1,20}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def canonical_status(raw: str) -> str:
    """The canonical (uppercase) form of a status as any channel or route writes it."""
    return raw.strip().upper()


def is_terminal(status: str) -> bool:
    """True when an order in ``status`` (any case) will never change again."""
    return canonical_status(status) in TERMINAL


# --- validation: every function raises InvalidRequest before anything is sent ------------


def validate_status_filter(status: str | Iterable[str] | None) -> str | None:
    """The ``status`` query value for the listing, or None for no filter.

    Accepts one value, a comma string or a list/tuple; each value must be one of the nine
    statuses or ACTIVE/FINALIZED, uppercase, because the service silently drops an
    unknown value (spec 4.2) and the caller would get every order back.
    """
    if status is None:
        return None
    if isinstance(status, str):
        values = [v.strip() for v in status.split(",")]
    elif isinstance(status, Iterable) and not isinstance(status, Mapping | bytes):
        values = list(status)
        if not all(isinstance(v, str) for v in values):
            raise InvalidRequest(f"status values must be strings, not {values!r}")
        values = [v.strip() for v in values]
    else:
        raise InvalidRequest(
            f"status must be a string, a comma string or a list of strings, not {status!r}"
        )
    if not values or any(not v for v in values):
        raise InvalidRequest(
            f"empty status value in {status!r}; valid values: {', '.join(VALID_STATUS_VALUES)}"
        )
    for value in values:
        if value not in VALID_STATUS_VALUES:
            hint = (
                f" (statuses are uppercase: {value.upper()!r})"
                if value.upper() in VALID_STATUS_VALUES
                else ""
            )
            raise InvalidRequest(
                f"unknown status {value!r}{hint}; valid values: {', '.join(VALID_STATUS_VALUES)}"
            )
    shortcuts = [v for v in values if v in ("ACTIVE", "FINALIZED")]
    if shortcuts and len(values) > 1:
        raise InvalidRequest(
            f"{shortcuts[0]} is a shortcut and cannot be combined with other values: {status!r}"
        )
    return ",".join(dict.fromkeys(values))


def validate_limit(limit: object, maximum: int) -> int:
    """A page size within 1..maximum."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidRequest(f"limit must be an integer in 1..{maximum}, not {limit!r}")
    if not 1 <= limit <= maximum:
        raise InvalidRequest(f"limit must be in 1..{maximum}, not {limit}")
    return limit


def validate_symbol(symbol: object) -> str:
    """A market pair of the form BASE/QUOTE, uppercase letters and digits."""
    if not isinstance(symbol, str) or not _SYMBOL.match(symbol):
        raise InvalidRequest(
            f"symbol must look like BASE/QUOTE in uppercase letters/digits (e.g. 'BTC/BRL'), "
            f"not {symbol!r}"
        )
    return symbol


def validate_profile_id(profile_id: object) -> str:
    """A non-empty profile id without control characters."""
    if not isinstance(profile_id, str) or not profile_id.strip():
        raise InvalidRequest(
            "profile_id is required (a non-empty string); pass profile_id= or set it on the client"
        )
    if _CONTROL.search(profile_id) or len(profile_id) > MAX_ORDER_ID_LENGTH:
        raise InvalidRequest(f"invalid profile_id {profile_id!r}")
    return profile_id


def validate_side(side: object) -> str:
    """``buy`` or ``sell``."""
    if side not in ("buy", "sell"):
        raise InvalidRequest(f"side must be 'buy' or 'sell', not {side!r}")
    return str(side)


def validate_decimal(value: object, name: str) -> str:
    """A positive finite decimal, returned as the string the wire carries."""
    if isinstance(value, bool):
        raise InvalidRequest(f"{name} must be a positive decimal, not {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidRequest(f"{name} must be a positive decimal, not {value!r}")
    if not isinstance(value, str | int | float | Decimal):
        raise InvalidRequest(f"{name} must be a positive decimal, not {value!r}")
    try:
        # repr of a float is its shortest round-tripping form: 0.1 -> "0.1", not 0.1000..01
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(str(value).strip())
    except InvalidOperation:
        raise InvalidRequest(f"{name} must be a positive decimal, not {value!r}") from None
    if not number.is_finite() or number <= 0:
        raise InvalidRequest(f"{name} must be a positive decimal, not {value!r}")
    return format(number, "f")


def validate_order_id(order_id: object) -> str:
    """An order id that is safe to put in a query or a path segment."""
    if not isinstance(order_id, str) or not order_id:
        raise InvalidRequest(f"order id must be a non-empty string, not {order_id!r}")
    if len(order_id) > MAX_ORDER_ID_LENGTH:
        raise InvalidRequest(f"order id longer than {MAX_ORDER_ID_LENGTH} characters")
    if order_id != order_id.strip():
        raise InvalidRequest(f"order id with surrounding whitespace: {order_id!r}")
    if _CONTROL.search(order_id):
        raise InvalidRequest(f"order id contains control characters: {order_id!r}")
    for bad in ("/", "\\", "..", "?", "#", "%"):
        # "%" too: a pre-encoded "%2F" would be decoded by some proxies into a path change
        if bad in order_id:
            raise InvalidRequest(f"order id must not contain {bad!r}: {order_id!r}")
    if order_id in (".", ".."):
        raise InvalidRequest(f"order id cannot be {order_id!r}")
    return order_id


def order_id_path_segment(order_id: str) -> str:
    """``order_id`` validated and percent-encoded as one path segment."""
    return quote(validate_order_id(order_id), safe="")


def validate_order_ids(order_ids: Iterable[object]) -> list[str]:
    """Validated, de-duplicated ids in their first-seen order."""
    if isinstance(order_ids, str | bytes):
        raise InvalidRequest("order ids must be a list of strings, not a single string")
    return list(dict.fromkeys(validate_order_id(i) for i in order_ids))


# --- timestamps --------------------------------------------------------------------------

#: below this a Unix timestamp is in seconds (1e11 s is year 5138; 1e11 ms is 1973)
_SECONDS_BELOW = 100_000_000_000


def to_epoch_ms(value: object, unit: str = "auto") -> int | None:
    """A Unix timestamp as integer milliseconds; ``unit`` is "auto" (by magnitude), "s"
    or "ms". None/"" give None."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidResponse(f"timestamp is not a number: {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise InvalidResponse(f"timestamp is not a number: {value!r}") from None
    if unit == "s" or (unit == "auto" and abs(number) < _SECONDS_BELOW):
        number *= 1000.0
    return round(number)


# --- pagination guard --------------------------------------------------------------------


@dataclass
class Paginator:
    """The rules of spec 4.2 as a state machine; the I/O layer asks ``params()``, sends,
    and feeds the decoded body to ``feed()``, until ``done``.

    - the token is sent back verbatim, and only its absence ends the listing;
    - a page (after the first) made mostly of ids seen before, or a token seen before,
      means the service restarted the listing (a rebuilt token): PaginationLoop, never a
      silent restart;
    - more than ``max_pages`` pages: PaginationLoop;
    - an id seen again on a later page (eventual consistency) is not yielded twice; the
      copy with the newest ``updatedAt`` is kept in ``latest``.
    """

    status: str | None = None
    limit: int = 50
    max_pages: int = 10_000
    pages: int = 0
    token: str | None = None
    done: bool = False
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)
    _tokens_seen: set[str] = field(default_factory=set)

    def params(self) -> dict[str, str]:
        """Query parameters of the next page request."""
        if self.done:
            raise RuntimeError("the listing is complete")
        params = {"limit": str(self.limit)}
        if self.status:
            params["status"] = self.status
        if self.token is not None:
            params["paginationToken"] = self.token
        return params

    def feed(self, body: object) -> list[dict[str, Any]]:
        """Consume one decoded page; returns its items not seen on an earlier page."""
        if self.done:
            raise RuntimeError("the listing is complete")
        if not isinstance(body, Mapping) or not isinstance(body.get("orders"), list):
            raise InvalidResponse("listing page without an 'orders' array")
        items = body["orders"]
        token = body.get("paginationToken")
        if token is not None and not isinstance(token, str):
            raise InvalidResponse("paginationToken is not a string")
        self.pages += 1
        fresh: list[dict[str, Any]] = []
        repeated = 0
        for item in items:
            if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                raise InvalidResponse("listing item without a string 'id'")
            order_id = item["id"]
            previous = self.latest.get(order_id)
            if previous is None:
                self.latest[order_id] = dict(item)
                fresh.append(dict(item))
                continue
            repeated += 1
            if _updated(item) > _updated(previous):
                self.latest[order_id] = dict(item)
        # a restart shows up as a page made mostly of orders already seen (all of them, or
        # all but the few created meanwhile); consistency shifts repeat only a few
        if items and self.pages > 1 and repeated * 2 > len(items):
            raise PaginationLoop(
                f"page {self.pages} of the listing repeats orders of earlier pages: the "
                "service restarted the listing (a rebuilt or rejected paginationToken); "
                "stopped instead of looping forever"
            )
        if not token:
            # absence is the only end signal (rule 4); an empty page without token ends it
            self.done = True
            self.token = None
            return fresh
        if token in self._tokens_seen:
            raise PaginationLoop(
                f"page {self.pages} returned a paginationToken already used: the listing "
                "would never end"
            )
        if self.pages >= self.max_pages:
            raise PaginationLoop(
                f"the listing exceeded its budget of {self.max_pages} pages; raise "
                "max_pages if the account really has that many orders"
            )
        self._tokens_seen.add(token)
        self.token = token
        return fresh


def _updated(item: Mapping[str, Any]) -> float:
    value = item.get("updatedAt")
    try:
        return float(value) if value is not None else float("-inf")
    except (TypeError, ValueError):
        return float("-inf")
