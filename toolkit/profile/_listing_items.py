"""Limit-order list items read through the profile (spec 2.5: the nine fields' names are not
shown): the id (inferred from the usual names when the configured field is absent), the
times, the pair and the status; and what an item shows of its order, which reconciliation
(the order store's sync, the order book) trusts or not. Sans-I/O."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from toolkit.errors import InvalidResponse
from toolkit.profile._model import DEFAULT_PROFILE, Listing
from toolkit.profile._paths import ID_CANDIDATES, find_field, get_path
from toolkit.protocol import canonical_status, require_order_id, to_epoch_ms

logger = logging.getLogger("toolkit.listing")

_MISSING: Any = object()


def _names(item: Mapping[str, Any]) -> str:
    """The item's field names (never values), for error messages."""
    return ", ".join(sorted(map(str, item))) or "(none)"


class ListItems:
    """Reads one listing's items with the profile's ``listing.*_field`` mapping.

    The id: ``listing.id_field`` when the item has it; otherwise the first of
    ``ID_CANDIDATES`` the first such item carries, chosen once per listing (logged at INFO)
    and used for every later item. No id at all raises InvalidResponse naming
    ``listing.id_field`` and the item's field names. Times are Unix seconds or milliseconds
    per ``orders.timestamp_unit`` (``auto``: by magnitude, per value).
    """

    def __init__(
        self,
        listing: Listing = DEFAULT_PROFILE.listing,
        timestamp_unit: str = "auto",
        *,
        order_bodies: bool = False,
    ) -> None:
        self.listing = listing
        #: reading whole order bodies (fetchOrder, spec 2.4: field names fixed) instead
        self.order_bodies = order_bodies
        self.timestamp_unit = timestamp_unit
        #: the id field in use (None until the first item is read)
        self.id_field: str | None = None
        #: True when that field was inferred rather than configured
        self.id_inferred = False

    # -- the id ------------------------------------------------------------------------------

    def order_id(self, item: object) -> str:
        if not isinstance(item, Mapping):
            raise InvalidResponse(f"listing item is not an object: {type(item).__name__}")
        if self.id_field is None:
            self._resolve_id(item)
        assert self.id_field is not None
        value = get_path(item, self.id_field, _MISSING)
        if value is _MISSING:
            raise InvalidResponse(self._no_id(item))
        # one form whatever the JSON type: 123 and "123" are the same order everywhere
        where = (
            f"order's {self.id_field!r} (spec 2.4)"
            if self.order_bodies
            else f"listing item's id field {self.id_field!r} (listing.id_field = "
            f"{self.listing.id_field!r})"
        )
        return require_order_id(value, where)

    def identified(self, item: object) -> tuple[str, dict[str, Any]]:
        """:meth:`order_id` and a copy of ``item`` whose id field holds it (an integer id
        as its decimal text), so that whoever reads the item's id gets the one form."""
        order_id = self.order_id(item)
        assert isinstance(item, Mapping) and self.id_field is not None
        out = dict(item)
        if get_path(out, self.id_field) == order_id:
            return order_id, out
        *outer, last = self.id_field.split(".")
        node = out
        for step in outer:  # copied on the way: the caller's item stays as it came
            node[step] = node = dict(node[step])
        node[last] = order_id
        return order_id, out

    def _resolve_id(self, item: Mapping[str, Any]) -> None:
        configured = self.listing.id_field
        found = find_field(item, configured, ID_CANDIDATES)
        if found is None:
            raise InvalidResponse(self._no_id(item))
        if found != configured:
            self.id_inferred = True
            logger.info(
                "listing items have no %r (listing.id_field); using %r as the order id for "
                "this listing",
                configured,
                found,
            )
        self.id_field = found

    def _no_id(self, item: Mapping[str, Any]) -> str:
        tried = ", ".join(dict.fromkeys((self.listing.id_field, *ID_CANDIDATES)))
        return (
            f"listing item without an order id: no {self.listing.id_field!r} "
            f"(listing.id_field) nor any usual id name ({tried}); the item's fields: "
            f"{_names(item)}. Set listing.id_field in the profile"
        )

    # -- other fields ------------------------------------------------------------------------

    def _required(
        self, item: Mapping[str, Any], setting: str, purpose: str, *, blank_ok: bool = True
    ) -> Any:
        path = getattr(self.listing, setting)
        value = get_path(item, path, _MISSING)
        # "" is how the service says "no value": no moment at all for a time
        missing = value is _MISSING or value is None or (value == "" and not blank_ok)
        if missing and self.order_bodies:
            raise InvalidResponse(
                f"order has no {path!r} (spec 2.4), needed for {purpose}; the order's "
                f"fields: {_names(item)}"
            )
        if missing:
            raise InvalidResponse(
                f"listing item has no {path!r} (listing.{setting}), needed for {purpose}; "
                f"the item's fields: {_names(item)}. Set listing.{setting} in the profile"
            )
        return value

    def _time(self, value: object, setting: str) -> int | None:
        """``value`` as Unix ms: a number or numeric string (seconds or ms per
        ``timestamp_unit``), or an ISO 8601 string (naive = UTC): the forms the frames
        read (``toolkit.frames``), so a filter never refuses what the frames accept."""
        try:
            return to_epoch_ms(value, self.timestamp_unit)
        except InvalidResponse:
            ms = _iso_ms(value)
        except (ValueError, OverflowError):  # "nan", "inf"
            ms = None
        if ms is not None:
            return ms
        path = getattr(self.listing, setting)
        where = (
            f"order's {path!r} (spec 2.4)"
            if self.order_bodies
            else f"listing item's {path!r} (listing.{setting})"
        )
        raise InvalidResponse(
            f"{where} is neither a Unix timestamp nor an ISO 8601 time: {type(value).__name__}"
        )

    def created_ms(self, item: Mapping[str, Any], purpose: str = "since=/until=") -> int:
        """Creation moment (Unix ms); raises naming ``listing.created_at_field`` when the
        item does not carry it."""
        value = self._required(item, "created_at_field", purpose, blank_ok=False)
        ms = self._time(value, "created_at_field")
        assert ms is not None
        return ms

    def updated_ms(self, item: Mapping[str, Any]) -> int | None:
        """Last update (Unix ms), or None when absent or unreadable (de-duplication only
        prefers the newer copy, it needs no value)."""
        value = get_path(item, self.listing.updated_at_field)
        try:
            return self._time(value, "updated_at_field")
        except InvalidResponse:
            return None

    def symbol(self, item: Mapping[str, Any], purpose: str = "symbols=") -> str:
        return str(self._required(item, "symbol_field", purpose))

    def status(self, item: Mapping[str, Any], purpose: str = "the status filter") -> str:
        value = self._required(item, "status_field", purpose)
        if not isinstance(value, str):
            raise InvalidResponse(
                f"listing item's {self.listing.status_field!r} (listing.status_field) is not "
                "a string"
            )
        return canonical_status(value)


