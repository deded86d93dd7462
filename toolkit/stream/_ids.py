"""The id of an order notification in its one form (``toolkit.protocol.canonical_order_id``):
``123`` and ``"123"`` name one order in the events, the book and the recordings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolkit.profile import ID_CANDIDATES
from toolkit.protocol import canonical_order_id

__all__ = ["id_value", "order_id_of", "with_id"]


def id_value(order: Mapping[str, Any]) -> Any:
    """The value of ``id``, else of the first usual id name the body has (None if none)."""
    value = order.get("id")
    if value is None:
        for name in ID_CANDIDATES:
            if order.get(name) is not None:
                return order[name]
    return value


def order_id_of(order: Mapping[str, Any]) -> str:
    """The id of an order body in its one form (``toolkit.protocol.canonical_order_id``:
    text as sent, an integer as its decimal digits): ``id``, else the first usual id name
    it has; "" when none holds an id (a fraction, a boolean, an object: never its text)."""
    value = order.get("id")
    if value.__class__ is str:
        return value  # type: ignore[no-any-return]
    return canonical_order_id(id_value(order)) or ""


def with_id(order: Mapping[str, Any], order_id: str) -> dict[str, Any]:
    """A copy of ``order`` whose ``id`` (when it holds one) is ``order_id``, its one form."""
    out = dict(order)
    if order_id and out.get("id") is not None and out["id"] != order_id:
        out["id"] = order_id
    return out
