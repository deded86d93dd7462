"""One ``OrderBook`` reconcile: which orders the listing confirms (status and ``updatedAt``
as held: not fetched) and which are fetched (``ReconcilePlan``, sans-I/O), the pass that
reads them (``Reconciler``), and when failing passes mean the service is gone (``Outage``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolkit.errors import (
    InvalidRequest,
    InvalidResponse,
    OrderNotFound,
    ToolkitError,
    TransportError,
)
from toolkit.profile import ServiceProfile, get_path
from toolkit.profile._listing_items import ListItems, listed_state, listing_confirms
from toolkit.protocol import ALL_LIMIT_STATUSES, LIVE_LIMIT_STATUSES, to_epoch_ms
from toolkit.stream._events import OrderEvent
from toolkit.stream._ports import OrderSource

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.stream._orderbook import OrderState

__all__ = ["Outage", "ReconcilePlan", "ReconcileStats", "Reconciler", "settle_delay"]

_log = logging.getLogger("toolkit.orderbook")
_INF = float("inf")


@dataclass(frozen=True, slots=True)
class ReconcileStats:
    """What one reconcile did: ``fetched`` fetchOrder calls, ``confirmed`` limit orders
    the listing showed as the book held them (not fetched), ``changed`` states applied,
    ``seconds`` from its start to its end."""

    fetched: int
    confirmed: int
    changed: int
    seconds: float


def is_limit(order: Mapping[str, Any]) -> bool:
    """Whether an order body (spec 2.4: ``type``) is a limit order, which listings show."""
    kind = order.get("type")
    return isinstance(kind, str) and kind.strip().lower() == "limit"


class ReconcilePlan:
    """The orders one reconcile fetches, filled by the listing items it reads (``listed``).

    At the start every order the book holds that is not final is to be read: the market
    orders (no listing shows them) are fetched; the limit orders wait for the listing
    (``waiting``), which confirms the ones it shows with the status and ``updatedAt`` the
    book holds (spec 4.4: ``orderId`` + ``status`` + ``updatedAt``). A listed order the
    book does not hold, or holds in another state, is fetched; so is a held limit order
    that no listing showed (finished meanwhile, or too new for the eventually consistent
    listing: spec 4.2 rule 6), and one shown by an item that does not read (no status,
    an id that is not a string): a broken item is never trusted. With ``trust_listing``
    False (the strategy before, kept to measure against) nothing is confirmed.
    """

    __slots__ = (
        "_confirmed",
        "_orders",
        "_trust",
        "changed",
        "fetch",
        "fetched",
        "reading",
        "waiting",
    )

    def __init__(self, orders: Mapping[str, OrderState], *, trust_listing: bool = True) -> None:
        self._orders = orders
        self._trust = trust_listing
        self._confirmed: set[str] = set()
        #: orders fetched by id at the end of the listings
        self.fetch: dict[str, None] = {}
        #: held limit orders that no listing item has confirmed yet
        self.waiting: dict[str, None] = {}
        for oid, state in orders.items():
            if state.final:
                continue
            if trust_listing and is_limit(state.order):
                self.waiting[oid] = None
            else:
                self.fetch[oid] = None
        #: every order this reconcile may re-read: their notifications wait for it
        self.reading: dict[str, None] = {**self.fetch, **self.waiting}
        #: fetchOrder calls made, states applied (set by ``Reconciler.read``)
        self.fetched = 0
        self.changed = 0

    def listed(self, item: Mapping[str, Any], reader: ListItems) -> None:
        """Take one listing item; InvalidResponse when it has no order id."""
        oid = reader.order_id(item)
        known = self._orders.get(oid)
        if (known is not None and known.final) or oid in self.fetch:
            return  # a final state never changes; a fetch reads it anyway
        if (
            self._trust
            and known is not None
            and listing_confirms(
                listed_state(reader, item), known.status, known.updated_at_ms or None
            )
        ):
            self.waiting.pop(oid, None)
            self._confirmed.add(oid)
            return
        self.waiting.pop(oid, None)
        self._confirmed.discard(oid)  # another listing showed it otherwise
        self.fetch[oid] = None
        self.reading[oid] = None

    def to_fetch(self) -> list[str]:
        """What the listings did not confirm: fetched by id."""
        return [*self.fetch, *self.waiting]

    @property
    def confirmed(self) -> int:
        return len(self._confirmed)


def _epoch_ms(value: Any, unit: str) -> int:
    """Unix milliseconds of a listing time (seconds by magnitude under ``auto``), 0 when
    absent or not a time."""
    try:
        return to_epoch_ms(value, unit) or 0
    except (InvalidResponse, OverflowError, ValueError):
        return 0


class Reconciler:
    """The reads of a reconcile pass, and the mark of the newest limit order it listed
    (server clock), where the next pass's listing of recent orders stops."""

    __slots__ = ("listing_slack_ms", "profile", "recent_mark")

    def __init__(self, profile: ServiceProfile, listing_slack_ms: int) -> None:
        self.profile = profile
        self.listing_slack_ms = listing_slack_ms
        self.recent_mark: int | None = None

    def _reader(self) -> ListItems:
        """A reader of one listing's items (the id field is inferred once per listing)."""
        return ListItems(self.profile.listing, self.profile.orders.timestamp_unit)

    async def read(
        self,
        client: OrderSource,
        plan: ReconcilePlan,
        apply: Callable[[Mapping[str, Any]], OrderEvent | None],
    ) -> list[OrderEvent]:
        """List, fetch what the plan leaves, ``apply`` each answer (a REST read); the
        changes. InvalidResponse (the contract), else TransportError (the network), is
        raised once what was read is applied; a listing that fails on the network is
        raised at once, nothing fetched."""
        mismatch: InvalidResponse | None = None
        network: TransportError | None = None
        try:
            reader = self._reader()
            async for item in client.aiter_limit_orders(status=list(LIVE_LIMIT_STATUSES)):
                plan.listed(item, reader)
            await self._list_recent(client, plan)
        except InvalidResponse as exc:
            mismatch = exc  # the profile or the contract: raised once known orders are read
        except TransportError as exc:
            # the service is unreachable: fetching every held order would only fail the
            # same way, each after its own timeout; nothing read, nothing to apply
            _log.warning("reconcile: listing limit orders failed: %s", exc)
            raise
        except ToolkitError as exc:
            # e.g. the route is not active yet (404): every held order is fetched instead
            _log.warning("reconcile: listing limit orders failed: %s", exc)
        to_fetch = plan.to_fetch()
        plan.fetched = len(to_fetch)
        results = await asyncio.gather(
            *(_fetch(client, oid) for oid in to_fetch), return_exceptions=True
        )
        changes: list[OrderEvent] = []
        for oid, result in zip(to_fetch, results, strict=True):
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                if isinstance(result, InvalidResponse):
                    mismatch = mismatch or result
                else:
                    if isinstance(result, TransportError):
                        network = network or result
                    _log.warning("reconcile: fetchOrder %s failed: %s", oid, result)
                continue
            if result is None:
                continue
            event = apply(result)
            if event is not None:
                changes.append(event)
        plan.changed = len(changes)
        if mismatch is not None:
            raise mismatch
        if network is not None:
            raise network
        _log.debug(
            "reconcile: %d confirmed by the listing, %d fetched, %d changed",
            plan.confirmed,
            plan.fetched,
            plan.changed,
        )
        return changes

    async def _list_recent(self, client: OrderSource, plan: ReconcilePlan) -> None:
        """Hand the plan the limit orders created since the previous pass, whatever their
        status now: one created and finished inside a gap (or, when the service publishes
        only outcomes, between two reconciles) is in no listing of live orders.

        The listing is newest first, so it stops at the first order older than the newest
        one seen last time (minus ``listing_slack_ms``, for its eventual consistency). The
        first pass only takes that mark: the history before it is the loaders' job.
        """
        mark = self.recent_mark
        newest: int | None = None
        listing, unit = self.profile.listing, self.profile.orders.timestamp_unit
        reader = self._reader()
        pages = client.aiter_limit_orders(status=list(ALL_LIMIT_STATUSES))
        try:
            async for item in pages:
                stamp = get_path(item, listing.created_at_field)
                if stamp is None:
                    stamp = item.get("createdAt")
                created = _epoch_ms(stamp, unit)
                if newest is None or created > newest:
                    newest = created
                if mark is None or created < mark - self.listing_slack_ms:
                    break
                plan.listed(item, reader)
        finally:
            close = getattr(pages, "aclose", None)
            if close is not None:
                await close()
        if newest is not None and (mark is None or newest > mark):
            self.recent_mark = newest
        elif newest is None and mark is None:
            # no limit order at all yet: every order listed from now on is new
            self.recent_mark = 0


