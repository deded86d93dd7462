"""Order ids on the simulator's wire: its own text ids (``l-000123-9f3a``), or, with the
knob ``numeric_ids``, integers (spec 2.5 does not show the list item's types), served as
JSON numbers in the listing and, with ``all``, in fetchOrder bodies and notifications."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.sim._knobs import Knobs
    from toolkit.sim._orders import Order

T = TypeVar("T")

NumericIds = Literal["off", "listing", "all"]
NUMERIC_IDS: tuple[str, ...] = ("off", "listing", "all")

_INTERNAL = re.compile(r"^([lm])-([0-9]+)-([0-9a-f]{4})$")
#: the random part of an internal id: 16 bits
_SPAN = 1 << 16


def number_of(order_id: str, base: int) -> int:
    """The integer that stands for the internal ``order_id`` (``base`` + sequence *
    65,536 + the random part): distinct per order, since sequence numbers are shared by
    market and limit orders."""
    match = _INTERNAL.match(order_id)
    if match is None:  # pragma: no cover - every simulated order has such an id
        raise ValueError(f"not a simulator order id: {order_id!r}")
    return base + int(match[2]) * _SPAN + int(match[3], 16)


def internal_ids(wire: str, base: int) -> tuple[str, ...]:
    """The internal ids a client's decimal ``wire`` id may stand for (limit, market)."""
    if not wire.isascii() or not wire.isdigit():
        return ()
    rest = int(wire) - base
    if rest < 0:
        return ()
    seq, low = divmod(rest, _SPAN)
    return tuple(f"{kind}-{seq:06d}-{low:04x}" for kind in ("l", "m"))


def wire_id(order_id: str, mode: str, base: int) -> str:
    """The id as text on the wire: the internal id, or its number's decimal form."""
    return order_id if mode == "off" else str(number_of(order_id, base))


def wire_value(order_id: str, mode: str, base: int, *, listing: bool) -> str | int:
    """The id as it goes into a JSON body: a number in the listing (``listing`` and
    ``all``) and in order bodies (``all``), text otherwise."""
    if mode == "all" or (mode == "listing" and listing):
        return number_of(order_id, base)
    return wire_id(order_id, mode, base)


def resolve(orders: Mapping[str, T], wire: str, mode: str, base: int) -> T | None:
    """The order a client's id names: its internal id, or (``numeric_ids`` on) the
    decimal form of its number."""
    found = orders.get(wire)
    if found is not None or mode == "off":
        return found
    for candidate in internal_ids(wire, base):
        found = orders.get(candidate)
        if found is not None:
            return found
    return None


class WireIdsMixin:
    """The ids part of :class:`~toolkit.sim._state.SimState`: an order's id as the wire
    shows it, and the order a client's id names, under the knob ``numeric_ids`` (and the
    market orders' ``type`` under ``omit_market_type``)."""

    knobs: Knobs
    orders: dict[str, Order]

    def wire_value(self, order_id: str, *, listing: bool = False) -> str | int:
        """``order_id`` as it goes into a JSON body (the listing's or an order's)."""
        knobs = self.knobs
        return wire_value(order_id, knobs.numeric_ids, knobs.numeric_id_base, listing=listing)

    def on_wire(self, order: Order, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` (fetchOrder == notification) with its id as the wire shows it, and
        without ``type`` for a market order under the knob ``omit_market_type`` (spec
        2.4: market is the default)."""
        body["id"] = self.wire_value(order.id)
        if self.knobs.omit_market_type and not order.is_limit:
            del body["type"]
        return body

    def lookup(self, order_id: str) -> Order | None:
        """The order a client's id names (its number's decimal form: ``numeric_ids``)."""
        return resolve(self.orders, order_id, self.knobs.numeric_ids, self.knobs.numeric_id_base)
