"""Loaders: page the limit-order listing (or take given ids), fetch every order
concurrently, and hand the raw bodies to the frames builder."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, cast

from toolkit.client._concurrency import AdaptiveLimit, check_concurrency, gated, pump
from toolkit.client._items import ItemFilter, ListItems
from toolkit.client._pagination import check_page_rule
from toolkit.errors import InvalidRequest, OrderNotFound, TransportError
from toolkit.profile import DEFAULT_PROFILE
from toolkit.protocol import (
    ALL_LIMIT_STATUSES,
    to_epoch_ms,
    validate_order_ids,
    validate_status_filter,
    validate_symbol,
)

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client._client import Client
    from toolkit.frames._frames import OrderFrames

logger = logging.getLogger("toolkit.loaders")

#: a moment: ISO string ("2026-11-01", "2026-11-01T12:00Z"), date, datetime (naive = UTC)
#: or a Unix timestamp (seconds or milliseconds, told apart by magnitude)
TimeBound = str | date | datetime | int | float | None

#: how far past ``since`` (or the store's newest listed order) the listing is still read:
#: the listing is eventually consistent (spec 4.2 rule 6) and may show an order late
LISTING_OVERLAP_S = 600.0
#: the moments a bound may name: year 1970 to 9999, in Unix milliseconds
_MAX_MS = 253_402_300_799_999


class MissingOrdersWarning(UserWarning):
    """Orders listed (or asked for by id) that fetchOrder no longer found."""


def parse_time_bound(value: TimeBound, name: str) -> int | None:
    """``value`` as Unix milliseconds (UTC), or None; InvalidRequest for anything that
    names no moment between 1970 and 9999 (inf, nan, a bool, a negative number, a bad
    string)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidRequest(f"{name} must be a date, datetime, ISO string or timestamp")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise InvalidRequest(f"{name} must be a finite Unix timestamp >= 0, not {value!r}")
        ms = to_epoch_ms(value)
        assert ms is not None
        return _in_range(ms, name, value)
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed: date | datetime = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidRequest(
                f"{name} must be an ISO date or datetime like '2026-11-01', not {value!r}"
            ) from None
        value = parsed
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        try:
            ms = int(moment.timestamp() * 1000)
        except (OverflowError, OSError, ValueError):
            raise InvalidRequest(f"{name} is out of range: {value!r}") from None
        return _in_range(ms, name, value)
    if isinstance(value, date):
        return int(datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp() * 1000)
    raise InvalidRequest(f"{name} must be a date, datetime, ISO string or timestamp")


def _in_range(ms: int, name: str, value: object) -> int:
    if not 0 <= ms <= _MAX_MS:
        raise InvalidRequest(f"{name} is outside 1970..9999: {value!r}")
    return ms


def _symbols(symbols: str | Iterable[str] | None) -> frozenset[str] | None:
    if symbols is None:
        return None
    values = [symbols] if isinstance(symbols, str) else list(symbols)
    if not values:
        raise InvalidRequest("symbols= is empty; pass None for every symbol")
    return frozenset(validate_symbol(s) for s in values)


