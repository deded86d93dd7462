"""Input validation: every function raises ``InvalidRequest`` before anything is sent, so
a bad argument never reaches the service (statuses, page size, symbols, ids, decimals)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from urllib.parse import quote

from toolkit.errors import InvalidRequest
from toolkit.protocol._statuses import VALID_STATUS_VALUES

MAX_ORDER_ID_LENGTH = 128
_SYMBOL = re.compile(r"^[A-Z0-9]{1,20}/[A-Z0-9]{1,20}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


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


def validate_limit(limit: object, maximum: int, minimum: int = 1) -> int:
    """A page size within minimum..maximum."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidRequest(f"limit must be an integer in {minimum}..{maximum}, not {limit!r}")
    if not minimum <= limit <= maximum:
        raise InvalidRequest(f"limit must be in {minimum}..{maximum}, not {limit}")
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
