"""A running recorder's compaction of its closed days: once a UTC day is over (its end plus
the grace for late files, and no write-ahead segment left that may hold its rows), that
day's files of every channel are compacted on a thread of its own, off the receiving path;
at the recorder's start, the closed days a previous run left uncompacted.

The decision is sans-I/O (``DailyCompaction.due`` on an injected clock); the work is
:func:`~toolkit.recording._compact.compact_closed`, crash-safe as ``compact_recording``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from toolkit.errors import InvalidRequest
from toolkit.recording._compact import (
    GRACE_NS,
    MAX_ROWS,
    CompactStats,
    _day,
    compact_closed,
)

__all__ = ["COMPACT_MODES", "RETRY_NS", "DailyCompaction", "background", "check_compact"]

_log = logging.getLogger("toolkit.recording")

#: the values of ``Recorder(compact=)``
COMPACT_MODES = ("daily", "off")
#: a run that could not close every day over (a segment still waiting for its conversion,
#: another compaction, a failure) is tried again this long after, on the same clock
RETRY_NS = 60 * 10**9


def check_compact(compact: str) -> str:
    """``compact`` when it is one of :data:`COMPACT_MODES`, else InvalidRequest."""
    if compact not in COMPACT_MODES:
        raise InvalidRequest(f"compact must be 'daily' or 'off'; got {compact!r}")
    return compact


def background() -> None:
    """Initializer of a recorder's worker threads: a lower CPU priority for the thread
    only (Linux), so that its work takes the idle time, not the receiving loop's."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


class DailyCompaction:
    """When a running recorder compacts its closed days, and the runs on their thread.

    ``poke()`` (on each flush of the recorder, and at its start) starts a run when one is
    :meth:`due`: none is running and the day that ended ``grace_ns`` ago (by ``clock_ns``)
    was not compacted yet, the first one at once. A run compacts every closed day of
    every channel; the days it could not close yet (a write-ahead segment that may still
    hold their rows is waiting for its conversion), and a run that failed, are tried again
    ``retry_ns`` later. ``close()`` stops a run after the partition it is compacting, and
    starts no other until ``open()``.
    """

    def __init__(
        self,
        root: Path,
        *,
        clock_ns: Callable[[], int] = time.time_ns,
        compression: str = "zstd",
        max_rows: int = MAX_ROWS,
        grace_ns: int = GRACE_NS,
        retry_ns: int = RETRY_NS,
    ) -> None:
        self.root = root
        self.clock_ns = clock_ns
        self.compression = compression
        self.max_rows = max_rows
        self.grace_ns = grace_ns
        self.retry_ns = retry_ns
        #: every day before this date is compacted ("": not known yet, so the first
        #: ``poke`` runs, for the days a previous run left)
        self.through = ""
        #: no run before this time (clock ns): the last one left a day it could not close
        self.next_try_ns = 0
        #: day partitions compacted, runs done, the last run's stats and error
        self.partitions = 0
        self.runs = 0
        self.last: CompactStats | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._future: concurrent.futures.Future[None] | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    def due(self, now_ns: int) -> bool:
        """Whether a run should start at ``now_ns``: none is running, none failed or came
        short less than ``retry_ns`` ago, and a day over (plus the grace) is not known to be
        compacted."""
        if self.running or now_ns < self.next_try_ns:
            return False
        return _day(now_ns - self.grace_ns) > self.through

    @property
    def running(self) -> bool:
        return self._future is not None and not self._future.done()

    def poke(self) -> concurrent.futures.Future[None] | None:
        """Start a run on the compaction thread when one is due; its future, else None."""
        now = self.clock_ns()
        if self._stop.is_set() or not self.due(now):
            return None
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="recorder-compact", initializer=background
            )
        self._future = self._executor.submit(self.run, now)
        return self._future

    def run(self, now_ns: int) -> None:
        """One run at ``now_ns`` (on the compaction thread): every closed day compacted,
        what it did logged; a failure is logged and tried again later, never raised (the
        recording goes on)."""
        try:
            stats = compact_closed(
                self.root,
                None,
                max_rows=self.max_rows,
                compression=self.compression,
                now_ns=now_ns,
                stop=self._stop.is_set,
            )
        except InvalidRequest as exc:  # another compaction holds the recording
            _log.info("%s: daily compaction postponed: %s", self.root, exc)
            self.next_try_ns = now_ns + self.retry_ns
            return
        except Exception as exc:  # a full disk, a file it could not read: not the recording's end
            _log.warning("%s: daily compaction failed (tried again later): %s", self.root, exc)
            self.error = exc
            self.next_try_ns = now_ns + self.retry_ns
            return
        self.runs += 1
        self.last = stats
        self.partitions += stats.partitions
        if stats.partitions or stats.skipped:
            _log.info("%s: %s", self.root, stats.line())
        if stats.closed_before:
            self.through = max(self.through, stats.closed_before)
        if _day(now_ns - self.grace_ns) > self.through:
            self.next_try_ns = now_ns + self.retry_ns  # a day could not close yet

    def open(self) -> None:
        """Let runs start again (a recorder started after a stop), the first at once: what
        was compacted is no longer known (files may have come meanwhile)."""
        self._stop.clear()
        self.through = ""
        self.next_try_ns = 0

    def close(self) -> concurrent.futures.Future[None] | None:
        """Stop: a run under way ends after its partition (the future to wait for); no run
        starts after this."""
        self._stop.set()
        future = self._future if self.running else None
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
        return future
