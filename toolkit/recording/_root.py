"""The root of a recording: its checks, its write-ahead folder and lock, and the recovery
of what a crashed recorder left there."""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

from toolkit.errors import InvalidRequest
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.recording._conversion import convert_segment
from toolkit.recording._misses import Misses
from toolkit.recording._wal import SUFFIX


@dataclass(frozen=True, slots=True)
class ClosedSegment:
    """A segment that is complete and fsynced on disk, waiting for its conversion."""

    path: Path
    size: int


class RecorderBusy(RuntimeError):
    """Another recorder holds the lock of this root."""


WAL_DIR = "_wal"
LOCK_NAME = "LOCK"


def check_root(root: str | os.PathLike[str]) -> Path:
    """``root`` as a Path; InvalidRequest for an empty one (which would be the current
    directory), before anything is written."""
    if not os.fspath(root).strip():
        raise InvalidRequest("the recording root is empty: give the folder to record into")
    return Path(root)


def positive_seconds(name: str, value: float) -> float:
    """``value`` when it is a finite number of seconds > 0, else InvalidRequest naming
    ``name`` (NaN would pass a ``<= 0`` test and make a loop spin)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not (number and math.isfinite(value) and value > 0):
        raise InvalidRequest(f"{name} must be a finite number of seconds > 0; got {value!r}")
    return float(value)


def wal_dir(root: str | os.PathLike[str]) -> Path:
    return Path(root) / WAL_DIR


def recover(
    root: str | os.PathLike[str],
    *,
    compression: str = "zstd",
    profile: ServiceProfile = DEFAULT_PROFILE,
    misses: Misses | None = None,
) -> list[Path]:
    """Convert the segments a crashed recorder left in ``ROOT/_wal/`` and delete the
    temporary files of conversions it did not finish (``misses`` as for
    ``convert_segment``). Call it only while holding the root's lock
    (``RecordingWriter.open`` does)."""
    files: list[Path] = []
    for closed in leftovers(root):
        files.extend(
            convert_segment(
                root, closed.path, compression=compression, profile=profile, misses=misses
            )
        )
    return files


def leftovers(root: str | os.PathLike[str]) -> list[ClosedSegment]:
    """The segments a crashed recorder left in ``ROOT/_wal/``, oldest first, once the
    temporary files of conversions it did not finish are deleted (the cheap half of
    ``recover``: nothing converted). Only while holding the root's lock."""
    for tmp in Path(root).glob("channel=*/date=*/.part-*.parquet.tmp"):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return [ClosedSegment(p, p.stat().st_size) for p in sorted(wal_dir(root).glob(f"*{SUFFIX}"))]


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