async def _fetch(client: OrderSource, order_id: str) -> dict[str, Any] | None:
    try:
        return dict(await client.afetch_order(order_id))
    except OrderNotFound:
        return None


def settle_delay(gap_at: float | None, began: float, now: float, lag_s: float) -> float | None:
    """Seconds until the pass that settles a gap, or None when none is due.

    The listing is eventually consistent (spec 4.2 rule 6) and may still show an order as
    it was before a gap when a pass right after the gap reads it: a change made during the
    gap would then be confirmed away. A pass that began (``began``) less than ``lag_s``
    after the last gap ended (``gap_at``, same clock) is therefore followed by another
    one once the listing has caught up with the gap, which fetches what it shows
    otherwise; changes after the gap came as notifications."""
    if gap_at is None or began >= gap_at + lag_s:
        return None
    return max(0.0, gap_at + lag_s - now)


class Outage:
    """Reconciles that failed on the network (TransportError) one after the other.

    ``failed`` says when to give up: once a failed reconcile ends ``limit_s`` or more
    after the first of the run of failures began (and at least two failed), the service
    is taken as gone. Until then a failed reconcile is tried again after ``retry_s``
    (a quarter of the limit). ``succeeded`` ends the run."""

    __slots__ = ("failures", "limit_s", "since")

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.failures = 0
        self.since: float | None = None

    @staticmethod
    def limit_for(client: object, value: object) -> float:
        """``OrderBook(unreachable_after=value)`` checked: seconds, ``"auto"`` being
        twice the client's ``settings.timeout`` (10 s when it has none)."""
        if value == "auto":
            timeout = getattr(getattr(client, "settings", None), "timeout", None)
            value = 2.0 * (timeout if isinstance(timeout, int | float) else 10.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < _INF:
            raise InvalidRequest(
                f"unreachable_after must be a finite number of seconds > 0, not {value!r}"
            )
        return float(value)

    @property
    def retry_s(self) -> float:
        return self.limit_s / 4

    def failed(self, started: float, now: float) -> bool:
        """One more failed reconcile (begun at ``started``); True: give up."""
        if self.since is None:
            self.since = started
        self.failures += 1
        return self.failures >= 2 and now - self.since >= self.limit_s

    def succeeded(self) -> None:
        self.failures = 0
        self.since = None

    def error(self, now: float, last: TransportError) -> TransportError:
        """The one error the book ends with."""
        lasted = 0.0 if self.since is None else now - self.since
        return TransportError(
            f"the order book stopped: {self.failures} reconciles in a row failed on the "
            f"network over {lasted:.1f}s (the service looks gone); the book keeps its "
            f"last state. Last error: {last.message}",
            method=last.method,
            url=last.url,
        )
