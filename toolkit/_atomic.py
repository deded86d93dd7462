"""Files that appear whole or not at all: write under a temporary name in the same folder,
fsync, rename over the target, fsync the folder. Used by every writer of the toolkit
(exports, report, profiles, recording files, the order store).

A set of files (an export) goes through :func:`atomic_files`: every member is written to
a temporary name first, so a failure (a full disk) leaves the previous set untouched;
only then are they renamed into place, and a manifest naming each member with its size is
written last, so a reader can tell a complete set from an interrupted one. Readers go
through :func:`set_problem`: a folder whose manifest is missing (an interrupted commit
removes it first), does not match, or does not list a file they read is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

MANIFEST = "_manifest.json"
#: the name of our temporary files: ``mkstemp``'s ``.<target's name>.<8 random
#: characters>.tmp`` (see :func:`_temp_name`); nothing else is ever swept
TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
#: when this process started: a temporary file of ours older than that was left by an
#: earlier run that was killed (SIGKILL, power loss) before it could remove it
RUN_STARTED = time.time()
_swept: set[Path] = set()
_swept_lock = threading.Lock()


def fsync_path(path: str | os.PathLike[str]) -> None:
    """fsync a file or a folder by path (a folder: its entries are durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_umask() -> int:
    # os.umask() can only be read by setting it, which for an instant changes it for every
    # thread of the process; done once, at import
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_IMPORT_UMASK = _read_umask()


def _umask() -> int:
    """The process umask, read without changing it (Linux: /proc/self/status), else the
    one at import."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return _IMPORT_UMASK


def sweep_stale(directory: str | os.PathLike[str], before: float | None = None) -> int:
    """Remove the temporary files of ours (named like :data:`TEMP_NAME`) in ``directory``
    last modified before ``before`` (default: this process's start, so a write under
    way in another process is never touched): what a killed run left. Returns how many
    were removed."""
    cutoff = RUN_STARTED if before is None else before
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        if not TEMP_NAME.match(entry.name):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue  # gone meanwhile, or not ours to remove
    return removed


def _sweep_once(directory: Path) -> None:
    """:func:`sweep_stale` the first time this process writes in ``directory``."""
    key = directory.resolve()
    with _swept_lock:
        if key in _swept:
            return
        _swept.add(key)
    sweep_stale(key)


def _temp_name(path: Path) -> Path:
    """A new empty file beside ``path``, with the permissions a plain ``open()`` would
    give (``mkstemp`` makes it private, and the rename would keep that). The first one
    in a folder sweeps what a killed earlier run left there (:func:`sweep_stale`)."""
    _sweep_once(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
    finally:
        os.close(fd)
    return Path(tmp)


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` to fill a temporary file beside ``path``, then fsync it and
    rename it over ``path``; on any error the temporary file is removed and ``path`` is
    left as it was. Returns ``path``."""
    target = Path(path)
    tmp = _temp_name(target)
    try:
        write(tmp)
        fsync_path(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_folder(target.parent)
    return target


def _fsync_folder(directory: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems refuse a directory fsync
        fsync_path(directory)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` whole or not at all."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding=encoding))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all."""
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


class FileSet:
    """The members of a set being written by :func:`atomic_files`: ``path(name)`` gives
    the temporary path to write member ``name`` to."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._tmp: dict[str, Path] = {}

    def path(self, name: str) -> Path:
        """The temporary path to write member ``name`` (a file name in the folder) to."""
        if not name or Path(name).name != name or name == MANIFEST:
            raise ValueError(f"not a member file name: {name!r}")
        if name not in self._tmp:
            self._tmp[name] = _temp_name(self.directory / name)
        return self._tmp[name]

    def _discard(self) -> None:
        for tmp in self._tmp.values():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def _commit(self) -> dict[str, Path]:
        for tmp in self._tmp.values():
            fsync_path(tmp)
        manifest = self.directory / MANIFEST
        # the old manifest goes first, durably, before any member is replaced: a set caught
        # between renames (a mix of new and old files) has none, and readers refuse it
        try:
            manifest.unlink()
        except FileNotFoundError:
            pass
        else:
            _fsync_folder(self.directory)
        final: dict[str, Path] = {}
        sizes: dict[str, int] = {}
        for name, tmp in self._tmp.items():
            target = self.directory / name
            os.replace(tmp, target)
            final[name] = target
            sizes[name] = target.stat().st_size
        # the renames are durable before the manifest that vouches for them
        _fsync_folder(self.directory)
        atomic_write_text(manifest, json.dumps({"complete": True, "files": sizes}, indent=1))
        return final


@contextlib.contextmanager
def atomic_files(directory: str | os.PathLike[str]) -> Iterator[FileSet]:
    """Write a set of files into ``directory`` whole or not at all.

    Inside the block, write each member to ``files.path(name)``. If the block raises,
    every temporary file is removed and the folder is left as it was. Otherwise every
    member is fsynced and renamed into place, then ``_manifest.json`` lists the members
    with their sizes (see :func:`read_manifest`)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    files = FileSet(root)
    try:
        yield files
    except BaseException:
        files._discard()
        raise
    try:
        files._commit()
    except BaseException:
        files._discard()
        raise


def read_manifest(directory: str | os.PathLike[str]) -> dict[str, int] | None:
    """The members and sizes of the set in ``directory`` if its manifest says it is
    complete and every member has the size written; ``None`` otherwise."""
    path = Path(directory) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("complete") is not True:
        return None
    files = data.get("files")
    if not isinstance(files, dict):
        return None
    for name, size in files.items():
        member = Path(directory) / str(name)
        if not member.is_file() or member.stat().st_size != size:
            return None
    return {str(k): int(v) for k, v in files.items()}


def set_problem(
    directory: str | os.PathLike[str],
    members: Collection[str],
    *,
    what: str,
    again: str,
    require_manifest: bool = True,
) -> str | None:
    """Why ``directory`` does not hold one complete set that includes ``members`` (a
    message for the reader to raise), or ``None`` when it does.

    The manifest must say the set is complete, every member it lists must have the size
    written, and it must list each of ``members`` (the files the caller reads): a file it
    does not list is left from an earlier set. A folder without a manifest (an export
    interrupted between its renames, or one written by another tool or an older toolkit)
    passes only with ``require_manifest=False``. ``what`` names the set in the message
    (``"export of OrderFrames.to_parquet"``) and ``again`` says how to write it again.
    """
    root = Path(directory)
    if not (root / MANIFEST).exists():
        if not require_manifest:
            return None
        return (
            f"{root} has no {MANIFEST}, so nothing says its files are one complete {what} "
            "(an export interrupted while its files were renamed into place, or one written "
            f"by another tool or an older toolkit); {again} (in Python, "
            "require_manifest=False reads the files as they are)"
        )
    listed = read_manifest(root)
    if listed is None:
        return (
            f"{root} holds an incomplete export (its {MANIFEST} does not match the files); {again}"
        )
    unlisted = [name for name in members if name not in listed]
    if unlisted:
        return (
            f"{root}: its {MANIFEST} lists the files of the last export written there "
            f"({', '.join(sorted(listed)) or 'none'}), not {', '.join(unlisted)}, which are "
            f"left from an earlier one; {again}"
        )
    return None
