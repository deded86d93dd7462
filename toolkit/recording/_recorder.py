"""The recorder: WebSocket channels captured into a crash-safe, Hive-partitioned Parquet
dataset (``ROOT/channel=<name>/date=<YYYY-MM-DD>/part-*.parquet``) through a write-ahead log.

Pipeline: stream events -> rows in a bounded pending buffer (drops counted) -> appended to
an append-only segment in ``ROOT/_wal/`` and fsynced every ``flush_interval`` -> at each
rotation (time or size) the closed segment becomes Parquet files, each written to a hidden
temporary name and ``os.replace``d into place, then the segment is deleted. Segments left
by a crash are converted when the next writer opens the root, so a crash loses at most
the last flush interval and every ``.parquet`` on disk is always complete.

Data messages take a raw path (``add_raw``): only (received time, connection, seq, the
text as sent) is kept per message, a flush writes them as one Arrow batch record of the
segment, and the per-channel columns are extracted at conversion, in Arrow's C++ JSON
reader (with a per-row Python fallback), so the receiving loop does almost no work per
message.

Modules: ``_recording_rows`` (schema, partitions, rows), ``_recording_raw`` (the raw fast
path), ``_recording_files`` (Parquet output), ``_recording_writer`` (segments, rotation,
recovery) and this one, the asyncio side (stream in, writer on worker threads).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.profile import ServiceProfile
from toolkit.recording._rows import SESSION_CHANNEL, RawItem, profile_of
from toolkit.recording._wal import Row
from toolkit.recording._writer import RecorderStats, RecordingWriter

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client._client import Client

DEFAULT_CHANNELS: tuple[str, ...] = (
    "watchOrders",
    "watchTicker:BTC/BRL",
    "watchTickers",
    "watchBalance",
)


def _background() -> None:
    """Initializer of the converter thread: a lower CPU priority for this thread only
    (Linux), so that on a busy machine conversions take the idle time and the receiving
    loop and the flushes (durability) keep theirs. Converting is never urgent: the rows are
    durable in the write-ahead segment already."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