async def aload_orders(
    client: Client,
    *,
    status: str | Iterable[str] | None = None,
    since: TimeBound = None,
    until: TimeBound = None,
    symbols: str | Iterable[str] | None = None,
    ids: Iterable[str] | None = None,
    exact: bool = False,
    progress: bool = True,
    concurrency: int | None = None,
    page_rule: str = "error",
    overlap_s: float = LISTING_OVERLAP_S,
) -> OrderFrames:
    """Load orders into :class:`~toolkit.frames._frames.OrderFrames`.

    Without ``ids``: every limit order of the listing matching ``status`` (all nine
    statuses are sent explicitly when it is None, never a shortcut); market orders are not
    in that listing, so load them with ``ids=`` (or keep them in a
    :class:`toolkit.store.OrderStore`). With ``ids``: exactly those orders
    (``status`` is refused then: filter the frames). ``since`` (inclusive) and ``until``
    (exclusive) filter on the creation moment; ``symbols`` on the pair; both client-side,
    on the list items through the profile's ``listing.created_at_field`` /
    ``listing.symbol_field`` (seconds or ms per ``orders.timestamp_unit``), or with
    ``ids=`` on the fetched orders' ``createdAt``/``symbol`` (spec 2.4). Items that do not
    carry a field a filter needs raise InvalidResponse naming the setting, never an empty
    result. ACTIVE/FINALIZED are the profile's ``listing.active_statuses`` /
    ``listing.finalized_statuses``.

    With ``since``, paging stops once the listing (newest first) is past ``since`` by
    ``overlap_s`` seconds (default 600: spec 4.2 rule 6, eventual consistency) for a
    whole page's worth of items in a row, after an item at or after that bound
    (:class:`ListingStop`); if the items turn out not to be in creation order, the whole
    listing is read instead. So is a listing whose newest items are already before the
    bound (``since`` later than every order): the whole listing costs its pages, never a
    silently empty result.

    Every order is read with fetchOrder while the listing is still paging, at most
    ``concurrency`` (default ``settings.concurrency``) requests in flight, adapted to the
    service (:class:`~toolkit.client._concurrency.AdaptiveLimit`: AIMD on 429 and latency
    growth; a 429 pauses every send for its Retry-After and paces the sends at the rate
    the service accepted, so a low rate limit slows the load down instead of failing it).
    A listing page of the wrong size (spec 4.2 rule 4) raises InvalidResponse;
    ``page_rule="warn"`` accepts it with a warning counting the orders concerned. An
    order that 404s by then is not silently lost: it is named in a
    :class:`MissingOrdersWarning` and in ``frames.missing``; ``frames.attrs`` records how
    the frames were loaded. Every argument is checked before any request: bad values
    raise InvalidRequest.
    A progress bar (``tqdm.auto``) shows unless ``progress=False``.
    """
    if ids is not None and status is not None:
        raise InvalidRequest("status= filters the listing; with ids= filter the frames instead")
    status_value = validate_status_filter(status)
    if status_value is None:
        status_value = ",".join(ALL_LIMIT_STATUSES)
    since_ms = parse_time_bound(since, "since")
    until_ms = parse_time_bound(until, "until")
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise InvalidRequest("since must be earlier than until")
    wanted_symbols = _symbols(symbols)
    id_list = validate_order_ids(ids) if ids is not None else None
    workers = check_concurrency(client.settings.concurrency if concurrency is None else concurrency)
    overlap_ms = _overlap_ms(overlap_s)
    profile = client.profile
    item_filter = ItemFilter(symbols=wanted_symbols, since_ms=since_ms, until_ms=until_ms)
    # with ids= the fetched orders themselves are filtered: spec 2.4 names their fields
    bodies_reader = ListItems(
        DEFAULT_PROFILE.listing, profile.orders.timestamp_unit, order_bodies=True
    )
    # checked now, before anything is sent (limit bounds, max_pages, page_rule)
    paginator = client._paginator(status_value, None, None) if id_list is None else None
    if paginator is not None:
        paginator.page_rule = check_page_rule(page_rule)
    else:
        check_page_rule(page_rule)
    stop = ListingStop(
        None if since_ms is None else since_ms - overlap_ms,
        overlap_ms,
        run=paginator.limit if paginator is not None else 1,
    )

    from toolkit.frames._frames import build_frames  # pandas/pyarrow only when loading

    bar = _progress_bar(progress, total=len(id_list) if id_list is not None else None)
    bodies: dict[int, bytes] = {}
    missing: list[str] = []

    async def jobs() -> AsyncIterator[tuple[int, str]]:
        if id_list is not None:
            for position, oid in enumerate(id_list):
                yield position, oid
            return
        assert paginator is not None
        reader = paginator.items
        position = 0
        pages = cast(AsyncGenerator[dict[str, Any], None], client._pages(paginator))
        async with contextlib.aclosing(pages) as items:
            async for item in items:
                if stop.passed(item, reader):
                    return
                if item_filter.keep(item, reader):
                    # no total while listing: a notebook bar cannot grow its maximum
                    yield position, reader.order_id(item)
                    position += 1

    async def work(job: tuple[int, str]) -> None:
        position, oid = job
        try:
            body = await client.afetch_order_raw(oid)
        except OrderNotFound:
            missing.append(oid)
        else:
            # with ids= the listing did not filter: the order itself is checked
            if (
                id_list is None
                or not item_filter.active
                or item_filter.keep(_json_object(body), bodies_reader)
            ):
                bodies[position] = body
        bar.update(1)

    fetch_started = time.perf_counter()
    limiter = AdaptiveLimit(workers)
    try:
        with gated(client.rest, limiter) as gate:
            await pump(jobs(), work, workers=workers)
    except TransportError as exc:
        # the service went away: say how far the load got, and keep what it fetched
        exc.prefix(f"load_orders stopped with {_so_far(bodies, missing, paginator)}")
        raw = [bodies[i] for i in sorted(bodies)]
        try:
            exc.partial = build_frames(raw, exact=exact, profile=profile)
        except Exception as build_error:  # the error to raise is the network's
            logger.warning("the orders fetched before the failure do not build: %s", build_error)
        raise
    except asyncio.CancelledError as exc:
        # interrupted (Ctrl-C on a sync twin): the caller says this with the interrupt
        exc.add_note(f"load_orders was interrupted with {_so_far(bodies, missing, paginator)}")
        raise
    finally:
        bar.close()

    fetch_seconds = time.perf_counter() - fetch_started
    raw = [bodies[i] for i in sorted(bodies)]
    build_started = time.perf_counter()
    frames = build_frames(raw, exact=exact, profile=profile)
    build_seconds = time.perf_counter() - build_started
    frames.missing.extend(missing)
    frames.attrs.update(
        {
            "source": client.settings.base_url,
            "loaded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "status": status_value if id_list is None else None,
            "ids": len(id_list) if id_list is not None else None,
            "since_ms": since_ms,
            "until_ms": until_ms,
            "symbols": sorted(wanted_symbols) if wanted_symbols else None,
            "fetched": len(raw),
            "pages": paginator.pages if paginator is not None else 0,
            "listing_stopped_early": stop.stopped,
            "irregular_pages": dict(paginator.irregular) if paginator is not None else {},
            "concurrency_peak": round(gate.stats.peak_limit, 1),
            "rate_limited": gate.stats.rate_limited,
            "fetch_seconds": round(fetch_seconds, 3),
            "build_seconds": round(build_seconds, 3),
            # the listing has limit orders only: say so wherever the frames go
            "coverage": (
                "the given order ids"
                if id_list is not None
                else "limit orders of the listing only (market orders are not listed by "
                "the service: use toolkit.OrderStore with recordings or ids)"
            ),
        }
    )
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        message = f"{len(missing)} order(s) not found by fetchOrder and left out: {shown}"
        logger.warning(message)
        warnings.warn(message, MissingOrdersWarning, stacklevel=2)
    return frames


