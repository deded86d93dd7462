"""Live feeds of the order store: a running ``OrderBook``, ``StreamSession`` or ``Recorder``
tells the store, as it runs, which orders exist, so the next sync fetches them even where
no listing shows them (market orders).

Each follower appends to a journal of its own, ``ROOT/_live/<ms>-<pid>-<hex>.ids``: one
line per order id first seen (``o ID``) or recording folder (``r PATH``), written at once
(a killed process loses nothing the kernel has) and fsynced at most every
``fsync_interval`` seconds and on stop. The follower holds an OS lock on its journal
while it runs; a sync reads every journal, and deletes those whose follower has ended
once what they named is in the store. A torn last line (a crash mid-write) is ignored.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolkit._atomic import fsync_path
from toolkit.errors import InvalidRequest, ToolkitError
from toolkit.protocol import validate_order_id

__all__ = ["LIVE_DIR", "Follower", "Journal", "read_journals"]

logger = logging.getLogger("toolkit.store")

#: the folder of the followers' journals, inside the store's root
LIVE_DIR = "_live"


class Journal:
    """One follower's append-only journal of order ids and recording folders."""

    def __init__(
        self,
        root: Path,
        *,
        fsync_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        folder = root / LIVE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{int(time.time() * 1000)}-{os.getpid()}-{secrets.token_hex(4)}"
        self.path = folder / f"{name}.ids"
        # locked under a name syncs do not read, then renamed: a sync never sees the
        # journal unlocked (it would take it for an ended one and delete it)
        hidden = folder / f".{name}.tmp"
        fd = os.open(hidden, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # "running" for the syncs
            os.rename(hidden, self.path)
            fsync_path(folder)  # the journal's name survives a crash
        except BaseException:
            os.close(fd)
            hidden.unlink(missing_ok=True)
            self.path.unlink(missing_ok=True)
            raise
        self._fd: int | None = fd
        self._seen: set[str] = set()
        self._dirty = False
        self._interval = fsync_interval
        self._clock = clock
        self._synced_at = clock()

    @property
    def ids(self) -> int:
        """Order ids written so far."""
        return len(self._seen)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def add_order(self, order_id: object) -> bool:
        """Journal ``order_id`` unless already journalled; False for a repeat. Raises
        InvalidRequest for a value that is not an order id (nothing is written)."""
        oid = validate_order_id(order_id)
        if oid in self._seen:
            return False
        self._write(f"o {oid}\n")
        self._seen.add(oid)
        return True

    def add_recording(self, root: str | os.PathLike[str]) -> None:
        """Journal a recording folder: every sync reads its ``watchorders`` ids."""
        path = str(Path(root).resolve())
        if "\n" in path or "\r" in path:
            raise InvalidRequest(f"recording folder name with a line break: {path!r}")
        self._write(f"r {path}\n")
        self.flush()

    def _write(self, line: str) -> None:
        if self._fd is None:
            raise ToolkitError(f"the order store's follower has stopped ({self.path.name})")
        data = line.encode("utf-8")
        written = os.write(self._fd, data)
        if written != len(data):  # O_APPEND on a regular file: whole, unless the disk is full
            raise OSError(f"short write to {self.path} ({written} of {len(data)} bytes)")
        self._dirty = True
        if self._clock() - self._synced_at >= self._interval:
            self.flush()

    def flush(self) -> None:
        """fsync what was written since the last flush."""
        if self._fd is not None and self._dirty:
            os.fsync(self._fd)
            self._dirty = False
        self._synced_at = self._clock()

    def close(self) -> None:
        """Flush, release the lock (the journal's ids are for the next sync) and close."""
        if self._fd is None:
            return
        try:
            self.flush()
        finally:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _running(path: Path) -> bool:
    """Whether a follower still holds ``path`` (its lock is taken)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False


def read_journals(root: Path) -> tuple[list[str], list[Path], list[Path]]:
    """Every order id and recording folder the followers journalled (first-seen order) and
    the journals of followers that ended (to delete once the sync that read them has
    committed). Lines that are torn or not ids are skipped with a warning."""
    folder = root / LIVE_DIR
    ids: dict[str, None] = {}
    roots: dict[Path, None] = {}
    ended: list[Path] = []
    if not folder.is_dir():
        return [], [], []
    for hidden in folder.glob(".*.tmp"):
        if not _running(hidden):  # a follower that died before its journal got its name
            hidden.unlink(missing_ok=True)
    for path in sorted(folder.glob("*.ids")):
        running = _running(path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        lines = data.split(b"\n")
        if lines[-1]:
            logger.warning("ignored a torn last line of %s", path.name)
        bad = 0
        for line in lines[:-1]:
            text = line.decode("utf-8", errors="replace")
            kind, _, value = text.partition(" ")
            if kind == "o":
                try:
                    ids.setdefault(validate_order_id(value), None)
                except InvalidRequest:
                    bad += 1
            elif kind == "r" and value:
                roots.setdefault(Path(value), None)
            else:
                bad += 1
        if bad:
            logger.warning("ignored %d unreadable line(s) of %s", bad, path.name)
        if not running:
            ended.append(path)
    return list(ids), list(roots), ended


class Follower:
    """What :meth:`OrderStore.follow` returns: ``stop()`` (or leaving ``with``) ends the
    feed; ``ids`` counts the order ids journalled so far, ``failed`` the ones the disk
    refused (logged once, as an error)."""

    def __init__(self, journal: Journal, remove: Callable[[], Any], what: str) -> None:
        self.journal = journal
        #: order ids that could not be journalled (the disk refused the write)
        self.failed = 0
        self._remove = remove
        self._what = what

    @property
    def ids(self) -> int:
        return self.journal.ids

    @property
    def running(self) -> bool:
        return not self.journal.closed

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        failed = f", failed={self.failed}" if self.failed else ""
        return f"Follower({self._what}, ids={self.ids}{failed}, {state})"

    def stop(self) -> None:
        """Stop feeding the store; what was journalled is kept for the next sync."""
        try:
            self._remove()
        finally:
            self.journal.close()

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def follow(root: Path, source: object, *, fsync_interval: float = 1.0) -> Follower:
    """A follower of ``source`` journalling into the store at ``root`` (see
    :meth:`OrderStore.follow`)."""
    from toolkit.recording import Recorder
    from toolkit.stream import OrderBook, OrderEvent

    if not isinstance(source, OrderBook | Recorder) and not callable(
        getattr(source, "add_callback", None)
    ):
        raise InvalidRequest(
            "an order store follows an OrderBook, a StreamSession or a Recorder, not "
            f"{type(source).__name__}"
        )
    journal = Journal(root, fsync_interval=fsync_interval)
    follower: Follower | None = None

    def take(event: object) -> None:
        if isinstance(event, OrderEvent) and event.order_id:
            try:
                journal.add_order(event.order_id)
            except InvalidRequest as exc:
                logger.warning("the store's follower skipped an order id: %s", exc)
            except OSError as exc:  # a full disk: said once, counted, the stream goes on
                if follower is not None:
                    follower.failed += 1
                    if follower.failed == 1:
                        logger.error(
                            "the order store's journal %s cannot be written (%s): order ids "
                            "seen from now on are not journalled; Follower.failed counts them",
                            journal.path,
                            exc,
                        )

    try:
        if isinstance(source, Recorder):
            journal.add_recording(source.root)
            follower = Follower(journal, lambda: None, f"recording {source.root}")
        elif isinstance(source, OrderBook):
            follower = Follower(journal, source.add_listener(take), "order book")
        else:
            add = source.add_callback  # type: ignore[attr-defined]
            follower = Follower(journal, add(take, channels=["watchorders"]), "stream")
    except BaseException:
        journal.close()
        raise
    return follower
