"""``OrderStore``: the account's orders kept on disk, synced incrementally, read back as
:class:`~toolkit.frames.OrderFrames` with where each order came from and what the set covers."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.client._concurrency import check_concurrency
from toolkit.client._loaders import (
    LISTING_OVERLAP_S,
    TimeBound,
    _overlap_ms,
    _symbols,
    parse_time_bound,
)
from toolkit.client._pagination import check_page_rule
from toolkit.errors import InvalidRequest
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.store._checks import (
    check_flag,
    check_identity,
    check_ids,
    check_recordings,
    describe_identity,
    store_identity,
)
from toolkit.store._files import PROFILE_NAME, SOURCES, STATE_NAME, StoreFiles, month_of
from toolkit.store._follow import Follower, follow
from toolkit.store._sync import CHUNK_ORDERS, SyncResult, run_sync

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client import Client
    from toolkit.frames import OrderFrames


class OrderStore:
    """Every order the service and the recordings know of, as a Hive-partitioned Parquet
    dataset of full order bodies: ``ROOT/month=YYYY-MM/part-*.parquet`` (month of
    ``createdAt``, UTC), one row per order, in exactly one file, with ``id``, ``type``,
    ``symbol``, ``status``, ``createdAt``, ``updatedAt``, ``_source`` (``listing``,
    ``recording``, ``ids`` or ``live``, a :meth:`follow` journal: where the store first
    found it), ``_synced_at`` and
    ``body`` (the fetchOrder JSON). DuckDB (``read_parquet('ROOT/*/*.parquet',
    hive_partitioning=true)``) and Polars (``pl.scan_parquet('ROOT/**/*.parquet',
    hive_partitioning=True)``) read it as is.

    ``profile`` (default: the profile of the last sync, saved in ``ROOT/_profile.toml``
    whether it was given here or was the client's; else the default, with a coverage
    warning when the store holds orders) is what the frames are built with and how body
    times are read.

    A store belongs to one account of one service: the first sync saves the service's
    base URL, a fingerprint of the API key (never the key or its secret) and the profile
    name in ``ROOT/_store.json``; a sync with a client of another service or API key is
    refused before any request. Another profile of the same account is taken, with a
    warning in the :class:`SyncResult`: the store's orders are read with it from then on.

    Every file is replaced whole or not at all; a sync killed at any point leaves a
    readable store and the next sync completes it; one writer at a time (a second one
    gets :class:`~toolkit.store.StoreLocked`). A sync killed while it merged a month's
    part files leaves that month's orders in two files, which raw DuckDB or Polars reads
    would count twice: opening the store (``OrderStore(root)``, any ``toolkit`` command
    on it) finishes that merge first, unless a sync is running. Reads (:meth:`frames`,
    :meth:`coverage`, ``len``) may run while a sync writes or merges the store, in this
    process or another: each reads one consistent set of files and sees every order once.
    """

    def __init__(
        self, root: str | os.PathLike[str], *, profile: ServiceProfile | None = None
    ) -> None:
        self._files = StoreFiles(root)
        self._profile = profile
        self._files.finish_interrupted()

    @property
    def root(self) -> Path:
        return self._files.root

    @property
    def profile(self) -> ServiceProfile:
        if self._profile is not None:
            return self._profile
        saved = self.root / PROFILE_NAME
        return load_profile(saved) if saved.is_file() else DEFAULT_PROFILE

    def __repr__(self) -> str:
        return f"OrderStore({str(self.root)!r}, orders={len(self)})"

    def __len__(self) -> int:
        return self._files.count()

    # -- sync -----------------------------------------------------------------------------

    async def async_sync(
        self,
        client: Client,
        *,
        recordings: Sequence[str | os.PathLike[str]] = (),
        ids: Iterable[str] = (),
        listing: bool = True,
        full_listing: bool = False,
        overlap_s: float = LISTING_OVERLAP_S,
        concurrency: int | None = None,
        page_rule: str = "error",
        chunk: int = CHUNK_ORDERS,
    ) -> SyncResult:
        """Bring the store up to date with the service; returns a :class:`SyncResult`.

        Fetched with fetchOrder, each order at most once: a stored limit order in a
        status that can still change (anything but CLOSED, EXPIRED, CANCELLED, REJECTED)
        only when the listing, asked for those statuses, shows it with another
        ``status`` or ``updatedAt`` or no longer shows it (those it confirms are counted
        in ``SyncResult.reconciled``, not fetched; with ``listing=False`` all are
        fetched); every other stored order that can still change (market orders: no
        listing shows them); limit orders of the listing the store does not hold, paging
        newest first and stopping ``overlap_s`` seconds (default 600, spec 4.2 rule 6)
        past the newest listed order of the last complete sync (``full_listing=True``
        reads it whole; ``listing=False`` skips it, e.g. where the route is not active
        yet); every order id seen on ``watchorders`` in the ``recordings`` (folders
        written by ``toolkit record`` / ``tk.Recorder``), journalled by :meth:`follow`,
        or given as ``ids``, when the store does not hold it. A finished order is never
        fetched again.

        At most ``concurrency`` (default ``settings.concurrency``) requests in flight,
        adapted to the service (AIMD on 429 and latency growth, honouring Retry-After).
        Bodies are merged into their month files every ``chunk`` orders, stored as the
        UTF-8 JSON text they were read as (a BOM or UTF-16/32 is decoded, never kept). A
        body the store could not read back (no string ``status``, a ``createdAt`` or
        ``updatedAt`` that is no time between 2000 and 9999 in ``orders.timestamp_unit``)
        stops the sync with InvalidResponse naming the order and the field, before its
        row is written. Holds the store's lock: StoreLocked when another sync runs.

        Parameters
        ----------
        client : Client
            The service to sync from; its profile is saved beside the data.
        recordings : sequence of path-like
            Recording folders (written by ``toolkit record`` / ``tk.Recorder``) whose
            ``watchorders`` order ids to add; a list, even of one.
        ids : iterable of str
            Order ids from the user's own records; a list, not one string.
        listing, full_listing : bool
            Read the limit-order listing at all; read it whole.
        overlap_s : float
            Seconds past the newest stored listed order the listing is still read.
        concurrency : int, optional
            Most requests in flight (default ``settings.concurrency``).
        page_rule : {"error", "warn"}
            What a listing page of the wrong size does (spec 4.2 rule 4).
        chunk : int
            Orders buffered before they are written.

        Returns
        -------
        SyncResult
            Counts (fetched, new by source, changed, unchanged, missing), listing pages,
            requests and 429s, and the coverage warnings.

        Raises
        ------
        StoreLocked
            Another sync holds the store.
        InvalidRequest
            Before any request, and before the store's folder is made for a bad
            argument: a bad argument, a folder that is not a recording or a recording
            file that is damaged or another dataset's (naming it), a store of another
            service or API key (naming both; another profile is taken, with a warning), a
            state file or a part file that is not the store's (naming it; nothing is
            removed).
        InvalidResponse
            A fetchOrder body the store could not read back (naming the order and field).
        """
        # every argument is checked before the store's folder or lock is made
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
            raise InvalidRequest(f"chunk must be a positive integer, not {chunk!r}")
        roots = check_recordings(recordings)
        given = check_ids(ids)
        check_flag(listing, "listing")
        check_flag(full_listing, "full_listing")
        _overlap_ms(overlap_s)
        if concurrency is not None:
            check_concurrency(concurrency)
        check_page_rule(page_rule)
        profile = self._profile or client.profile
        identity = store_identity(client, profile)
        warnings: list[str] = []
        with self._files.lock():
            state = await asyncio.to_thread(self._files.read_state)
            saved = state.get("identity")
            # a store that holds nothing yet (a first sync that failed, at sign-in say)
            # mixes nothing: it is bound anew
            holds = bool(state.get("syncs") or self._files.month_files())
            if holds:
                check_identity(self.root, saved, identity)
            if saved != identity:
                # bound before the first request: a sync from elsewhere is refused even
                # when this one is interrupted
                if saved is None and holds:
                    warnings.append(
                        f"the store had no record of the service its orders came from (an "
                        f"older toolkit wrote it, or its {STATE_NAME} was removed); it now "
                        f"belongs to {describe_identity(identity)}"
                    )
                elif saved is not None and holds and saved.get("profile") != profile.name:
                    warnings.append(
                        f"the store was synced with profile {saved.get('profile')!r}; its "
                        f"orders are read with {profile.name!r} from now on"
                    )
                await asyncio.to_thread(self._files.write_state, {**state, "identity": identity})
            # the profile the bodies are read with, saved before any of them
            await asyncio.to_thread(_save_profile, profile, self.root / PROFILE_NAME)
            result = await run_sync(
                self._files,
                client,
                profile,
                recordings=roots,
                ids=given,
                overlap_s=overlap_s,
                concurrency=concurrency,
                page_rule=page_rule,
                full_listing=full_listing,
                listing=listing,
                chunk=chunk,
            )
        result.warnings.extend(warnings)
        result.warnings.extend(self.coverage()["warnings"])
        return result

    def sync(
        self,
        client: Client,
        *,
        recordings: Sequence[str | os.PathLike[str]] = (),
        ids: Iterable[str] = (),
        listing: bool = True,
        full_listing: bool = False,
        overlap_s: float = LISTING_OVERLAP_S,
        concurrency: int | None = None,
        page_rule: str = "error",
        chunk: int = CHUNK_ORDERS,
    ) -> SyncResult:
        """Sync twin of :meth:`async_sync` (runs on the client's loop thread), with the
        same parameters; see there."""
        return client._run(
            self.async_sync(
                client,
                recordings=recordings,
                ids=ids,
                listing=listing,
                full_listing=full_listing,
                overlap_s=overlap_s,
                concurrency=concurrency,
                page_rule=page_rule,
                chunk=chunk,
            )
        )

    def follow(self, source: object, *, fsync_interval: float = 1.0) -> Follower:
        """Feed the store from a running ``source`` as it runs: every order id an
        :class:`~toolkit.stream.OrderBook` or a :class:`~toolkit.stream.StreamSession`
        sees on ``watchorders`` (market orders included, which no listing shows), or the
        folder of a :class:`~toolkit.recording.Recorder`, is journalled under
        ``ROOT/_live/`` at once and fetched by the next sync (``_source`` ``live``, or
        ``recording``). Needs no lock: a sync may run meanwhile.

        Parameters
        ----------
        source : OrderBook, StreamSession or Recorder
            What to follow.
        fsync_interval : float
            Most seconds between two fsyncs of the journal (each id is written at once;
            a crash of the machine loses at most this much).

        Returns
        -------
        Follower
            ``stop()`` (or ``with``) ends the feed; ``ids`` counts the ids so far.

        Raises
        ------
        InvalidRequest
            ``source`` is none of the three.

        Examples
        --------
        >>> book = tk.OrderBook(client)                     # doctest: +SKIP
        >>> with store.follow(book):                        # doctest: +SKIP
        ...     await book.run()
        >>> store.sync(client)                              # doctest: +SKIP
        """
        interval = float(fsync_interval)
        if not interval >= 0 or interval == float("inf"):
            raise InvalidRequest(f"fsync_interval must be >= 0 seconds, not {fsync_interval!r}")
        return follow(self.root, source, fsync_interval=interval)

    # -- reading --------------------------------------------------------------------------

    def frames(
        self,
        since: TimeBound = None,
        until: TimeBound = None,
        symbols: str | Iterable[str] | None = None,
        types: str | Iterable[str] | None = None,
        *,
        exact: bool = False,
    ) -> OrderFrames:
        """The stored orders as :class:`~toolkit.frames.OrderFrames` built with the store's
        profile: ``since`` (inclusive) / ``until`` (exclusive) on ``createdAt`` (only the
        months they span are read), ``symbols`` pairs, ``types`` order types (``market``,
        ``limit``, case-insensitive). ``frames.orders["_source"]`` says where each order
        came from; ``frames.attrs["coverage"]`` what the set covers and its warnings (for
        instance that market orders are known only from recordings).

        Parameters
        ----------
        since, until : str, date, datetime, int or float, optional
            Creation-time bounds (ISO text, datetime or Unix seconds/milliseconds).
        symbols, types : str or iterable of str, optional
            Pairs (``BTC/BRL``) and order types (``market``, ``limit``) to keep.
        exact : bool
            Exact decimals (``decimal128``) instead of float64.

        Returns
        -------
        OrderFrames
            Empty frames with the full schema when nothing matches.

        Raises
        ------
        InvalidRequest
            A bad bound, pair or type (a type neither ``market``, ``limit`` nor held by
            the store), or a part file that is not the store's (naming it).
        """
        import pyarrow as pa
        import pyarrow.dataset as ds

        from toolkit.frames import build_frames

        since_ms = parse_time_bound(since, "since")
        until_ms = parse_time_bound(until, "until")
        if since_ms is not None and until_ms is not None and since_ms >= until_ms:
            raise InvalidRequest("since must be earlier than until")
        wanted_symbols = _symbols(_strings(symbols, "symbols", "pairs such as 'BTC/BRL'"))
        wanted_types = self._types(types)
        months = None
        if since_ms is not None or until_ms is not None:
            present = self._files.months()
            low = month_of(since_ms) if since_ms is not None else ""
            high = month_of(until_ms) if until_ms is not None else "9999-99"
            months = [m for m in present if low <= m <= high]
        expr: Any = None
        ts = pa.timestamp("ms", tz="UTC")
        for part in (
            None if since_ms is None else ds.field("createdAt") >= pa.scalar(since_ms, ts),
            None if until_ms is None else ds.field("createdAt") < pa.scalar(until_ms, ts),
            None if wanted_symbols is None else ds.field("symbol").isin(sorted(wanted_symbols)),
            None if wanted_types is None else ds.field("type").isin(sorted(wanted_types)),
        ):
            if part is not None:
                expr = part if expr is None else expr & part
        table = self._files.read(["id", "_source", "body"], months=months, filter=expr)
        coverage = self.coverage()
        frames = build_frames(table.column("body").to_pylist(), exact=exact, profile=self.profile)
        sources = dict(
            zip(table.column("id").to_pylist(), table.column("_source").to_pylist(), strict=True)
        )
        orders = frames.orders
        position = list(orders.columns).index("id") + 1 if "id" in orders else len(orders.columns)
        orders.insert(position, "_source", orders["id"].map(sources) if len(orders) else [])
        frames.attrs.update(
            {
                "source": str(self.root),
                "loaded_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "since_ms": since_ms,
                "until_ms": until_ms,
                "symbols": sorted(wanted_symbols) if wanted_symbols else None,
                "types": sorted(wanted_types) if wanted_types else None,
                "coverage": coverage,
            }
        )
        frames.missing.extend(coverage["missing"])
        return frames

    def coverage(self) -> dict[str, Any]:
        """What the store covers: orders by ``_source`` and by type, the last sync, the
        recordings' start, ids not found, and ``warnings`` to show wherever the set is
        shown (market orders are not listed by the service: the store knows only those a
        recording saw or a user named).

        Returns
        -------
        dict
            ``orders``, ``by_source``, ``by_type``, ``market_orders``,
            ``recordings_since``, ``last_sync``, ``syncs``, ``missing``, ``complete``
            (always False) and ``warnings``.
        """
        table = self._files.read(["type", "_source"])
        by_source: dict[str, int] = dict.fromkeys(SOURCES, 0)
        by_type: dict[str, int] = {}
        market_by_source: dict[str, int] = {}
        for kind, source in zip(
            table.column("type").to_pylist(), table.column("_source").to_pylist(), strict=True
        ):
            by_source[source] = by_source.get(source, 0) + 1
            by_type[kind or "?"] = by_type.get(kind or "?", 0) + 1
            if kind != "limit":
                market_by_source[source] = market_by_source.get(source, 0) + 1
        state = self._files.read_state()
        since = state.get("recordings_since_ms")
        since_text = (
            datetime.fromtimestamp(since / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
            if isinstance(since, int)
            else None
        )
        warnings: list[str] = []
        market = sum(market_by_source.values())
        more = [
            f"{n}{' more' if since_text is not None else ''} {what}"
            for n, what in (
                (market_by_source.get("live", 0), "from live sessions"),
                (market_by_source.get("ids", 0), "added by order id"),
            )
            if n
        ]
        extra = f" ({', '.join(more)})" if more else ""
        if since_text is not None:
            warnings.append(
                f"{market_by_source.get('recording', 0)} market orders known from recordings "
                f"since {since_text}{extra}; market orders placed while nothing was recording "
                "or following are not listed by the service and are here only if they were "
                "added by order id"
            )
        else:
            warnings.append(
                f"{market} market orders known{extra}: the service does not list market "
                "orders; sync with recordings (--from-recording), follow a live session "
                "(store.follow, toolkit record --store) or add them by order id"
            )
        last = state.get("last_sync") or {}
        if last.get("listing_error"):
            warnings.append(f"the last sync could not read the listing: {last['listing_error']}")
        missing = [oid for oids in (state.get("missing") or {}).values() for oid in oids]
        if missing:
            warnings.append(f"{len(missing)} known order id(s) were not found by fetchOrder")
        if self._profile is None and table.num_rows and not (self.root / PROFILE_NAME).is_file():
            warnings.append(
                f"the store has no {PROFILE_NAME}: its orders are read with the default "
                "profile; if they were synced under another, open it with "
                "OrderStore(root, profile=load_profile(...))"
            )
        return {
            "orders": table.num_rows,
            "by_source": by_source,
            "by_type": by_type,
            "market_orders": market,
            "recordings_since": since_text,
            "last_sync": last or None,
            "syncs": int(state.get("syncs", 0)),
            "missing": missing,
            "complete": False,  # never "every order": market orders cannot be listed
            "warnings": warnings,
        }

    def _types(self, types: str | Iterable[str] | None) -> frozenset[str] | None:
        """``types=`` as lowercase order types: ``market``, ``limit`` or a type the store
        holds (a misspelt one is refused, not answered with empty frames)."""
        what = "order types such as 'market' or 'limit'"
        values = _strings(types, "types", what)
        if values is None:
            return None
        if not values or not all(isinstance(v, str) and v.strip() for v in values):
            raise InvalidRequest(f"types= must name {what}")
        wanted = frozenset(v.strip().lower() for v in values)
        if wanted <= KNOWN_TYPES:
            return wanted
        known = KNOWN_TYPES | {
            t for t in self._files.read(["type"]).column("type").to_pylist() if t
        }
        unknown = sorted(wanted - known)
        if unknown:
            raise InvalidRequest(
                f"types= {', '.join(map(repr, unknown))}: no such order type; known: "
                f"{', '.join(sorted(known))}"
            )
        return wanted


#: the order types of spec 2.4 (the store may hold others a service writes)
KNOWN_TYPES = frozenset({"market", "limit"})


def _strings(value: object, name: str, what: str) -> list[Any] | None:
    """A ``str`` or iterable-of-values argument as a list (None stays None); InvalidRequest
    for anything else (``symbols=5``), before its values are checked."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, bytes | Mapping) or not isinstance(value, Iterable):
        raise InvalidRequest(
            f"{name}= takes {what} (a string or a list of them), not {type(value).__name__}"
        )
    return list(value)


def _save_profile(profile: ServiceProfile, path: Path) -> None:
    from toolkit._atomic import atomic_write

    atomic_write(path, lambda tmp: profile.dump(tmp))
