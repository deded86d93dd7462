"""The listing's pagination rules (spec 4.2) as a sans-I/O state machine: the token sent
back verbatim, its absence the only end, a rebuilt token detected, never a silent loop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolkit.errors import InvalidResponse, PaginationLoop


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
