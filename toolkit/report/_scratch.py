"""The temporary folders of reports' parts: each held by its process while its report lives
(an exclusive ``flock`` on a file in it, which the kernel drops when the process ends,
however it ends: SIGKILL, a Jupyter kernel restarted or killed) and removed by the next
report made in the same place once nothing holds it. A report killed mid-way leaves no
gigabytes behind in the temporary folder for longer than until the next report."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: folders are held by nothing, never swept
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK", "PREFIX", "Owner", "hold", "make", "remove", "sweep"]

#: the prefix of the temporary folder of a set's parts
PREFIX = "toolkit-parts-"
#: the file in it that its process holds locked
LOCK = ".owner.lock"

log = logging.getLogger("toolkit.report")


class Owner:
    """The open, locked file that says a parts folder's report is alive."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def release(self) -> None:
        """Close the file, which drops the lock; again: nothing."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)

    def __repr__(self) -> str:
        return f"Owner({'held' if self.fd is not None else 'released'})"


def hold(path: Path) -> Owner:
    """Hold the folder ``path`` for this process. The lock file is named only once it is
    locked, so a sweep never finds it unlocked while its report runs."""
    if fcntl is None:  # pragma: no cover - Windows
        return Owner(None)
    pending = path / f"{LOCK}.new"
    fd = os.open(pending, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(pending, path / LOCK)
    except BaseException:
        os.close(fd)
        raise
    return Owner(fd)


def sweep(base: Path) -> list[Path]:
    """Remove the parts folders in ``base`` that no process holds: their report was
    killed. A folder without the lock file (being made, or left by an older toolkit)
    is not judged and stays; one another user owns stays too."""
    if fcntl is None:  # pragma: no cover - Windows
        return []
    removed = []
    try:
        found = sorted(base.glob(f"{PREFIX}*"))
    except OSError:
        return []
    for path in found:
        try:
            fd = os.open(path / LOCK, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its report is running
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)
        removed.append(path)
    if removed:
        log.info("removed %d parts folder(s) a killed report left in %s", len(removed), base)
    return removed


def make(folder: str | os.PathLike[str] | None) -> tuple[Path, Owner]:
    """A new parts folder in ``folder`` (else the system's temporary one), held by this
    process, after sweeping what killed reports left there."""
    base = Path(folder) if folder is not None else Path(tempfile.gettempdir())
    sweep(base)
    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    try:
        return path, hold(path)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise


def remove(folder: Path, owner: Owner | None) -> None:
    """Remove ``folder`` and every part in it, then let go of it (what is left of it, if
    anything could not be removed, goes at a later sweep)."""
    shutil.rmtree(folder, ignore_errors=True)
    if owner is not None:
        owner.release()
