"""The sans-network half of the recorder: rows in, fsynced write-ahead segments, and Parquet
out at each rotation; crash leftovers recovered on open under the root's lock.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.recording._files import Buckets, Parts, bucket_rows, write_parts
from toolkit.recording._raw import (
    RawBuffer,
    batch_record,
    raw_batch,
    read_segment_items,
    tables_from_raw,
    warm_up,
)
from toolkit.recording._rows import (
    SESSION_CHANNEL,
    RawItem,
    profile_metadata,
    row_from_event,
    rows_from_raw,
    session_row,
)
from toolkit.recording._wal import SUFFIX, Row, Segment

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


WAL_DIR = "_wal"
LOCK_NAME = "LOCK"


def _merge(
    rows: Buckets, batches: Sequence[pa.RecordBatch], profile: ServiceProfile = DEFAULT_PROFILE
) -> Parts:
    parts: Parts = {key: [bucket] for key, bucket in rows.items()}
    for key, tables in tables_from_raw(batches, profile).items():
        parts.setdefault(key, []).extend(tables)
    return parts


def convert_segment(
    root: str | os.PathLike[str],
    segment: str | os.PathLike[str],
    *,
    compression: str = "zstd",
    profile: ServiceProfile = DEFAULT_PROFILE,
) -> list[Path]:
    """Turn a closed (or crash-torn) WAL segment into Parquet files (columns extracted
    under ``profile``, which the files' metadata names), then delete it."""
    path = Path(segment)
    rows, batches = read_segment_items(path)
    files = write_parts(
        root,
        _merge(bucket_rows(rows), batches, profile),
        path.stem,
        compression=compression,
        metadata=profile_metadata(profile),
    )
    path.unlink()
    return files


def _wal_dir(root: str | os.PathLike[str]) -> Path:
    return Path(root) / WAL_DIR


def recover(
    root: str | os.PathLike[str],
    *,
    compression: str = "zstd",
    profile: ServiceProfile = DEFAULT_PROFILE,
) -> list[Path]:
    """Convert the segments a crashed recorder left in ``ROOT/_wal/`` and delete the
    temporary files of conversions it did not finish. Call it only while holding the
    root's lock (``RecordingWriter.open`` does)."""
    root_path = Path(root)
    for tmp in root_path.glob("channel=*/date=*/.part-*.parquet.tmp"):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    files: list[Path] = []
    for segment in sorted(_wal_dir(root).glob(f"*{SUFFIX}")):
        files.extend(convert_segment(root, segment, compression=compression, profile=profile))
    return files


# --------------------------------------------------------------------- the writer


class RecorderBusy(RuntimeError):
    """Another recorder holds the lock of this root."""


@dataclass(slots=True)
class RecorderStats:
    """Live counts of a recorder: data ``messages`` and their ``bytes`` (raw JSON text),
    Parquet ``files`` written, ``gaps`` seen, messages ``dropped`` (by the writer's bounded
    buffer), ``recovered`` files from an earlier crash, ``flushed_rows`` durable in the
    write-ahead log (data and session rows: what a crash can no longer lose)."""

    messages: int = 0
    bytes: int = 0
    files: int = 0
    gaps: int = 0
    dropped: int = 0
    recovered: int = 0
    session_rows: int = 0
    flushed_rows: int = 0
    started_at: float = field(default_factory=time.monotonic)

    def line(self) -> str:
        """A one-line status for a terminal or a notebook."""
        elapsed = max(time.monotonic() - self.started_at, 1e-9)
        return (
            f"messages {self.messages:,} ({self.messages / elapsed:,.0f}/s)  "
            f"saved {self.flushed_rows:,}  bytes {_human(self.bytes)}  files {self.files}  "
            f"gaps {self.gaps}  dropped {self.dropped}"
        )


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GB"  # pragma: no cover


_counter = itertools.count()


class RecordingWriter:
    """The sans-network half of the recorder: rows in, durable segments and Parquet out.

    ``add``/``add_event`` are cheap and never block (a full pending buffer drops the row and
    counts it; a ``dropped`` session row records the span once there is room again).
    ``flush`` appends the pending rows to the current segment and fsyncs it; ``rotate``
    closes the segment and converts it to Parquet. All blocking methods are meant for a
    worker thread; ``add`` must be called from one thread only.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        rotate_interval: float = 60.0,
        rotate_bytes: int = 16 * 1024 * 1024,
        rotate_rows: int = 100_000,
        max_pending_rows: int = 200_000,
        max_pending_bytes: int = 64 * 1024 * 1024,
        compression: str = "zstd",
        max_message_bytes: int = 1024 * 1024,
        clock_ns: Callable[[], int] = time.time_ns,
        profile: ServiceProfile = DEFAULT_PROFILE,
    ) -> None:
        self.root = Path(root)
        #: where the columns are read from the payloads (named in every file's metadata)
        self.profile = profile
        self._metadata = profile_metadata(profile)
        self.rotate_interval = rotate_interval
        self.rotate_bytes = rotate_bytes
        self.rotate_rows = rotate_rows
        self.max_pending_rows = max_pending_rows
        self.max_pending_bytes = max_pending_bytes
        #: the largest message expected (websockets' default ``max_size``): the raw path
        #: checks the byte bound once per as many messages as surely fit under it
        self.max_message_bytes = max_message_bytes
        self.compression = compression
        self._stats = RecorderStats()
        self._clock_ns = clock_ns
        self._pending: list[Row] = []
        #: data messages of the raw path, kept as they came until a flush
        self._raw = RawBuffer()
        #: raw messages already counted in stats and ``_pending_bytes``
        self._counted = 0
        #: the raw path's fast lane runs while the buffer holds fewer messages than this
        self._room = 0
        #: the largest raw message seen: the fast lane's steps assume none larger
        self._largest = 0
        self._pending_bytes = 0
        self._drop_count = 0
        self._drop_first_ns: int | None = None
        self._drop_last_ns: int | None = None
        self._last_conn = ""
        self._segment: Segment | None = None
        # the rows already in the open segment, grouped by file: converting from memory
        # spares decoding the segment
        self._segment_rows: Buckets = {}
        self._segment_batches: list[pa.RecordBatch] = []
        self._segment_count = 0
        self._unsynced = 0
        self._segment_opened = 0.0
        self._lock_fd: int | None = None

    # -- life

    def open(self) -> list[Path]:
        """Take the root's lock, recover what a crash left, start a segment. Returns the
        recovered files."""
        warm_up(self.profile)  # what conversions import, imported now, not mid-recording
        wal = _wal_dir(self.root)
        wal.mkdir(parents=True, exist_ok=True)
        self._lock_fd = _lock(wal / LOCK_NAME)
        try:
            recovered = recover(self.root, compression=self.compression, profile=self.profile)
        except BaseException:
            self._unlock()
            raise
        self._stats.recovered += len(recovered)
        self._stats.files += len(recovered)
        self._new_segment()
        return recovered

    def close(self) -> list[Path]:
        """Flush, convert the last segment, release the lock."""
        try:
            self.flush()
            return self.rotate(reopen=False)
        finally:
            self._unlock()

    def __enter__(self) -> RecordingWriter:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing releases the flock
            self._lock_fd = None

    def _new_segment(self) -> None:
        name = f"{self._clock_ns():020d}-{os.getpid()}-{next(_counter):06d}"
        self._segment = Segment(_wal_dir(self.root) / f"{name}{SUFFIX}")
        self._segment_rows = {}
        self._segment_batches = []
        self._segment_count = 0
        self._segment_opened = time.monotonic()

    # -- input (event-loop thread)

    @property
    def stats(self) -> RecorderStats:
        """Live counts, exact (the raw fast lane counts in bulk, and reading catches up):
        read them on the thread that adds messages, the event loop's."""
        self._catch_up()
        return self._stats

    @property
    def pending(self) -> int:
        return len(self._pending) + len(self._raw)

    def add(self, row: Row) -> bool:
        """Queue a row for the next flush; False when the buffer is full (row dropped)."""
        self._catch_up()
        size = len(row.raw) if row.raw else 64
        if (
            len(self._pending) + len(self._raw) >= self.max_pending_rows
            or self._pending_bytes + size > self.max_pending_bytes
        ):
            self._drop_count += 1
            self._stats.dropped += 1
            if self._drop_first_ns is None:
                self._drop_first_ns = row.received_at_ns
            self._drop_last_ns = row.received_at_ns
            self._room = 0
            return False
        if self._drop_count:
            self._note_drops()
        self._pending.append(row)
        self._pending_bytes += size
        if row.channel == SESSION_CHANNEL:
            self._stats.session_rows += 1
            if row.kind == "gap":
                self._stats.gaps += 1
        else:
            self._stats.messages += 1
            self._stats.bytes += size
            self._last_conn = row.connection_id
        self._set_room()
        return True

    def add_event(self, event: Any) -> bool:
        return self.add(row_from_event(event, self.profile))

    def add_raw(self, text: str, received_at_ns: int, connection_id: str, seq: int) -> bool:
        """Queue a data message as the server sent it (the stream's raw callback; its
        columns are extracted at conversion); False when the buffer is full (dropped)."""
        # the hot path: called for every message on the receiving loop, so as few
        # attribute loads as possible; drops and runs of a new connection go the slow way
        raw = self._raw
        texts = raw.texts
        if connection_id is not raw.conn or len(texts) >= self._room:
            return self._add_raw_slow(text, received_at_ns, connection_id, seq)
        texts.append(text)
        raw.stamps.append(received_at_ns)
        raw.seqs.append(seq)
        return True

    def _add_raw_slow(self, text: str, received_at_ns: int, connection_id: str, seq: int) -> bool:
        self._catch_up()
        size = len(text)
        raw = self._raw
        if (
            len(raw) + len(self._pending) >= self.max_pending_rows
            or self._pending_bytes + size > self.max_pending_bytes
        ):
            self._drop_count += 1
            self._stats.dropped += 1
            if self._drop_first_ns is None:
                self._drop_first_ns = received_at_ns
            self._drop_last_ns = received_at_ns
            self._last_conn = connection_id
            self._room = 0  # every message the slow way until there is room again
            return False
        if self._drop_count:
            self._note_drops()
        raw.append(text, received_at_ns, connection_id, seq)
        self._counted += 1
        self._largest = max(self._largest, size)
        self._pending_bytes += size
        stats = self._stats
        stats.messages += 1
        stats.bytes += size
        self._set_room()
        return True

    def _catch_up(self) -> None:
        """Count the raw messages the fast lane took since the last count."""
        texts = self._raw.texts
        counted = self._counted
        if len(texts) > counted:
            sizes = list(map(len, texts[counted:]))
            size = sum(sizes)
            self._largest = max(self._largest, *sizes)
            self._stats.messages += len(texts) - counted
            self._stats.bytes += size
            self._pending_bytes += size
            self._counted = len(texts)

    def _set_room(self) -> None:
        """Let the fast lane take as many messages as surely fit under both bounds (at
        most 256 before the next count), counting nothing per message. The byte bound is
        exact while no message is larger than both ``max_message_bytes`` and every
        message before it; past that, it is exceeded by at most that excess."""
        held = len(self._raw)
        rows_left = self.max_pending_rows - held - len(self._pending)
        largest = max(self.max_message_bytes, self._largest, 1)
        sure = (self.max_pending_bytes - self._pending_bytes) // largest
        self._room = held + max(0, min(rows_left, sure, 256))

    def _note_drops(self) -> None:
        count, first, last = self._drop_count, self._drop_first_ns, self._drop_last_ns
        self._drop_count = 0
        self._drop_first_ns = self._drop_last_ns = None
        # bypasses the bound on purpose: the record of a loss must not itself be lost
        self._pending.append(
            session_row(
                "dropped",
                received_at_ns=last if last is not None else self._clock_ns(),
                connection_id=self._last_conn,
                seq=-1,
                detail=f"{count} messages dropped: the writer fell behind",
                gap_start_ns=first,
                gap_end_ns=last,
            )
        )
        self._stats.session_rows += 1

    def take(self) -> list[Row]:
        """Hand the pending rows over, raw data messages converted to rows (slow: the
        recorder uses ``take_pending``)."""
        rows, raw = self.take_pending()
        return rows + rows_from_raw(raw, self.profile)

    def take_pending(self) -> tuple[list[Row], RawBuffer]:
        """Hand the pending rows and raw messages over (to a flush on another thread)."""
        self._catch_up()
        if self._drop_count:
            self._note_drops()
        rows, self._pending = self._pending, []
        raw, self._raw = self._raw, RawBuffer()
        if raw.conns:
            self._last_conn = raw.conns[-1][1]
        self._pending_bytes = 0
        self._counted = 0
        self._set_room()
        return rows, raw

    def append_pending(self, pending: tuple[Sequence[Row], RawBuffer | Sequence[RawItem]]) -> None:
        """Append what ``take_pending`` handed over to the current segment: the rows one
        record each, the raw messages as one Arrow batch record (no per-row Python)."""
        rows, raw = pending
        self.append(rows)
        if raw:
            if self._segment is None:
                raise RuntimeError("writer is not open")
            batch = raw_batch(raw)
            head, body = batch_record(batch)
            self._segment.write(head)
            self._segment.write(memoryview(body))
            self._segment_batches.append(batch)
            self._segment_count += len(raw)
            self._unsynced += len(raw)

    # -- output (worker thread)

    def append(self, rows: Sequence[Row]) -> None:
        """Encode rows into the current segment's buffer (not yet durable: ``sync``).

        Meant for the event-loop thread: this is per-row Python work, and running it on a
        worker thread would make the receiving loop wait for the GIL after every read."""
        if self._segment is None:
            raise RuntimeError("writer is not open")
        if rows:
            self._segment.write_rows(rows)
            bucket_rows(rows, self._segment_rows)
            self._segment_count += len(rows)
            self._unsynced += len(rows)

    def sync(self) -> None:
        """Make every appended row durable (flush + fsync; releases the GIL)."""
        if self._segment is None:
            raise RuntimeError("writer is not open")
        count, self._unsynced = self._unsynced, 0
        self._segment.sync()
        self._stats.flushed_rows += count

    def write(self, rows: Sequence[Row]) -> None:
        """Append rows and make them durable."""
        self.append(rows)
        self.sync()

    def flush(self) -> None:
        self.append_pending(self.take_pending())
        self.sync()

    def rotation_due(self) -> bool:
        seg = self._segment
        if seg is None:
            return False
        return (
            seg.size >= self.rotate_bytes
            or self._segment_count >= self.rotate_rows
            or time.monotonic() - self._segment_opened >= self.rotate_interval
        )

    def rotation_overdue(self) -> bool:
        """The segment reached 4x a rotation limit: rotate even if that means waiting."""
        seg = self._segment
        if seg is None:
            return False
        return seg.size >= 4 * self.rotate_bytes or self._segment_count >= 4 * self.rotate_rows

    def roll(self) -> ClosedSegment | None:
        """Close the current segment (fsync) and start a new one; returns the closed
        segment with its rows (to be converted)."""
        old, rows, batches = self._segment, self._segment_rows, self._segment_batches
        self._unsynced = 0  # closing syncs them
        self._new_segment()
        return self._close_segment(old, rows, batches)

    def _close_segment(
        self, seg: Segment | None, rows: Buckets, batches: list[pa.RecordBatch]
    ) -> ClosedSegment | None:
        if seg is None:
            return None
        seg.close()
        return ClosedSegment(seg.path, rows, batches)

    def convert(self, closed: ClosedSegment | None) -> list[Path]:
        """Write a closed segment's rows as Parquet, then delete the segment."""
        if closed is None:
            return []
        files = write_parts(
            self.root,
            _merge(closed.rows, closed.batches, self.profile),
            closed.path.stem,
            compression=self.compression,
            metadata=self._metadata,
        )
        closed.path.unlink()
        self._stats.files += len(files)
        _release_memory()
        return files

    def rotate(self, *, reopen: bool = True) -> list[Path]:
        """Close the current segment, convert it to Parquet, start a new one (or not)."""
        if reopen:
            return self.convert(self.roll())
        old, rows, batches = self._segment, self._segment_rows, self._segment_batches
        self._segment, self._segment_rows, self._segment_batches = None, {}, []
        self._unsynced = 0
        return self.convert(self._close_segment(old, rows, batches))


@dataclass(frozen=True, slots=True)
class ClosedSegment:
    """A segment that is complete on disk, with its rows still in memory."""

    path: Path
    rows: Buckets
    batches: list[pa.RecordBatch] = field(default_factory=list)


def _release_memory() -> None:
    """Hand the memory of a finished conversion back to the system: Arrow's allocator
    keeps freed pages for reuse otherwise, and the resident size stays at its peak."""
    import pyarrow as pa

    with contextlib.suppress(Exception):
        pa.default_memory_pool().release_unused()


def _lock(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # pragma: no cover - no flock on this platform: single writer trusted
        return fd
    except OSError as exc:
        os.close(fd)
        raise RecorderBusy(f"another recorder is writing to {path.parent.parent}") from exc
    return fd
