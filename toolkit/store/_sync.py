"""One sync of the order store: what to fetch (orders active at the last sync, the listing
down to the store's newest listed order less an overlap, recorded and given ids never seen),
fetched under the adaptive limiter (or taken from a recording of the store's account when
it holds the order's current state: ``_recorded``), written month by month in chunks
(``_writer``), the state last."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from toolkit.client._concurrency import AdaptiveLimit, check_concurrency, gated, pump
from toolkit.client._identity import account_of
from toolkit.client._items import ListedState, ListItems, listed_state, listing_confirms
from toolkit.client._loaders import LISTING_OVERLAP_S, ListingStop, _overlap_ms
from toolkit.client._pagination import check_page_rule
from toolkit.errors import InvalidResponse, OrderNotFound, RouteNotActive, TransportError
from toolkit.profile import ServiceProfile
from toolkit.protocol import ALL_LIMIT_STATUSES, validate_order_ids
from toolkit.store._files import (
    FINAL_STATUSES,
    LIVE_LIMIT_STATUSES,
    Entry,
    StoreFiles,
)
from toolkit.store._follow import read_journals
from toolkit.store._recorded import Recorded, recorded_bodies, recorded_ids
from toolkit.store._tables import Tables, part_token
from toolkit.store._writer import Writer, keep

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client import Client

logger = logging.getLogger("toolkit.store")

#: the state a listing shows of an order: (status, updatedAt in Unix ms)
Hint = ListedState
#: one order to read: its id, where it came from, what the listing shows of it (or None)
Job = tuple[str, str, Hint | None]

#: orders buffered before they are written as part files
CHUNK_ORDERS = 5_000
#: part files a month may have before a sync merges them into one
MAX_FILES_PER_MONTH = 8


@dataclass
class SyncResult:
    """What one sync did; ``summary()`` gives it in a few lines.

    Attributes
    ----------
    fetched : int
        fetchOrder calls that returned an order.
    from_recordings : int
        Orders whose current state a recording of the store's account held (a final
        state, or the one the listing shows): taken from it, not fetched.
    new, changed, unchanged : int
        Orders the store did not hold; held but different; re-read and the same
        (``fetched + from_recordings`` in all).
    reconciled : int
        Still-active limit orders the listing showed with the stored status and
        ``updatedAt``, so not fetched.
    refreshed : int
        Stored orders queued for a re-read.
    missing : dict of str to list of str
        Ids fetchOrder did not find, by where they came from.
    new_by_source : dict of str to int
        New orders by ``_source`` (listing, recording, ids, live).
    pages : int
        Listing pages read (new orders and live statuses together).
    recorded_ids, given_ids, live_ids : int
        Ids named by recordings, by the caller and by live followers.
    requests, rate_limited : int
        Requests sent and answered 429.
    warnings : list of str
        What the sync or the store's coverage wants said.
    """

    fetched: int = 0
    from_recordings: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    refreshed: int = 0
    reconciled: int = 0
    missing: dict[str, list[str]] = field(default_factory=dict)
    new_by_source: dict[str, int] = field(default_factory=dict)
    pages: int = 0
    listing_stopped_early: bool = False
    listing_error: str | None = None
    recorded_ids: int = 0
    given_ids: int = 0
    live_ids: int = 0
    total: int = 0
    months_written: int = 0
    seconds: float = 0.0
    requests: int = 0
    rate_limited: int = 0
    concurrency_peak: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """A few lines for the command line."""
        sources = ", ".join(f"{n} from {s}" for s, n in sorted(self.new_by_source.items()))
        missing = sum(len(v) for v in self.missing.values())
        lines = [
            f"synced in {self.seconds:.1f}s: {self.fetched} orders fetched"
            + (f" and {self.from_recordings} taken from recordings" if self.from_recordings else "")
            + f" ({self.new} new{': ' + sources if sources else ''}; {self.changed} changed, "
            f"{self.unchanged} unchanged), {self.reconciled} still-active limit orders "
            f"unchanged by the listing (not fetched), {self.pages} listing page(s)"
            + (" (stopped early)" if self.listing_stopped_early else "")
            + (f", {missing} not found" if missing else ""),
            f"requests {self.requests} ({self.rate_limited} answered 429), concurrency "
            f"peak {self.concurrency_peak:.0f}; the store now holds {self.total} orders",
        ]
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)


@contextlib.asynccontextmanager
async def merged(
    sources: Sequence[tuple[AsyncIterator[Job], bool]],
) -> AsyncIterator[AsyncIterator[Job]]:
    """The items of ``sources`` (each ``(source, paging)``) as they come, each source read
    by a task of its own (two listings page at once); the first error of a source is
    raised to the reader, and leaving the block stops every source. A ``paging`` source
    (a listing: its pages bound it) never waits for the reader, so its paging never
    stalls behind the items of the others; the others wait while 256 of their items are
    not yet read."""
    queue: asyncio.Queue[tuple[BaseException | None, bool, Any, bool]] = asyncio.Queue()
    room = asyncio.Semaphore(256)

    async def drain(source: AsyncIterator[Job], bounded: bool) -> None:
        try:
            async for item in source:
                if bounded:
                    await room.acquire()
                queue.put_nowait((None, False, item, bounded))
        except Exception as exc:
            queue.put_nowait((exc, True, None, False))
            return
        finally:
            aclose = getattr(source, "aclose", None)
            if aclose is not None:
                await aclose()
        queue.put_nowait((None, True, None, False))

    tasks = [asyncio.create_task(drain(source, not paging)) for source, paging in sources]

    async def items() -> AsyncIterator[Job]:
        left = len(tasks)
        while left:
            error, ended, item, bounded = await queue.get()
            if bounded:
                room.release()
            if error is not None:
                raise error
            if ended:
                left -= 1
            else:
                yield item

    reader = items()
    try:
        yield reader
    finally:
        await cast(AsyncGenerator[Any, None], reader).aclose()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def compact(files: StoreFiles, tables: Tables, month: str) -> None:
    """Merge the part files of ``month`` when there are too many (``StoreFiles.compact``),
    and their typed tables with them."""
    before = [(path, part_token(path)) for path in files.month_files([month])]
    if files.compact(month, MAX_FILES_PER_MONTH):
        merged = files.month_files([month])
        if len(merged) == 1:
            tables.merge(merged[0], before)


def _created_or_none(reader: ListItems, item: Mapping[str, Any]) -> int | None:
    """The creation moment of a listing item, or None when it has none that reads."""
    try:
        return reader.created_ms(item, "reconciliation")
    except InvalidResponse:
        return None


async def run_sync(
    files: StoreFiles,
    client: Client,
    profile: ServiceProfile,
    *,
    recordings: Sequence[str | Path] = (),
    ids: Iterable[str] = (),
    overlap_s: float = LISTING_OVERLAP_S,
    concurrency: int | None = None,
    page_rule: str = "error",
    full_listing: bool = False,
    listing: bool = True,
    chunk: int = CHUNK_ORDERS,
) -> SyncResult:
    """The sync itself; the caller holds the lock. See :meth:`OrderStore.sync`."""
    started = time.perf_counter()
    workers = check_concurrency(client.settings.concurrency if concurrency is None else concurrency)
    overlap_ms = _overlap_ms(overlap_s)
    given = validate_order_ids(list(ids))
    paginator = client._paginator(",".join(ALL_LIMIT_STATUSES), None, None)
    paginator.page_rule = check_page_rule(page_rule)
    live_paginator = client._paginator(",".join(LIVE_LIMIT_STATUSES), None, None)
    live_paginator.page_rule = paginator.page_rule
    live_ids, live_roots, ended = await asyncio.to_thread(read_journals, files.root)
    gone: list[str] = []
    roots = list(recordings)
    for root in live_roots:
        if root in roots:
            continue
        if root.is_dir():
            roots.append(root)
        else:
            gone.append(f"a followed recording is gone: {root}")
    rec_ids, rec_since = await asyncio.to_thread(recorded_ids, roots)
    # the latest notification of each order in the recordings made with this account
    bodies: dict[str, Recorded] = (
        await asyncio.to_thread(recorded_bodies, roots, account_of(client)) if roots else {}
    )

    state = files.read_state()
    files.clean_temporaries()
    await asyncio.to_thread(files.repair)
    index: dict[str, Entry] = await asyncio.to_thread(files.index)
    newest = state.get("listing_newest_ms")
    floor = None if full_listing or not isinstance(newest, int) else newest - overlap_ms
    stop = ListingStop(floor, overlap_ms, run=paginator.limit)
    result = SyncResult(recorded_ids=len(rec_ids), given_ids=len(given), live_ids=len(live_ids))
    result.warnings.extend(gone)
    writer = Writer(files, profile, chunk, index)
    synced_ms = int(time.time() * 1000)
    listed_newest: int | None = None
    listing_done = False
    new_listed = asyncio.Event()
    fetched_ids: set[str] = set()

    async def listed() -> AsyncIterator[Job]:
        """Limit orders of the listing the store does not hold, newest first, down to
        the store's newest listed order less the overlap."""
        nonlocal listing_done, listed_newest
        reader = paginator.items
        pages = cast(AsyncGenerator[dict[str, Any], None], client._pages(paginator))
        try:
            async with contextlib.aclosing(pages) as items:
                async for item in items:
                    if stop.passed(item, reader):
                        break
                    created = reader.created_ms(item, "the store's listing mark")
                    listed_newest = max(created, listed_newest or created)
                    oid = reader.order_id(item)
                    if oid not in index:
                        yield oid, "listing", listed_state(reader, item)
            listing_done = True
        except RouteNotActive as exc:
            result.listing_error = str(exc)
        finally:
            new_listed.set()

    async def named() -> AsyncIterator[Job]:
        """Ids from recordings, the user and live followers the store does not hold,
        fetched while the live listing still pages; after the new part of the listing, so
        that an order both listed and named counts as listed."""
        await new_listed.wait()
        for source, wanted in (("recording", rec_ids), ("ids", given), ("live", live_ids)):
            for oid in wanted:
                if oid not in index:
                    yield oid, source, None

    async def active() -> AsyncIterator[Job]:
        """Stored limit orders that could still change, reconciled against the listing
        filtered to the live statuses (spec 4.4: ``orderId`` + ``status`` +
        ``updatedAt``): fetched when their status or updatedAt differ or when they are
        no longer listed as live. Without the listing, every one of them is fetched. A
        change the lagging replica does not show yet (spec 4.2 rule 6) is found by a later
        sync: the order keeps its live status in the store until then.

        The listing is newest first (spec 4.2): once its pages read so far end past an
        order's creation without showing it, that order has left the live statuses and
        is fetched at once, not after the last page. Only while every item read came in
        that order, and a page after it was read whole; a listing in another order (or
        without creation times) leaves them all to the end."""
        live = {oid: e for oid, e in index.items() if not e.final and e.type == "limit"}
        if not live:
            return
        reader = live_paginator.items
        seen: set[str] = set()
        early: set[str] = set()
        complete = False
        newest_first = sorted(live.items(), key=lambda kv: kv[1].created_ms, reverse=True)
        passed = 0  # newest_first[:passed]: created after where the read pages end
        in_order = True
        reached: int | None = None  # the creation of the last item read, while in order
        page = 0
        if listing:
            pages = cast(AsyncGenerator[dict[str, Any], None], client._pages(live_paginator))
            try:
                async with contextlib.aclosing(pages) as items:
                    async for item in items:
                        if live_paginator.pages != page:
                            page = live_paginator.pages  # the pages before it read whole
                            while (
                                in_order
                                and reached is not None
                                and passed < len(newest_first)
                                and newest_first[passed][1].created_ms > reached
                            ):
                                left, left_entry = newest_first[passed]
                                passed += 1
                                if left not in seen:
                                    early.add(left)
                                    yield left, left_entry.source, None
                        if in_order:
                            created = _created_or_none(reader, item)
                            in_order = created is not None and (
                                reached is None or created <= reached
                            )
                            reached = created
                        oid = reader.order_id(item)
                        entry = live.get(oid)
                        if entry is None:
                            if oid not in index:
                                # live and older than the mark
                                yield oid, "listing", listed_state(reader, item)
                            continue
                        seen.add(oid)
                        shown = listed_state(reader, item)
                        if listing_confirms(shown, entry.status, entry.updated_ms):
                            result.reconciled += 1
                            continue
                        yield oid, entry.source, shown
                complete = True
            except RouteNotActive:
                pass  # the main listing reports it; every live order is fetched below
        if live_paginator.dropped:
            result.warnings.append(
                f"the listing answered status={live_paginator.status} with orders of other "
                "statuses; reconciliation read them and fetched what it could not match"
            )
        for oid, entry in live.items():
            if (oid not in seen or not complete) and oid not in early:
                yield oid, entry.source, None

    async def unlisted() -> AsyncIterator[Job]:
        """Stored orders no listing shows (market orders) that can still change: re-read
        by id, while the listings page."""
        for oid, entry in index.items():
            if not entry.final and entry.type != "limit":
                yield oid, entry.source, None

    async def jobs() -> AsyncIterator[Job]:
        queued: set[str] = set()
        if not listing:
            new_listed.set()
        # every source at once: the listings page from the start, not after the re-reads
        # (source, paging: a listing, which must never stall behind the re-reads)
        producers = [(active(), True), (unlisted(), False), (named(), False)]
        if listing:
            producers.append((listed(), True))
        async with merged(producers) as found:
            async for oid, source, hint in found:
                if oid not in queued:
                    queued.add(oid)
                    yield oid, source, hint
        result.refreshed = sum(1 for oid in queued if oid in index)

    def recorded_row(oid: str, source: str, hint: Hint | None) -> tuple[str, dict[str, Any]] | None:
        """The month and row of ``oid``'s recorded notification when it is the order's
        current state: final (it never changes again) and not older than the stored
        state, or what the listing shows of it now (``hint``). None: fetch it."""
        recorded = bodies.pop(oid, None)
        if recorded is None:
            return None
        try:
            month, row = writer.row(oid, recorded.body, source, synced_ms)
        except InvalidResponse as exc:
            logger.info("the recorded state of order %s is not used (%s): fetched", oid, exc)
            return None
        if row["id"] != oid:
            return None
        before = index.get(oid)
        updated = row["updatedAt"]
        final = row["status"] in FINAL_STATUSES and (
            before is None
            or (updated is not None and (before.updated_ms is None or updated >= before.updated_ms))
        )
        shown = hint is not None and hint == (row["status"], updated)
        return (month, row) if final or shown else None

    async def work(job: Job) -> None:
        oid, source, hint = job
        taken = recorded_row(oid, source, hint)
        if taken is not None:
            result.from_recordings += 1
            month, row = taken
        else:
            try:
                body = await client.afetch_order_raw(oid)
            except OrderNotFound:
                result.missing.setdefault(source if oid not in index else "store", []).append(oid)
                return
            result.fetched += 1
            month, row = writer.row(oid, body, source, synced_ms)
        fetched_ids.add(oid)
        before = index.get(oid)
        if before is None:
            result.new += 1
            result.new_by_source[source] = result.new_by_source.get(source, 0) + 1
        elif before.status == row["status"] and before.updated_ms == row["updatedAt"]:
            result.unchanged += 1
            return  # nothing to write: the stored body is current
        else:
            result.changed += 1
        await writer.add(month, row)

    limiter = AdaptiveLimit(workers)
    sent_before = client.rest.sent
    with gated(client.rest, limiter) as gate:
        try:
            await pump(jobs(), work, workers=workers)
        except (Exception, asyncio.CancelledError) as exc:
            # the bodies fetched before the failure or the interrupt are whole and checked:
            # keep them, so the next sync does not fetch them again (the state, written
            # last, is not: the next sync re-reads that part of the listing)
            kept = await keep(writer)
            what = f"{kept} order(s) fetched before it kept in the store"
            if isinstance(exc, TransportError):
                exc.prefix(f"store sync stopped ({what}; run it again to go on)")
            elif isinstance(exc, asyncio.CancelledError):
                exc.add_note(f"the sync was interrupted ({what})")
            raise
    await writer.flush()
    for month in sorted(writer.months):
        await asyncio.to_thread(compact, files, writer.tables, month)
    # the typed tables of parts that have none yet (an older store, a killed sync)
    await asyncio.to_thread(writer.tables.sweep)
    await asyncio.to_thread(writer.tables.backfill)

    result.pages = paginator.pages + live_paginator.pages
    result.listing_stopped_early = stop.stopped
    result.months_written = len(writer.months)
    result.requests = client.rest.sent - sent_before
    result.rate_limited = gate.stats.rate_limited
    result.concurrency_peak = gate.stats.peak_limit
    # the state goes last: an interrupted sync leaves the previous mark, so the next one
    # re-reads that part of the listing (and finds the orders already written)
    if listing_done and listed_newest is not None:
        mark = max(listed_newest, newest if isinstance(newest, int) else 0)
        if mark > synced_ms:
            # a createdAt in the future (a skewed or wrong clock) would move the mark past
            # every order created until then: never further than this sync's start
            result.warnings.append(
                f"the listing holds an order created after this sync started "
                f"({datetime.fromtimestamp(mark / 1000, UTC).isoformat(timespec='seconds')}); "
                "the listing mark is kept at the sync's start"
            )
            mark = synced_ms
        state["listing_newest_ms"] = mark
    if rec_since is not None:
        old = state.get("recordings_since_ms")
        state["recordings_since_ms"] = (
            rec_since if not isinstance(old, int) else min(old, rec_since)
        )
    missing = state.setdefault("missing", {})
    for source in sorted(set(missing) | set(result.missing)):
        known = dict.fromkeys(i for i in missing.get(source, []) if i not in fetched_ids)
        known.update(dict.fromkeys(result.missing.get(source, [])))
        missing[source] = list(known)[-1000:]
    state["last_sync"] = {
        "at": datetime.fromtimestamp(synced_ms / 1000, UTC).isoformat(timespec="seconds"),
        "source": client.settings.base_url,
        "fetched": result.fetched,
        "new": result.new,
        "changed": result.changed,
        "pages": result.pages,
        "listing_error": result.listing_error,
    }
    state["syncs"] = int(state.get("syncs", 0)) + 1
    await asyncio.to_thread(files.write_state, state)
    # the ids of followers that ended are now in the store (or in "missing")
    for path in ended:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    result.total = len(index) + result.new
    if result.listing_error:
        result.warnings.append(f"the listing could not be read: {result.listing_error}")
    result.seconds = time.perf_counter() - started
    return result