class Recorder:
    """Record WebSocket channels of ``client`` into a Parquet dataset at ``root``.

    ``await rec.run(duration=None)`` records until cancelled (or for ``duration``
    seconds); in a notebook, ``rec.start()`` runs it as a task on the running loop and
    ``await rec.stop()`` ends it once the last rows are written. ``rec.stats`` holds live
    counts. ``channels`` use the compact form ``"watchTicker:BTC/BRL"``.

    Every ``flush_interval`` seconds the pending rows reach the write-ahead segment and are
    fsynced (the most a crash can lose); every ``rotate_interval`` seconds or
    ``rotate_bytes`` of segment or ``rotate_rows`` rows, the rows become Parquet files. At most
    ``max_pending_rows`` / ``max_pending_bytes`` wait between flushes; beyond, messages are
    dropped, counted in ``stats.dropped`` and recorded as a ``dropped`` session row.
    ``stream_options`` go to ``client.stream()`` (e.g. ``ping_interval``, ``ws_url``).

    The extracted columns (symbol, order id, status, updatedAt, bid/ask/last) are read
    where ``profile`` says (by default the client's ``profile``); every file names it in
    its Parquet metadata, so ``read_recording`` and ``replay`` read it back the same way.
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
        max_pending_rows: int = 200_000,
        max_pending_bytes: int = 64 * 1024 * 1024,
        compression: str = "zstd",
        reconnect: bool = True,
        on_status: Callable[[RecorderStats], None] | None = None,
        stream_options: Mapping[str, Any] | None = None,
        profile: ServiceProfile | None = None,
    ) -> None:
        from toolkit.stream._channels import parse_channel_spec

        if flush_interval <= 0:
            raise ValueError("flush_interval must be > 0")
        # validate every spec now, before anything connects
        self.subscriptions = [parse_channel_spec(spec) for spec in channels]
        self.channels = tuple(channels)
        self.client = client
        self.root = Path(root)
        self.flush_interval = flush_interval
        self.reconnect = reconnect
        self.on_status = on_status
        self.stream_options = dict(stream_options or {})
        self.profile = profile_of(client, profile)
        self.writer = RecordingWriter(
            root,
            rotate_interval=rotate_interval,
            rotate_bytes=rotate_bytes,
            rotate_rows=rotate_rows,
            max_pending_rows=max_pending_rows,
            max_pending_bytes=max_pending_bytes,
            compression=compression,
            profile=self.profile,
        )
        self._task: asyncio.Task[RecorderStats] | None = None
        self._session: Any = None
        self._inflight: asyncio.Future[Any] | None = None
        self._converting: asyncio.Future[list[Path]] | None = None
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

    def start(self) -> asyncio.Task[RecorderStats]:
        """Run the recorder as a background task on the running loop (notebooks)."""
        if self.running:
            raise RuntimeError("recorder already running")
        self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task

    def stop(self) -> asyncio.Task[RecorderStats]:
        """Ask a ``start``ed recorder to finish; await the returned task to wait until the
        last rows are in Parquet."""
        if self._task is None:
            raise RuntimeError("recorder was not started")
        self._task.cancel()
        return asyncio.ensure_future(self._wait_stopped(self._task))

    @staticmethod
    async def _wait_stopped(task: asyncio.Task[RecorderStats]) -> RecorderStats:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
        # the run finished cleanly underneath a cancel: its result is the final stats
        if task.cancelled():
            raise asyncio.CancelledError
        return task.result()

    async def run(self, duration: float | None = None) -> RecorderStats:
        """Record until cancelled, or for ``duration`` seconds; always ends with every
        received row in Parquet. Returns the final stats."""
        writer = self.writer
        await asyncio.to_thread(writer.open)
        receiver = asyncio.ensure_future(self._receive())
        flusher = asyncio.ensure_future(self._flush_loop())
        try:
            done, _ = await asyncio.wait(
                {receiver, flusher},
                timeout=duration,
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in done:
                task.result()  # surface a failure of either
        except asyncio.CancelledError:
            pass  # a stop: fall through to the final flush and return normally
        finally:
            for task in (receiver, flusher):
                task.cancel()
            results = await asyncio.gather(receiver, flusher, return_exceptions=True)
            # a thread cannot be cancelled: wait for the write or conversion in flight
            # before the final flush touches the same files
            for op in (self._inflight, self._converting):
                if op is not None:
                    await asyncio.wait({op})
            if self._executor is not None:
                self._executor.shutdown(wait=False)
                self._executor = None
            await asyncio.to_thread(writer.close)
            self._report()
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                raise result
        return self.stats

    async def _receive(self) -> None:
        # Callbacks see every message synchronously, in order, without the hop through a
        # queue; the writer's bounded buffer is the queue that counts drops, so the session
        # has no main queue. Data messages take the raw path (their text as sent, no typed
        # event); session events still come typed, as rows of their own.
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
                await session.wait_closed()
                if session.error is not None:
                    raise session.error
        finally:
            remove()

    def _write_pending(self, pending: tuple[list[Row], list[RawItem]]) -> None:
        # in a worker thread: Arrow builds the batch column-wise in C, and the rows are
        # only the rare session rows
        self.writer.append_pending(pending)
        self.writer.sync()

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        op = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        self._inflight = op
        return await asyncio.shield(op)

    async def _flush_loop(self) -> None:
        writer = self.writer
        loop = asyncio.get_running_loop()
        next_at = loop.time() + self.flush_interval
        while True:
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            next_at = loop.time() + self.flush_interval
            await self._in_thread(self._write_pending, writer.take_pending())
            if writer.rotation_due():
                converting = self._converting
                # while the converter is busy the segment keeps growing (flushes, hence
                # durability, go on) up to a hard cap; one conversion at a time bounds memory
                busy = converting is not None and not converting.done()
                if busy and not writer.rotation_overdue():
                    self._report()
                    continue
                if converting is not None:
                    await asyncio.shield(converting)
                segment = await self._in_thread(writer.roll)
                self._converting = asyncio.ensure_future(
                    loop.run_in_executor(self._converter(), writer.convert, segment)
                )
            self._report()

    def _converter(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="recorder-convert", initializer=_background
            )
        return self._executor

    def _report(self) -> None:
        if self.on_status is not None:
            self.on_status(self.stats)