#: the state a listing item shows of its order: (canonical status, updatedAt in Unix ms or
#: None when it has none that reads)
ListedState = tuple[str, int | None]


def listed_state(reader: ListItems, item: Mapping[str, Any]) -> ListedState | None:
    """What a listing item shows of its order (status, updatedAt), or None when that is
    not to be trusted: the item has no readable status, or an id that is not a string
    (a contract break: the order is fetched instead). Call after ``reader.order_id(item)``.
    """
    if reader.id_field is not None and not isinstance(get_path(item, reader.id_field), str):
        return None
    try:
        return reader.status(item, "reconciliation"), reader.updated_ms(item)
    except InvalidResponse:
        return None


def listing_confirms(listed: ListedState | None, status: str, updated_ms: int | None) -> bool:
    """Whether a listing item confirms a held state ``status`` at ``updated_ms``
    (reconciliation with ``orderId`` + ``status`` + ``updatedAt``, spec 4.4): both read
    and equal. An item without a readable ``updatedAt`` confirms nothing."""
    return listed is not None and listed[1] is not None and listed == (status, updated_ms)


def _iso_ms(value: object) -> int | None:
    """An ISO 8601 string as Unix ms (naive = UTC), or None."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return round(moment.timestamp() * 1000)
    except (OverflowError, OSError, ValueError):
        return None