def _so_far(bodies: Mapping[int, bytes], missing: list[str], paginator: Any) -> str:
    """How far a load got: orders fetched (and not found), listing pages read."""
    text = f"{len(bodies)} order(s) fetched"
    if missing:
        text += f" ({len(missing)} not found)"
    if paginator is not None:
        text += f" from {paginator.pages} listing page(s)"
    return text


class ListingStop:
    """Where paging a newest-first listing may stop early, down to ``floor_ms`` (a bound
    already lowered by the overlap). Nothing says the listing is newest by *creation* (a
    service may sort by last update), so the stop is taken only on evidence:

    - it first needs an item created at or after the floor; then ``run`` items in a row
      (a page's worth) created before it, so one misplaced item cannot end the listing;
    - every item must come in creation order: one newer than an earlier item by more than
      ``overlap_ms`` switches the stop off for the rest of this listing (logged once).

    The cost: a listing whose first items are already before the floor (``since`` later
    than the account's newest order, or a store whose mark is newer than every listed
    order) cannot tell a creation-ordered listing from one sorted otherwise, so it is
    read whole: every page, one request each.
    ``floor_ms=None``: never stop.
    """

    def __init__(self, floor_ms: int | None, overlap_ms: int, run: int = 1) -> None:
        self.floor_ms = floor_ms
        self.overlap_ms = overlap_ms
        self.run = max(1, run)
        self.stopped = False
        self._oldest: int | None = None
        self._above = False
        self._below = 0

    def passed(self, item: Mapping[str, Any], reader: ListItems) -> bool:
        """Whether the listing may stop before ``item`` (it and every later item are
        past the floor); ``reader`` reads its creation moment."""
        if self.floor_ms is None:
            return False
        created = reader.created_ms(item, "stopping the listing early")
        if self._oldest is not None and created > self._oldest + self.overlap_ms:
            logger.warning(
                "the listing is not in creation order (an item %d ms newer than an earlier "
                "one): reading it whole instead of stopping early",
                created - self._oldest,
            )
            self.floor_ms = None
            return False
        self._oldest = created if self._oldest is None else min(self._oldest, created)
        if created >= self.floor_ms:
            self._above = True
            self._below = 0
            return False
        # before the floor: counts only once the floor was crossed in creation order
        self._below = self._below + 1 if self._above else 0
        if self._below >= self.run:
            self.stopped = True
            return True
        return False


def _overlap_ms(overlap_s: object) -> int:
    if (
        isinstance(overlap_s, bool)
        or not isinstance(overlap_s, int | float)
        or not math.isfinite(overlap_s)
        or overlap_s < 0
    ):
        raise InvalidRequest(
            f"overlap_s must be a finite number of seconds >= 0, not {overlap_s!r}"
        )
    return round(overlap_s * 1000)


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(enabled: bool, total: int | None) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="order", desc="orders", leave=False)
