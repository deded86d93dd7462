"""Loaders: page the limit-order listing (or take given ids), fetch every order
concurrently, and hand the raw bodies to the frames builder."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import warnings
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from toolkit.client._items import ItemFilter, ListItems
from toolkit.errors import InvalidRequest, OrderNotFound
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


class MissingOrdersWarning(UserWarning):
    """Orders listed (or asked for by id) that fetchOrder no longer found."""


def parse_time_bound(value: TimeBound, name: str) -> int | None:
    """``value`` as Unix milliseconds (UTC), or None."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidRequest(f"{name} must be a date, datetime, ISO string or timestamp")
    if isinstance(value, int | float):
        return to_epoch_ms(value)
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
        return int(moment.timestamp() * 1000)
    if isinstance(value, date):
        return int(datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp() * 1000)
    raise InvalidRequest(f"{name} must be a date, datetime, ISO string or timestamp")


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
) -> OrderFrames:
    """Load orders into :class:`~toolkit.frames._frames.OrderFrames`.

    Without ``ids``: every limit order of the listing matching ``status`` (all nine
    statuses are sent explicitly when it is None, never a shortcut); market orders are not
    in that listing, so load them with ``ids=``. With ``ids``: exactly those orders
    (``status`` is refused then: filter the frames). ``since`` (inclusive) and ``until``
    (exclusive) filter on the creation moment; ``symbols`` on the pair; both client-side,
    on the list items through the profile's ``listing.created_at_field`` /
    ``listing.symbol_field`` (seconds or ms per ``orders.timestamp_unit``), or with
    ``ids=`` on the fetched orders' ``createdAt``/``symbol`` (spec 2.4). Items that do not
    carry a field a filter needs raise InvalidResponse naming the setting, never an empty
    result. ACTIVE/FINALIZED are the profile's ``listing.active_statuses`` /
    ``listing.finalized_statuses``.

    Every order is read with fetchOrder, ``settings.concurrency`` at a time, while the
    listing is still paging. An order that 404s by then is not silently lost: it is named
    in a :class:`MissingOrdersWarning` and in ``frames.missing``; ``frames.attrs`` records
    how the frames were loaded.
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
    profile = client.profile
    item_filter = ItemFilter(symbols=wanted_symbols, since_ms=since_ms, until_ms=until_ms)
    # with ids= the fetched orders themselves are filtered: spec 2.4 names their fields
    bodies_reader = ListItems(
        DEFAULT_PROFILE.listing, profile.orders.timestamp_unit, order_bodies=True
    )
    # checked now, before anything is sent (limit bounds, max_pages)
    paginator = client._paginator(status_value, None, None) if id_list is None else None

    from toolkit.frames._frames import build_frames  # pandas/pyarrow only when loading

    bar = _progress_bar(progress, total=len(id_list) if id_list is not None else None)
    concurrency = client.settings.concurrency
    queue: asyncio.Queue[tuple[int, str] | None] = asyncio.Queue(maxsize=concurrency * 4)
    bodies: dict[int, bytes] = {}
    missing: list[str] = []

    async def produce() -> None:
        position = 0
        if id_list is not None:
            for oid in id_list:
                await queue.put((position, oid))
                position += 1
        else:
            assert paginator is not None
            reader = paginator.items
            async for item in client._pages(paginator):
                if item_filter.keep(item, reader):
                    # no total while listing: a notebook bar cannot grow its maximum
                    await queue.put((position, reader.order_id(item)))
                    position += 1
        for _ in range(concurrency):
            await queue.put(None)

    async def work() -> None:
        while (job := await queue.get()) is not None:
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
    tasks = [
        asyncio.create_task(produce()),
        *(asyncio.create_task(work()) for _ in range(concurrency)),
    ]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            error = task.exception()
            if error is not None:
                raise error
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
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
            "fetch_seconds": round(fetch_seconds, 3),
            "build_seconds": round(build_seconds, 3),
        }
    )
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        message = f"{len(missing)} order(s) not found by fetchOrder and left out: {shown}"
        logger.warning(message)
        warnings.warn(message, MissingOrdersWarning, stacklevel=2)
    return frames


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
