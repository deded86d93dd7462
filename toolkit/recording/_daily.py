"""A running recorder's compaction of its closed days: once a UTC day is over (its end plus
the grace for late files, and no write-ahead segment left that may hold its rows), that
day's files of every channel are compacted off the receiving path (a thread waits for it);
at the recorder's start, the closed days a previous run left uncompacted.

The decision is sans-I/O (``DailyCompaction.due`` on an injected clock); the work is
:func:`~toolkit.recording._compact.compact_closed`, crash-safe as ``compact_recording``,
in a process of its own at the lowest CPU priority (``process=True``, the recorder's
default: a compaction in a thread took 40 % of the receiving loop's rate, for the GIL) or
on the thread (``process=False``). The process answers one JSON line on its stdout; a
SIGTERM (the recorder stops) ends it after the partition it is compacting.

    python -m toolkit.recording._daily CONFIG_JSON
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
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
    closed_work,
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
        process: bool = False,
    ) -> None:
        self.root = root
        self.process = process
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
        self._child: subprocess.Popen[str] | None = None

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
            work, closed_before = closed_work(self.root, now_ns) if self.process else (True, "")
            if not work:  # nothing for a process to do (most starts, most checks)
                stats = CompactStats(closed_before=closed_before)
            elif self.process:
                stats = self._in_process(now_ns)
            else:
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

    def _config(self, now_ns: int) -> dict[str, object]:
        return {
            "root": str(self.root),
            "now_ns": now_ns,
            "max_rows": self.max_rows,
            "compression": self.compression,
            "parent": os.getpid(),
        }

    def _in_process(self, now_ns: int) -> CompactStats:
        """The run in a process of its own (``main``); its stats, or its error raised."""
        from toolkit.recording._convert import _env

        child = subprocess.Popen(
            [sys.executable, "-m", __name__, json.dumps(self._config(now_ns))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        self._child = child
        if self._stop.is_set():  # stopped while it started
            child.terminate()
        out, err = child.communicate()
        lines = out.strip().splitlines()
        reply = json.loads(lines[-1]) if lines else {}
        if "busy" in reply:
            raise InvalidRequest(reply["busy"])
        if "stats" not in reply:
            said = reply.get("failed") or (err.strip().splitlines() or [""])[-1]
            raise RuntimeError(f"the compaction process ended (code {child.returncode}): {said}")
        return CompactStats(**reply["stats"])

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
        child = self._child
        if child is not None and child.poll() is None:
            with contextlib.suppress(OSError):
                child.terminate()  # it ends after the partition under way
        future = self._future if self.running else None
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
        return future


def main(argv: list[str] | None = None) -> int:
    """A run of the recorder's compaction in this process (``DailyCompaction._in_process``):
    one JSON line on stdout, ``{"stats": {...}}``, ``{"busy": text}`` (another compaction
    holds the recording) or ``{"failed": text}``."""
    from toolkit.recording._convert import NICENESS, _die_with_parent

    config = json.loads((sys.argv[1:] if argv is None else argv)[0])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    _die_with_parent(int(config["parent"]))
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    try:
        stats = compact_closed(
            Path(config["root"]),
            None,
            max_rows=int(config["max_rows"]),
            compression=str(config["compression"]),
            now_ns=int(config["now_ns"]),
            stop=stop.is_set,
        )
    except InvalidRequest as exc:
        print(json.dumps({"busy": str(exc)}))
        return 0
    except Exception as exc:
        print(json.dumps({"failed": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps({"stats": dataclasses.asdict(stats)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
