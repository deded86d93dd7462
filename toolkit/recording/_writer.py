"""The sans-network half of the recorder: messages in, appended to write-ahead segments in
chunks, fsynced on demand, and Parquet out of each closed segment (read back from disk);
crash leftovers recovered on open under the root's lock.

Nothing waits in memory longer than one chunk: the backlog is on disk, as closed segments
not yet converted. Past ``max_backlog_bytes`` of it, messages are dropped, counted, and
recorded as a ``dropped`` session row once there is room again.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from toolkit._atomic import write_error
from toolkit.errors import InvalidRequest
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.recording._chunk import buffer_parts
from toolkit.recording._conversion import convert_segment
from toolkit.recording._drops import DropSpan
from toolkit.recording._misses import Misses, report_misses
from toolkit.recording._raw import RawBuffer, warm_up
from toolkit.recording._root import LOCK_NAME, _lock, check_root, leftovers, wal_dir
from toolkit.recording._root import WAL_DIR as WAL_DIR  # re-exported: older imports
from toolkit.recording._root import ClosedSegment as ClosedSegment
from toolkit.recording._root import RecorderBusy as RecorderBusy
from toolkit.recording._root import positive_seconds as positive_seconds
from toolkit.recording._root import recover as recover
from toolkit.recording._rows import (
    SESSION_CHANNEL,
    profile_metadata,
    row_from_event,
    rows_from_raw,
)
from toolkit.recording._stats import RecorderStats
from toolkit.recording._wal import SUFFIX, Row, Segment, encode_row, profile_record

_log = logging.getLogger("toolkit.recording")


# --------------------------------------------------------------------- the writer


_counter = itertools.count()
#: the fast lane counts (and checks the chunk's bounds) once per this many messages
_STEP = 256


class RecordingWriter:
    """The sans-network half of the recorder: messages in, durable segments and Parquet out.

    ``add``/``add_raw``/``add_event`` never block on anything but a page-cache write: the
    messages wait in a chunk of at most ``max_pending_rows`` messages or
    ``max_pending_bytes`` bytes, which is then appended to the current segment as one
    record (no per-message Python for raw messages). ``flush`` makes everything added so
    far durable (append + fsync). ``roll`` closes the segment (it becomes backlog) and
    starts a new one; ``convert`` turns a closed segment into Parquet, reading it back from
    disk, which may run in another process (``toolkit.recording._convert``): ``converted``
    then takes it off the backlog. While the backlog (closed segments not converted, the
    open segment, the chunk) is past ``max_backlog_bytes``, messages are dropped and
    counted, and a ``dropped`` session row records the span once there is room again.

    A chunk that cannot be appended (a full disk) leaves the segment as it was (see
    ``Segment``): its messages are dropped and counted the same way (a ``dropped`` row
    names the error), and the error is kept in ``error``, since the receiving path cannot
    raise it; ``check`` raises it, and so does ``close`` once everything else is written.

    Every method is meant for one thread, except ``fsync`` (see ``flush_buffers``).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        rotate_interval: float = 60.0,
        rotate_bytes: int = 16 * 1024 * 1024,
        rotate_rows: int = 100_000,
        max_pending_rows: int = 512,
        max_pending_bytes: int = 96 * 1024,
        max_backlog_bytes: int = 2 * 1024**3,
        compression: str = "zstd",
        clock_ns: Callable[[], int] = time.time_ns,
        profile: ServiceProfile = DEFAULT_PROFILE,
        account: Mapping[str, str | None] | None = None,
    ) -> None:
        self.root = check_root(root)
        for name, value in (
            ("rotate_bytes", rotate_bytes),
            ("rotate_rows", rotate_rows),
            ("max_pending_rows", max_pending_rows),
            ("max_pending_bytes", max_pending_bytes),
            ("max_backlog_bytes", max_backlog_bytes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidRequest(f"{name} must be a whole number > 0; got {value!r}")
        positive_seconds("rotate_interval", rotate_interval)
        #: where the columns are read from the payloads (named in every file's metadata)
        self.profile = profile
        self._metadata = profile_metadata(profile, account)
        self._header = profile_record(self._metadata)
        self.rotate_interval = rotate_interval
        self.rotate_bytes = rotate_bytes
        self.rotate_rows = rotate_rows
        self.max_pending_rows = max_pending_rows
        self.max_pending_bytes = max_pending_bytes
        self.max_backlog_bytes = max_backlog_bytes
        self.compression = compression
        self._stats = RecorderStats()
        self._clock_ns = clock_ns
        #: session rows (and rows given whole) of the chunk
        self._pending: list[Row] = []
        #: data messages of the raw path, kept as they came until the chunk is appended
        self._raw = RawBuffer()
        #: raw messages of the chunk already counted in stats and ``_pending_bytes``
        self._counted = 0
        #: the raw path's fast lane runs while the chunk holds fewer messages than this
        self._room = 0
        self._pending_bytes = 0
        #: the largest raw message seen: the fast lane's steps assume none larger
        self._largest = 0
        #: messages dropped since the last ``dropped`` row, and that row in the chunk
        self._drops = DropSpan()
        #: the first failed append to a segment (kept for ``check``)
        self.error: OSError | None = None
        #: messages dropped since appends began to fail (0: they work)
        self._failed_drops = 0
        self._failing = False
        self._last_conn = ""
        self._segment: Segment | None = None
        self._segment_count = 0
        self._segment_opened = 0.0
        #: rows appended to the segment since the last fsync
        self._unsynced = 0
        #: closed segments not converted yet (the backlog), in order
        self._closed: dict[Path, int] = {}
        self._backlog = 0
        #: segments of a crash taken into the backlog by ``open`` (``convert_leftovers``)
        self.adopted: list[ClosedSegment] = []
        self._leftovers: set[Path] = set()
        self._lock_fd: int | None = None
        #: when set, a segment that reaches ``rotate_bytes`` or ``rotate_rows`` is rolled as
        #: soon as a chunk is appended (``roll_unsynced``) and handed to it, for its fsync,
        #: close and conversion elsewhere; else rotation is the caller's (``rotate``)
        self.on_roll: Callable[[tuple[ClosedSegment, Segment, int]], None] | None = None

    # -- life

    @property
    def lock_fd(self) -> int | None:
        """The descriptor that holds the root's lock (a converter process shares it)."""
        return self._lock_fd

    def open(self, *, warm: bool = True, convert_leftovers: bool = True) -> list[Path]:
        """Take the root's lock, recover what a crash left, start a segment. Returns the
        recovered files. ``warm``: import what conversions need now, not mid-recording
        (False when they run in another process: this one then never loads Arrow).
        ``convert_leftovers`` False: the segments a crash left join the backlog as they
        are, in ``adopted``, for the caller to convert like any closed segment (their
        files count in ``stats.recovered`` then): opening converts nothing."""
        if warm:
            warm_up(self.profile)
        wal = wal_dir(self.root)
        wal.mkdir(parents=True, exist_ok=True)
        self._lock_fd = _lock(wal / LOCK_NAME)
        misses: Misses = {}
        try:
            if convert_leftovers:
                recovered = recover(
                    self.root, compression=self.compression, profile=self.profile, misses=misses
                )
            else:
                recovered, self.adopted = [], leftovers(self.root)
                self._leftovers = {closed.path for closed in self.adopted}
                for closed in self.adopted:
                    self._closed[closed.path] = closed.size
                    self._backlog += closed.size
        except BaseException:
            self._unlock()
            raise
        self.note_misses(misses)
        self._stats.recovered += len(recovered)
        self._stats.files += len(recovered)
        self._stats.restart_clock()
        self._new_segment()
        return recovered

    def close(self) -> list[Path]:
        """Flush, close the last segment, convert every segment still in the backlog (in
        this process), release the lock; then raise the write failure that dropped
        messages (``error``), if any."""
        try:
            files: list[Path] = []
            while True:
                if self._segment is None and self._pending:
                    self._new_segment()  # rows noted after the last roll (``note_misses``)
                if self._segment is not None:
                    self.flush()
                    self.roll(reopen=False)
                if not self._closed:
                    break
                for path, size in list(self._closed.items()):
                    files.extend(self.convert(ClosedSegment(path, size)))
        finally:
            self._unlock()
        self.check()
        return files

    def check(self) -> None:
        """Raise the first failed append (``error``): messages were dropped for it."""
        if self.error is not None:
            raise self.error

    def __enter__(self) -> RecordingWriter:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing releases the flock (once no child shares it)
            self._lock_fd = None

    def _new_segment(self) -> None:
        name = f"{self._clock_ns():020d}-{os.getpid()}-{next(_counter):06d}"
        # the segment names its profile: a crash's leftovers convert under it, whatever
        # profile the next recorder on this root runs with
        self._segment = Segment(wal_dir(self.root) / f"{name}{SUFFIX}", self._header)
        self._segment_count = 0
        self._segment_opened = time.monotonic()

    # -- input (event-loop thread)

    @property
    def stats(self) -> RecorderStats:
        """Live counts, exact (the raw fast lane counts in bulk, and reading catches up):
        read them on the thread that adds messages, the event loop's."""
        self._catch_up()
        self._stats.backlog_bytes = self.backlog_bytes()
        return self._stats

    @property
    def pending(self) -> int:
        """Messages and rows in the chunk (not yet appended to the segment)."""
        return len(self._pending) + len(self._raw)

    def backlog_bytes(self) -> int:
        """Bytes not yet in Parquet: closed segments, the open one, the chunk."""
        seg = self._segment
        return self._backlog + (seg.size if seg is not None else 0) + self._pending_bytes

    def _full(self, size: int) -> bool:
        return self.backlog_bytes() + size > self.max_backlog_bytes

    def _drop(self, received_at_ns: int, connection_id: str) -> bool:
        self._drops.drop(received_at_ns, "the recording backlog was full")
        self._stats.dropped += 1
        self._last_conn = connection_id
        self._room = 0  # every message the slow way until there is room again
        return False

    def add(self, row: Row) -> bool:
        """Add a row; False when the backlog is full (row dropped, counted)."""
        self._catch_up()
        size = len(row.raw) if row.raw else 64
        if row.channel != SESSION_CHANNEL and self._full(size):
            return self._drop(row.received_at_ns, row.connection_id)
        if self._drops.count:
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
        self._after_add()
        return True

    def add_event(self, event: object) -> bool:
        return self.add(row_from_event(event, self.profile))

    def add_raw(self, text: str, received_at_ns: int, connection_id: str, seq: int) -> bool:
        """Add a data message as the server sent it (the stream's raw callback; its
        columns are extracted at conversion); False when the backlog is full (dropped)."""
        # the hot path: called for every message on the receiving loop, so as few
        # attribute loads as possible; chunk bounds, drops and a new connection go the
        # slow way
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
        raw = self._raw
        if (raw.conn is not None and connection_id != raw.conn) or (  # one per record
            len(raw) + len(self._pending) >= self.max_pending_rows
            or self._pending_bytes >= self.max_pending_bytes
        ):
            with contextlib.suppress(OSError):  # counted and kept by ``spill``
                self.spill()
        size = len(text)
        if self._full(size):
            return self._drop(received_at_ns, connection_id)
        if self._drops.count:
            self._note_drops()
        raw = self._raw
        raw.append(text, received_at_ns, connection_id, seq)
        self._counted += 1
        self._pending_bytes += size
        self._largest = max(self._largest, size)
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
        """Let the fast lane take as many messages as surely fit under the chunk's bounds
        and the backlog's (at most ``_STEP`` before the next count), counting nothing per
        message. The byte bounds are exact while no message is larger than every message
        before it; past that, they are exceeded by at most that excess."""
        held = len(self._raw)
        rows_left = self.max_pending_rows - held - len(self._pending)
        largest = max(self._largest, 1)
        chunk_left = (self.max_pending_bytes - self._pending_bytes) // largest
        backlog_left = (self.max_backlog_bytes - self.backlog_bytes()) // largest
        self._room = held + max(0, min(rows_left, chunk_left, backlog_left, _STEP))

    def _after_add(self) -> None:
        if (
            len(self._raw) + len(self._pending) >= self.max_pending_rows
            or self._pending_bytes >= self.max_pending_bytes
        ):
            with contextlib.suppress(OSError):  # counted and kept by ``spill``
                self.spill()
        self._set_room()

    def _note_drops(self) -> None:
        """Turn the drop span into a ``dropped`` row of the chunk (see ``DropSpan.note``)."""
        if self._drops.note(self._pending, self._last_conn, self._clock_ns):
            self._stats.session_rows += 1

    def take(self) -> list[Row]:
        """Hand the rows of the chunk over instead of appending them, raw messages
        converted to rows (slow; for tests and tools)."""
        self._catch_up()
        if self._drops.count:
            self._note_drops()
        rows, self._pending = self._pending, []
        raw, self._raw = self._raw, RawBuffer()
        self._pending_bytes = self._counted = 0
        self._drops.unwritten = None
        self._set_room()
        return rows + rows_from_raw(raw, self.profile)

    def spill(self) -> int:
        """Append the chunk to the current segment (not yet durable: ``fsync``); returns
        the number of rows appended. The chunk is one append, whole or absent: when it
        fails, its data messages are dropped (counted, see ``_write_failed``) and the
        OSError raised."""
        self._catch_up()
        rows, raw = self._pending, self._raw
        count = len(rows) + len(raw)
        if not count:
            return 0
        seg = self._segment
        if seg is None:
            raise RuntimeError("writer is not open")
        pieces = [b"".join([encode_row(r) for r in rows])] if rows else []
        if raw:
            pieces.extend(buffer_parts(raw))
        try:
            if seg.broken:
                seg = self._replace_broken(seg)
            seg.append(pieces)
        except OSError as exc:
            raise self._write_failed(exc, seg.path) from exc
        if self._failing:
            _log.warning(
                "%s: appending to the write-ahead log works again; %d messages were dropped",
                seg.path,
                self._failed_drops,
            )
            self._failing, self._failed_drops = False, 0
        self._pending = []
        self._drops.unwritten = None
        if raw:
            self._last_conn = raw.conn or self._last_conn
            self._raw = RawBuffer()
        self._pending_bytes = self._counted = 0
        self._segment_count += count
        self._unsynced += count
        self._set_room()
        on_roll = self.on_roll
        if on_roll is not None and (
            seg.size >= self.rotate_bytes or self._segment_count >= self.rotate_rows
        ):
            rolled = self.roll_unsynced()
            if rolled is not None:
                on_roll(rolled)
        return count

    def _write_failed(self, exc: OSError, path: Path) -> OSError:
        """The chunk could not be appended: its data messages are dropped (counted; a
        ``dropped`` row names the error once writing works again), its session rows kept
        for the next append, the first such error kept in ``error`` and returned."""
        rows, raw = self._pending, self._raw
        lost = [r for r in rows if r.channel != SESSION_CHANNEL]
        self._pending = [r for r in rows if r.channel == SESSION_CHANNEL]
        self._raw = RawBuffer()
        self._pending_bytes = 64 * len(self._pending)  # as ``add`` counts a session row
        self._counted = 0
        stamps = [r.received_at_ns for r in lost] + list(raw.stamps)
        reason = f"appending to the write-ahead log failed ({exc.strerror or exc})"
        named = write_error(exc, path) or OSError(exc.errno, reason, str(path))
        named.__cause__ = exc
        if self.error is None:
            self.error = named
        if not self._failing:
            _log.warning(
                "%s: %s: messages are dropped (stats.dropped) until it works again", path, reason
            )
            self._failing = True
        self._failed_drops += len(stamps)
        if stamps:
            stats = self._stats
            stats.messages -= len(stamps)
            stats.bytes -= sum(len(r.raw) if r.raw else 64 for r in lost)
            stats.bytes -= sum(map(len, raw.texts))
            stats.dropped += len(stamps)
            self._drops.drop_many(stamps, reason)
            self._last_conn = raw.conn or (lost[-1].connection_id if lost else self._last_conn)
        return named

    def _replace_broken(self, old: Segment) -> Segment:
        """A new segment in place of one a failed append left torn (raises OSError when
        none can be made); the old one, its whole records intact, joins the backlog."""
        self._new_segment()
        count, self._unsynced = self._unsynced, 0
        closed = ClosedSegment(old.path, old.size)
        self._closed[closed.path] = closed.size
        self._backlog += closed.size
        if self.on_roll is not None:
            self.on_roll((closed, old, count))
        else:
            self.close_segment(old, count)
        assert self._segment is not None
        return self._segment

    # -- durability

    def flush_buffers(self) -> tuple[int, int]:
        """Append the chunk and hand the segment's buffer to the OS; returns (the
        descriptor to fsync, the rows that fsync makes durable) for ``fsync``, which may
        run on another thread as long as the segment is not rolled meanwhile."""
        if self._segment is None:
            raise RuntimeError("writer is not open")
        self.spill()
        seg = self._segment  # after the spill: it may have rolled
        seg.flush()
        count, self._unsynced = self._unsynced, 0
        return seg.fileno(), count

    def fsync(self, fd: int, count: int) -> None:
        """Make what ``flush_buffers`` handed over durable (releases the GIL)."""
        os.fsync(fd)
        self._stats.flushed_rows += count

    def flush(self) -> None:
        """Append the chunk and make every row added so far durable (flush + fsync)."""
        self.fsync(*self.flush_buffers())

    def write(self, rows: Sequence[Row]) -> None:
        """Add rows and make them durable."""
        for row in rows:
            self.add(row)
        self.flush()

    # -- segments

    def rotation_due(self) -> bool:
        seg = self._segment
        if seg is None:
            return False
        return (
            seg.size >= self.rotate_bytes
            or self._segment_count >= self.rotate_rows
            or time.monotonic() - self._segment_opened >= self.rotate_interval
        )

    def roll(self, *, reopen: bool = True) -> ClosedSegment | None:
        """Close the current segment (the chunk appended, fsynced) and start a new one
        (unless ``reopen`` is False). The closed segment joins the backlog; returns it, to
        be converted."""
        rolled = self.roll_unsynced(reopen=reopen)
        if rolled is None:
            return None
        closed, segment, count = rolled
        self.close_segment(segment, count)
        return closed

    def roll_unsynced(self, *, reopen: bool = True) -> tuple[ClosedSegment, Segment, int] | None:
        """``roll`` without the fsync: (the closed segment, its file, the rows its fsync
        makes durable), for a caller that runs ``close_segment`` on another thread. It
        must be closed before it is converted."""
        if self._segment is None:
            return None
        if not reopen and self._drops.count:
            self._note_drops()  # the last segment: a loss still open is recorded now
        self.spill()
        old = self._segment  # after the spill: a roll of its own may have replaced it
        count, self._unsynced = self._unsynced, 0
        if reopen:
            self._new_segment()
        else:
            self._segment = None
        old.flush()
        closed = ClosedSegment(old.path, old.size)
        self._closed[closed.path] = closed.size
        self._backlog += closed.size
        return closed, old, count

    def close_segment(self, segment: Segment, count: int) -> None:
        """fsync and close a rolled segment (may run on another thread)."""
        segment.close()
        self._stats.flushed_rows += count

    def converted(
        self, closed: ClosedSegment | Path, files: int, misses: Mapping[str, int] | None = None
    ) -> None:
        """Take a converted segment off the backlog and count its files and ``misses``."""
        path = closed.path if isinstance(closed, ClosedSegment) else Path(closed)
        size = self._closed.pop(path, None)
        if size is not None:
            self._backlog -= size
        if path in self._leftovers:
            self._leftovers.discard(path)
            self._stats.recovered += files
        self._stats.files += files
        self.note_misses(misses)

    def note_misses(self, misses: Mapping[str, int] | None) -> None:
        """Count the messages of a conversion that lacked a field the profile maps (per
        ``payloads.*`` setting) in ``stats.misses``, each setting as a ``mismatch`` row of
        ``_session``, and warn once per setting."""
        rows = report_misses(
            misses, self._stats.misses, self.profile, self.root, self._clock_ns(), self._last_conn
        )
        # never a spill here: this may come after the last segment was closed
        self._pending.extend(rows)
        self._pending_bytes += 64 * len(rows)
        self._stats.session_rows += len(rows)

    def convert(self, closed: ClosedSegment | None) -> list[Path]:
        """Write a closed segment's rows as Parquet (read back from disk), then delete the
        segment and take it off the backlog."""
        if closed is None:
            return []
        misses: Misses = {}
        files = convert_segment(
            self.root,
            closed.path,
            compression=self.compression,
            profile=self.profile,
            misses=misses,
        )
        self.converted(closed, len(files), misses)
        return files

    def rotate(self, *, reopen: bool = True) -> list[Path]:
        """Close the current segment, convert it to Parquet, start a new one (or not)."""
        return self.convert(self.roll(reopen=reopen))
