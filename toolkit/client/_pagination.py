"""The listing's pagination rules (spec 4.2) as a sans-I/O state machine: the token sent
back verbatim, its absence the only end, a rebuilt token detected, never a silent loop."""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolkit.client._items import ListItems
from toolkit.errors import InvalidRequest, InvalidResponse, PaginationLoop

logger = logging.getLogger("toolkit.listing")

#: what a page of the wrong size does: raise InvalidResponse, or count it and warn
PageRule = str  # "error" | "warn"
PAGE_RULES = ("error", "warn")


class IrregularPagesWarning(UserWarning):
    """Listing pages of the wrong size were accepted (``page_rule="warn"``): a page with a
    paginationToken but fewer than ``limit`` items (spec 4.2 rule 4), or more than ``limit``."""


@dataclass
class Paginator:
    """The rules of spec 4.2 as a state machine; the I/O layer asks ``params()``, sends,
    and feeds the decoded body to ``feed()``, until ``done``.

    - the token is sent back verbatim, and only its absence ends the listing;
    - a page (after the first) that repeats page one's first id, or that is made mostly
      of ids seen before in any other pattern, or a token seen before, means the service
      restarted the listing (a rebuilt token): PaginationLoop, never a silent restart. A
      page that starts with the tail of what was read, in order (new orders on top
      shifting an offset-like token), is not a restart: those ids are skipped;
    - more than ``max_pages`` pages: PaginationLoop;
    - an id seen again on a later page (eventual consistency) is not yielded twice; the
      copy with the newest updated-at is kept in ``latest``;
    - items are read through ``items`` (the profile's ``listing.*_field`` mapping), and
      handed on with their id in one form (an integer id as its decimal text; any other
      non-text id raises InvalidResponse naming ``listing.id_field``);
    - ``statuses`` (when set) is checked on every item too: the service silently ignores a
      filter it does not recognise (spec 4.2), so an item outside it is dropped, counted
      in ``dropped`` and logged once per listing;
    - a page that carries a token but holds fewer than ``limit`` items (the token comes
      only with a full page: spec 4.2 rule 4), or that holds more than ``limit``, breaks
      the contract: InvalidResponse naming the page and the counts with
      ``page_rule="error"`` (the default); with ``page_rule="warn"`` the listing goes on,
      the pages are counted in ``irregular`` (page number -> items) and one
      :class:`IrregularPagesWarning` at the end says how many orders came on them.
    """

    status: str | None = None
    limit: int = 50
    max_pages: int = 10_000
    items: ListItems = field(default_factory=ListItems)
    statuses: frozenset[str] | None = None
    page_rule: PageRule = "error"
    pages: int = 0
    token: str | None = None
    done: bool = False
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)
    dropped: Counter[str] = field(default_factory=Counter)
    irregular: dict[int, int] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)
    _tokens_seen: set[str] = field(default_factory=set)
    #: every id seen, in listing order (``_order[0]`` is the head of page one)
    _order: list[str] = field(default_factory=list)

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
        self._check_size(len(items), bool(token))
        fresh: list[dict[str, Any]] = []
        seen_before = len(self._order)
        repeated: list[tuple[int, str]] = []  # (position on this page, id)
        for position, raw in enumerate(items):
            # the id in one form (123 and "123" are one order) in every item handed on
            order_id, item = self.items.identified(raw)
            keep = self._wanted(item)
            if order_id not in self._seen:
                self._seen.add(order_id)
                self._order.append(order_id)
                if keep:
                    self.latest[order_id] = item
                    fresh.append(dict(item))
                continue
            repeated.append((position, order_id))
            previous = self.latest.get(order_id)
            if previous is None:
                continue
            if _newer(self.items.updated_ms(item), self.items.updated_ms(previous)):
                if keep:
                    self.latest[order_id] = item
                else:  # its newer state is outside the filter
                    del self.latest[order_id]
        if repeated and self.pages > 1 and self._restarted(repeated, len(items), seen_before):
            raise PaginationLoop(
                f"page {self.pages} of the listing repeats orders of earlier pages: the "
                "service restarted the listing (a rebuilt or rejected paginationToken); "
                "stopped instead of looping forever (or more orders were created while it "
                "was read than it had listed so far)"
            )
        if not token:
            self._log_dropped()
            self._warn_irregular()
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

    def __post_init__(self) -> None:
        check_page_rule(self.page_rule)

    def _restarted(self, repeated: list[tuple[int, str]], count: int, seen_before: int) -> bool:
        """Whether a later page's ``repeated`` ids (with their positions on it) show a
        restart. A restart serves the head of the listing again: page one's first order
        comes back. New orders created on top while an offset-like token is followed
        shift the listing down instead: the next page starts with the tail of what was
        read, in the same order; those ids are already known and simply skipped (nothing
        missing, nothing twice). Any other pattern is a restart when most of the page
        repeats."""
        ids = [order_id for _, order_id in repeated]
        if self._order and self._order[0] in ids:
            return True
        r = len(ids)
        shifted = (
            r <= seen_before
            and [position for position, _ in repeated] == list(range(r))
            and ids == self._order[seen_before - r : seen_before]
        )
        return not shifted and r * 2 > count

    def _check_size(self, count: int, has_token: bool) -> None:
        if count > self.limit:
            problem = f"holds {count} items, more than limit={self.limit}"
        elif has_token and count < self.limit:
            problem = (
                f"holds {count} items (limit={self.limit}) yet carries a paginationToken; "
                "a token comes only with a full page (spec 4.2 rule 4)"
            )
        else:
            return
        if self.page_rule == "error":
            raise InvalidResponse(
                f"listing page {self.pages} {problem}. Pass page_rule='warn' to accept such "
                "pages and count the orders on them"
            )
        self.irregular[self.pages] = count
        logger.warning("listing page %d %s; accepted (page_rule='warn')", self.pages, problem)

    def _warn_irregular(self) -> None:
        if not self.irregular:
            return
        orders = sum(self.irregular.values())
        pages = ", ".join(str(p) for p in sorted(self.irregular))
        warnings.warn(
            f"{len(self.irregular)} listing page(s) of the wrong size (pages {pages}) were "
            f"accepted; {orders} order(s) came on them. The listing may be incomplete or "
            "hold an order twice (spec 4.2 rule 4)",
            IrregularPagesWarning,
            stacklevel=2,
        )

    def _wanted(self, item: Mapping[str, Any]) -> bool:
        if self.statuses is None:
            return True
        status = self.items.status(item, f"the status filter {self.status}")
        if status in self.statuses:
            return True
        self.dropped[status] += 1
        return False

    def _log_dropped(self) -> None:
        if not self.dropped:
            return
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.dropped.items()))
        logger.warning(
            "the listing for status=%s returned items outside that filter (%s); they were "
            "left out. If the service counts them in ACTIVE/FINALIZED, set the profile's "
            "listing.active_statuses/listing.finalized_statuses",
            self.status,
            counts,
        )


def check_page_rule(rule: object) -> str:
    """``rule`` if it is a page rule (``"error"`` or ``"warn"``); InvalidRequest otherwise."""
    if rule not in PAGE_RULES:
        raise InvalidRequest(f"page_rule must be 'error' or 'warn', not {rule!r}")
    return str(rule)


def _newer(candidate: int | None, previous: int | None) -> bool:
    if candidate is None:
        return False
    return previous is None or candidate > previous
