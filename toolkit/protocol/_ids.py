"""One form for an order id whatever JSON type carries it (spec 2.5 does not show the list
item's types): text as sent, an integer as its decimal digits, so ``123`` and ``"123"``
are one order everywhere (keys, sets, files); anything else is no id."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from toolkit.errors import InvalidResponse
from toolkit.protocol._json import kind_of

#: below it a double holds every integer exactly (2**53 + 1 already reads as 2**53): a JSON
#: number with a fraction or an exponent is read as a double by most parsers, so from
#: here on it may already be another order's id
_EXACT = 2**53


def canonical_order_id(value: Any) -> str | None:
    """The canonical text of an order id: a non-empty string as is, an integer (any
    size, kept exact) as its decimal digits, a number written with a fraction or an
    exponent (``123.0``, ``1.23e5``) only when it is an integer below 2**53;
    None for anything else (``1.5``, ``1e20``, a boolean, null, ``""``, an object)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float | Decimal):
        try:
            whole = int(value)
        except (OverflowError, ValueError):  # inf, nan
            return None
        if whole == value and abs(whole) < _EXACT:
            return str(whole)
    return None


def order_id_problem(value: Any) -> str:
    """Why ``value`` is no order id, for a message (the value shown for a number only)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return f"is {kind_of(value)}" if value != "" else "is empty"
    return (
        f"is the number {value}, which is not an exact integer (a fraction, or beyond "
        "2**53 written with an exponent: a double may have rounded it to another order's "
        "id)"
    )


def require_order_id(value: Any, where: str) -> str:
    """:func:`canonical_order_id` of ``value``, or InvalidResponse saying ``where`` (the
    field and the setting naming it) holds no usable id."""
    found = canonical_order_id(value)
    if found is None:
        raise InvalidResponse(
            f"{where} {order_id_problem(value)}; an order id must be text or an integer"
        )
    return found
