"""The client-side filters of the listing (pairs, creation moments, the statuses a filter
lets through), read through ``ListItems``. Sans-I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolkit.profile import Listing

# ListItems and what an item shows moved down to the profile (the order book reads
# listings too); named here still for the client, the store and their tests
from toolkit.profile._listing_items import ListedState, ListItems, listed_state, listing_confirms
from toolkit.profile._listing_items import _iso_ms as _iso_ms
from toolkit.protocol import ALL_LIMIT_STATUSES

__all__ = [
    "ItemFilter",
    "ListItems",
    "ListedState",
    "listed_state",
    "listing_confirms",
    "statuses_for",
]


def statuses_for(status: str | None, listing: Listing) -> frozenset[str] | None:
    """The statuses a (validated, uppercase) ``status`` filter lets through, with ACTIVE and
    FINALIZED taken from the profile; None when nothing is to be checked (no filter, or
    all nine)."""
    if not status:
        return None
    if status == "ACTIVE":
        wanted = frozenset(listing.active_statuses)
    elif status == "FINALIZED":
        wanted = frozenset(listing.finalized_statuses)
    else:
        wanted = frozenset(s.strip() for s in status.split(","))
    return None if wanted >= frozenset(ALL_LIMIT_STATUSES) else wanted


@dataclass(frozen=True)
class ItemFilter:
    """Client-side filters of the loader: pairs, and ``since`` (inclusive) / ``until``
    (exclusive) on the creation moment. A filter whose field the items do not carry raises
    InvalidResponse naming the setting, never silently drops every order."""

    symbols: frozenset[str] | None = None
    since_ms: int | None = None
    until_ms: int | None = None

    @property
    def active(self) -> bool:
        return self.symbols is not None or self.since_ms is not None or self.until_ms is not None

    def keep(self, item: Mapping[str, Any], items: ListItems) -> bool:
        if self.symbols is not None and items.symbol(item) not in self.symbols:
            return False
        if self.since_ms is None and self.until_ms is None:
            return True
        created = items.created_ms(item)
        if self.since_ms is not None and created < self.since_ms:
            return False
        return not (self.until_ms is not None and created >= self.until_ms)
