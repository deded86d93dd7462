"""The recorder: WebSocket channels captured into a crash-safe, Hive-partitioned Parquet
dataset (``ROOT/channel=<name>/date=<YYYY-MM-DD>/part-*.parquet``) through a write-ahead log.

Pipeline: on the receiving loop, each data message is kept as (received time, connection,
seq, text as sent) in a chunk of a few hundred (under 96 KiB: it stays in the CPU caches
and out of mmap), and each full chunk is appended to the current segment in
``ROOT/_wal/`` as one record (a few C calls, no per-message Python); every
``flush_interval`` the segment is fsynced on a worker thread (the most a crash can lose).
At each rotation (time, size or rows) the segment is closed and handed to the converter,
a process of its own (``_convert``) that reads it back from disk, extracts the
per-channel columns in Arrow and writes the Parquet files (hidden temporary name, then
``os.replace``), then deletes the segment. Nothing waits in memory: the backlog is the
closed segments on disk, bounded by ``max_backlog_bytes`` (past it, messages are dropped,
counted and recorded as a ``dropped`` session row). The converter process starts beside
the receiving, never before it subscribes (its imports took up to 49 s on a busy machine):
segments closed meanwhile, and those a crash left, wait on disk until it is ready.

Modules: ``_rows`` (schema, partitions, rows), ``_chunk`` (the receive path's records),
``_raw`` (column extraction), ``_files`` (Parquet output), ``_writer`` (segments,
rotation, recovery), ``_conversion`` (segment to Parquet, streamed), ``_convert`` (the
converter process) and this one, the asyncio side.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.client._identity import account_of
from toolkit.errors import InvalidRequest
from toolkit.profile import ServiceProfile
from toolkit.recording._conversion import convert_segment
from toolkit.recording._convert import ConverterProcess
from toolkit.recording._daily import DailyCompaction, check_compact
from toolkit.recording._daily import background as _background
from toolkit.recording._raw import warm_up
from toolkit.recording._rows import SESSION_CHANNEL, profile_of
from toolkit.recording._wal import Segment
from toolkit.recording._writer import (
    ClosedSegment,
    RecorderStats,
    RecordingWriter,
    check_root,
    positive_seconds,
)

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client._client import Client

_log = logging.getLogger("toolkit.recording")

DEFAULT_CHANNELS: tuple[str, ...] = (
    "watchOrders",
    "watchTicker:BTC/BRL",
    "watchTickers",
    "watchBalance",
)


class Recorder:
    """Record WebSocket channels of ``client`` into a Parquet dataset at ``root``.

    ``await rec.run(duration=None)`` records until cancelled (or for ``duration``
    seconds from the subscription); in a notebook, ``rec.start()`` runs it as a task on
    the running loop, ``await rec.wait_subscribed()`` returns once every channel is
    subscribed (from then on, everything published is recorded), and ``await rec.stop()``
    ends it once the last rows are written. ``async with Recorder(...) as rec:`` does the
    same: entered once subscribed, stopped on leaving. It subscribes at once: the
    converter process starts beside it (segments closed meanwhile wait on disk for it).
    ``rec.stats`` holds live counts. ``channels`` use the compact form
    ``"watchTicker:BTC/BRL"``. An empty ``root`` raises InvalidRequest before anything is
    written.

    Messages are appended to the write-ahead segment in chunks of at most
    ``max_pending_rows`` messages / ``max_pending_bytes`` bytes, and fsynced every
    ``flush_interval`` seconds (the most a crash can lose); every ``rotate_interval``
    seconds or ``rotate_bytes`` of segment or ``rotate_rows`` rows, the segment goes to the
    converter process (``converter="process"``; ``"thread"``: a worker thread of this
    process) that writes the Parquet files. Segments not converted yet are the backlog, on
    disk: beyond ``max_backlog_bytes`` of it, messages are dropped, counted in
    ``stats.dropped`` and recorded as a ``dropped`` session row.
    ``stream_options`` go to ``client.stream()`` (e.g. ``ping_interval``, ``ws_url``,
    ``max_message_bytes``: a larger message is dropped as a gap, and ends the run when
    the next connection gets one too).

    With ``compact="daily"`` (the default), once a UTC day is over (plus a grace of 10
    minutes for late files) the recorder compacts that day's files of every channel into
    few large ones sorted by symbol (as ``compact_recording``, crash-safe), in a process
    of its own (``converter="thread"``: a thread) while it goes on recording; at its
    start, the closed days a previous run left.
    ``compact="off"`` leaves the 60-s files as they are (``compact_recording`` or
    ``toolkit record compact`` then do it), e.g. while another engine lists the files
    itself (it may see a day's old and new files together for milliseconds).

    A failed write of the write-ahead log (a full disk) never tears it: the messages of
    that chunk are dropped, counted in ``stats.dropped`` and recorded as a ``dropped``
    session row, and the run ends with the ``OSError`` (at the next flush, or when it
    stops), after writing everything it still can.

    The extracted columns (symbol, order id, status, updatedAt, bid/ask/last) are read
    where ``profile`` says (by default the client's ``profile``); every file names it in
    its Parquet metadata, so ``read_recording`` and ``replay`` read it back the same way.
    A message that lacks a field the profile maps keeps its raw JSON with that column
    null: as each segment is converted, such messages are counted per ``payloads.*``
    setting in ``stats.misses``, recorded as ``mismatch`` rows of ``_session``, and each
    setting is warned about once (``read_recording(..., profile=)`` reads them again).

    Parameters
    ----------
    client : Client
        Where the stream comes from (``client.stream()``).
    root : str or os.PathLike
        The dataset's folder; an empty one raises ``InvalidRequest``.
    channels : sequence of str
        Channel specs, e.g. ``"watchTicker:BTC/BRL"``; validated at once.
    flush_interval : float
        Seconds between fsyncs of the write-ahead segment: the most a crash can lose
        (finite, > 0; otherwise ``InvalidRequest``, as for every bad value here).
    rotate_interval, rotate_bytes, rotate_rows : float, int, int
        A segment goes to the converter after this long, this size or this many rows.
    max_pending_rows, max_pending_bytes : int
        The chunk appended to the segment as one record (kept small: CPU caches).
    max_backlog_bytes : int
        The most bytes of segments not yet in Parquet; past it, messages are dropped.
    compression : str
        Parquet compression.
    reconnect : bool
        Reconnect after a drop (a ``gap`` session row records it).
    on_status : callable, optional
        Called with the stats after every flush.
    stream_options : mapping, optional
        More keyword arguments of ``client.stream()``.
    profile : ServiceProfile, optional
        Where the columns are read from the payloads (default: the client's).
    converter : {"process", "thread"}
        Where segments become Parquet: a process of their own (default; never competes
        for the GIL with the receiving loop) or a worker thread of this process.
    compact : {"daily", "off"}
        Compact each day once it is over (default), or never.
    clock_ns : callable
        Unix nanoseconds now, to tell which days are over (tests inject it).
    """

    def __init__(
        self,
        client: Client | Any,
        root: str | os.PathLike[str],
        channels: Sequence[str] = DEFAULT_CHANNELS,
        *,
        flush_interval: float = 1.0,
        rotate_interval: float = 60.0,
        rotate_bytes: int = 16 * 1024 * 1024,
        rotate_rows: int = 100_000,
        max_pending_rows: int = 512,
        max_pending_bytes: int = 96 * 1024,
        max_backlog_bytes: int = 2 * 1024**3,
        compression: str = "zstd",
        reconnect: bool = True,
        on_status: Callable[[RecorderStats], None] | None = None,
        stream_options: Mapping[str, Any] | None = None,
        profile: ServiceProfile | None = None,
        converter: str = "process",
        compact: str = "daily",
        clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        from toolkit.stream._channels import parse_channel_spec

        root = check_root(root)
        flush_interval = positive_seconds("flush_interval", flush_interval)
        if converter not in ("process", "thread"):
            raise InvalidRequest(f"converter must be 'process' or 'thread'; got {converter!r}")
        # validate every spec now, before anything connects
        self.subscriptions = [parse_channel_spec(spec) for spec in channels]
        self.channels = tuple(channels)
        self.client = client
        self.root = root
        self.flush_interval = flush_interval
        self.reconnect = reconnect
        self.on_status = on_status
        self.stream_options = dict(stream_options or {})
        self.profile = profile_of(client, profile)
        self.converter = converter
        #: the compaction of closed days, None with ``compact="off"``
        self.compaction = (
            DailyCompaction(
                root, clock_ns=clock_ns, compression=compression, process=converter == "process"
            )
            if check_compact(compact) == "daily"
            else None
        )
        self.writer = RecordingWriter(
            root,
            rotate_interval=rotate_interval,
            rotate_bytes=rotate_bytes,
            rotate_rows=rotate_rows,
            max_pending_rows=max_pending_rows,
            max_pending_bytes=max_pending_bytes,
            max_backlog_bytes=max_backlog_bytes,
            compression=compression,
            profile=self.profile,
            # the files name the account they were recorded with (an order store takes
            # the bodies of its own account's recordings without fetching them again)
            account=account_of(client),
        )
        self._task: asyncio.Task[RecorderStats] | None = None
        self._session: Any = None
        #: set once every channel's subscription is confirmed (``wait_subscribed``)
        self._subscribed = asyncio.Event()
        #: serialises the fsyncs and closes of segments (worker threads)
        self._io_lock: asyncio.Lock | None = None
        #: segments rolled on the receiving loop, waiting for their fsync and close
        self._rolled: list[tuple[ClosedSegment, Segment, int]] = []
        self._rolled_event: asyncio.Event | None = None
        self._process: ConverterProcess | None = None
        #: the converter's start, beside the receiving (``_start_converter``)
        self._starting: asyncio.Task[None] | None = None
        #: the converter started (or could not: the thread converts); False while starting
        self._ready = False
        #: segments closed (or left by a crash) before the converter was ready: on disk,
        #: in the backlog, handed over once it is
        self._waiting: list[ClosedSegment] = []
        self._converting: list[asyncio.Future[Any]] = []
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    @property
    def stats(self) -> RecorderStats:
        return self.writer.stats

    def __repr__(self) -> str:
        state = "running" if self.running else "idle"
        return f"Recorder(root={str(self.root)!r}, channels={list(self.channels)!r}, {state})"

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, duration: float | None = None) -> asyncio.Task[RecorderStats]:
        """Run the recorder as a background task on the running loop (notebooks), until
        ``stop`` or for ``duration`` seconds from its subscription (see ``run``).
        ``await rec.wait_subscribed()`` then waits until every channel is subscribed."""
        if self.running:
            raise RuntimeError("recorder already running")
        if duration is not None:
            duration = positive_seconds("duration", duration)
        self._subscribed.clear()
        self._task = asyncio.get_running_loop().create_task(self.run(duration))
        return self._task

    async def __aenter__(self) -> Recorder:
        """``async with Recorder(...) as rec:`` starts it and enters once every channel is
        subscribed; leaving stops it, every received row written."""
        self.start()
        try:
            await self.wait_subscribed()
        except BaseException:
            with contextlib.suppress(BaseException):
                await self.stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            await self.stop()

    async def wait_subscribed(self, timeout: float | None = None) -> None:
        """Until the service has confirmed every channel's subscription: from then on,
        what it publishes is recorded. The recorder receives from the moment it connects
        (its converter process starts beside it), so this is the connection and one
        confirmation per channel. Raises the run's error if it ended first, and
        TimeoutError after ``timeout`` seconds.

        Parameters
        ----------
        timeout : float, optional
            Seconds to wait at most (None: no limit).
        """
        waiter = asyncio.ensure_future(self._subscribed.wait())
        watched = [waiter] if self._task is None else [waiter, self._task]
        try:
            done, _ = await asyncio.wait(
                watched, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            waiter.cancel()
        if self._subscribed.is_set():
            return
        if self._task is not None and self._task in done:
            self._task.result()  # the run's error (or its stats: it ended unsubscribed)
            raise RuntimeError("the recorder ended before its subscriptions were confirmed")
        raise TimeoutError(f"subscriptions not confirmed within {timeout} s")

    def stop(self, after: float | None = None) -> asyncio.Task[RecorderStats]:
        """Ask a ``start``ed recorder to finish, at once or ``after`` seconds from now
        (it records meanwhile); await the returned task to wait until the last rows are
        in Parquet. Its result is the final stats."""
        if self._task is None:
            raise RuntimeError("recorder was not started")
        task = self._task
        if after is None:
            task.cancel()
        else:
            handle = asyncio.get_running_loop().call_later(
                positive_seconds("after", after), task.cancel
            )
            task.add_done_callback(lambda _: handle.cancel())
        return asyncio.ensure_future(self._wait_stopped(task))

    @staticmethod
    async def _wait_stopped(task: asyncio.Task[RecorderStats]) -> RecorderStats:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
        # the run finished cleanly underneath a cancel: its result is the final stats
        if task.cancelled():
            raise asyncio.CancelledError
        return task.result()

    async def run(self, duration: float | None = None) -> RecorderStats:
        """Record until cancelled, or for ``duration`` seconds (finite, > 0) counted from
        the moment every channel is subscribed; always ends with every received row in
        Parquet. Returns the final stats; raises the ``OSError`` of a failed write, once
        everything else is written.

        It connects and subscribes at once: what is slow to start (the converter process
        and its imports, the conversion of what a crash left) starts beside it, and the
        segments closed meanwhile wait on disk until it is ready (nothing is lost)."""
        if duration is not None:
            duration = positive_seconds("duration", duration)
        self._subscribed.clear()
        self._process = self._starting = None
        self._ready = False
        writer = self.writer
        # the lock, a new segment; a crash's leftovers join the backlog, unconverted
        await asyncio.to_thread(writer.open, warm=False, convert_leftovers=False)
        self._waiting = list(writer.adopted)
        if self.compaction is not None:
            self.compaction.open()  # a recorder started again after a stop
        self._compact()  # the closed days a previous run left
        self._io_lock = asyncio.Lock()
        self._rolled_event = asyncio.Event()
        writer.on_roll = self._on_roll
        tasks: list[asyncio.Future[Any]] = []
        results: list[Any] = []
        try:
            tasks = [
                asyncio.ensure_future(self._receive()),
                asyncio.ensure_future(self._flush_loop()),
                asyncio.ensure_future(self._close_loop()),
            ]
            self._starting = asyncio.ensure_future(self._start_converter())
            subscribed = asyncio.ensure_future(self._subscribed.wait())
            try:
                done, _ = await asyncio.wait(
                    {*tasks, subscribed}, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                subscribed.cancel()
            if not done & set(tasks):  # the duration counts from the subscription
                done, _ = await asyncio.wait(
                    set(tasks), timeout=duration, return_when=asyncio.FIRST_COMPLETED
                )
            for task in done & set(tasks):
                task.result()  # surface a failure of any
        except asyncio.CancelledError:
            pass  # a stop: fall through to the final flush and return normally
        finally:
            for task in tasks:
                task.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            await self._finish()
            self._report()
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                raise result
        return self.stats

    async def _finish(self) -> None:
        """The last segment closed and sent, every conversion waited for, the rest (a
        converter that died) converted here, the lock released."""
        writer = self.writer
        writer.on_roll = None
        try:
            if self._starting is not None and not self._starting.done():
                # not ready yet: what waits for it is converted here, by ``writer.close``
                self._starting.cancel()
            if self._starting is not None:
                await asyncio.wait({self._starting})
            self._ready = True  # from now on (the last segment), no converter to wait for
            async with self._lock():
                rolled = writer.roll_unsynced(reopen=False)
                if rolled is not None:
                    self._rolled.append(rolled)
                await self._close_rolled()
            if self._process is not None:
                await self._process.finish()
            if self._converting:
                await asyncio.wait(self._converting)
        finally:
            if self.compaction is not None:  # a run under way ends after its partition
                running = self.compaction.close()
                if running is not None:
                    await asyncio.wait({asyncio.wrap_future(running)})
                self.writer.stats.compacted = self.compaction.partitions
            if self._process is not None:
                # gone before this process converts what it left: one writer per file
                await self._process.kill_and_wait()
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
            await asyncio.to_thread(writer.close)

    def _lock(self) -> asyncio.Lock:
        if self._io_lock is None:
            self._io_lock = asyncio.Lock()
        return self._io_lock

    async def _start_converter(self) -> None:
        """Start the converter beside the receiving (never before it), then hand it the
        segments that waited (``_waiting``). Cancelled (a stop before it is ready), it
        leaves them in the backlog, for ``writer.close``."""
        try:
            if self.converter == "process":
                process = ConverterProcess(self.writer)
                try:
                    await process.start()
                except OSError as exc:
                    _log.warning(
                        "could not start the converter process (%s); converting in-process", exc
                    )
                except BaseException:  # cancelled while it started: it must not outlive us
                    await process.kill_and_wait()
                    raise
                else:
                    self._process = process
            if self._process is None:
                # what conversions import, imported on the converter thread, first
                await asyncio.get_running_loop().run_in_executor(
                    self._converter_thread(), warm_up, self.writer.profile
                )
        except asyncio.CancelledError:
            self._waiting.clear()
            raise
        except Exception as exc:  # the warm-up: each conversion then says what fails
            _log.warning("preparing the recording's conversions failed: %s", exc)
        waiting, self._waiting = self._waiting, []
        self._ready = True
        for closed in waiting:
            self._convert(closed)

    def _converter_thread(self) -> concurrent.futures.ThreadPoolExecutor:
        """The worker thread that converts when there is no converter process."""
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="recorder-convert", initializer=_background
            )
        return self._executor

    async def _receive(self) -> None:
        # Callbacks see every message synchronously, in order, without the hop through a
        # queue; data messages take the raw path (their text as sent, no typed event);
        # session events still come typed, as rows of their own.
        writer = self.writer
        options = {"reconnect": self.reconnect, **self.stream_options, "queue_size": 0}
        session = self.client.stream(**options)
        add_raw = getattr(session, "add_raw_callback", None)
        if add_raw is not None:
            removers = [
                add_raw(writer.add_raw),
                session.add_callback(writer.add_event, channels=[SESSION_CHANNEL]),
            ]
        else:  # a stream without the raw path: typed events, re-encoded
            removers = [session.add_callback(writer.add_event)]

        def remove() -> None:
            for fn in removers:
                fn()

        try:
            async with session:
                self._session = session
                for channel, data in self.subscriptions:
                    await session.subscribe(channel, **data)
                self._subscribed.set()
                await session.wait_closed()
                if session.error is not None:
                    raise session.error
        finally:
            remove()

    def _on_roll(self, rolled: tuple[ClosedSegment, Segment, int]) -> None:
        # on the receiving loop, inside add_raw: only note it, the closer does the rest
        self._rolled.append(rolled)
        if self._rolled_event is not None:
            self._rolled_event.set()

    async def _flush_loop(self) -> None:
        writer = self.writer
        loop = asyncio.get_running_loop()
        next_at = loop.time() + self.flush_interval
        while True:
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            next_at = loop.time() + self.flush_interval
            writer.check()  # a failed append on the receiving path ends the run
            async with self._lock():
                fd, count = writer.flush_buffers()
                await _shielded(asyncio.to_thread(writer.fsync, fd, count))
            if writer.rotation_due():  # by time: size and rows roll as messages come
                rolled = writer.roll_unsynced()
                if rolled is not None:
                    self._on_roll(rolled)
            self._compact()
            self._report()

    async def _close_loop(self) -> None:
        event = self._rolled_event
        assert event is not None
        while True:
            await event.wait()
            event.clear()
            async with self._lock():
                await self._close_rolled()

    async def _close_rolled(self) -> None:
        """fsync and close the rolled segments (a worker thread), then hand each to the
        converter. Called under the I/O lock."""
        writer = self.writer
        while self._rolled:
            closed, segment, count = self._rolled[0]
            await _shielded(asyncio.to_thread(writer.close_segment, segment, count))
            del self._rolled[0]
            self._convert(closed)

    def _convert(self, closed: ClosedSegment) -> None:
        if not self._ready:
            self._waiting.append(closed)  # on disk, in the backlog: converted once ready
            return
        process = self._process
        if process is not None and process.submit(closed):
            return
        # no converter process: a worker thread of ours, one conversion at a time
        writer = self.writer
        misses: dict[str, int] = {}  # filled by the worker, read once it is done
        future = asyncio.get_running_loop().run_in_executor(
            self._converter_thread(),
            functools.partial(
                convert_segment,
                writer.root,
                closed.path,
                compression=writer.compression,
                profile=writer.profile,
                misses=misses,
            ),
        )

        def done(f: asyncio.Future[list[Path]]) -> None:
            # on the loop: the backlog is only ever changed there
            if f.cancelled():
                return
            if f.exception() is not None:  # left in the backlog: the close tries again
                _log.warning("converting %s failed: %s", closed.path, f.exception())
                return
            writer.converted(closed, len(f.result()), misses)

        future.add_done_callback(done)
        self._converting = [f for f in self._converting if not f.done()]
        self._converting.append(future)

    def _compact(self) -> None:
        """Start a compaction of the days over, when one is due (its own thread)."""
        if self.compaction is not None:
            self.compaction.poke()
            self.writer.stats.compacted = self.compaction.partitions

    def _report(self) -> None:
        if self.on_status is not None:
            self.on_status(self.stats)


async def _shielded(work: Any) -> Any:
    """Await a thread's work to its end even when cancelled meanwhile (a thread cannot
    be stopped: the file it works on must not be touched before it is done)."""
    future = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait({future})
        raise
