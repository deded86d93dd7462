"""Files that appear whole or not at all: write under a temporary name in the same folder,
fsync, rename over the target, fsync the folder. Used by every writer of the toolkit
(exports, report, profiles, recording files, the order store).

A set of files (an export) goes through :func:`atomic_files`: every member is written to
a temporary name first, so a failure (a full disk) leaves the previous set untouched;
only then are they renamed into place, and a manifest naming each member with its size is
written last, so a reader can tell a complete set from an interrupted one. A commit that
fails part-way (a rename, the manifest on a full disk) puts the old files back. Readers go
through :func:`set_problem`: a folder whose manifest is missing (an interrupted commit
removes it first), does not match, or does not list a file they read is refused.

The disk's refusals (full, quota, file too large, read-only, no permission) are turned
into one :class:`~toolkit.errors.WriteError` naming the file meant and what to do, here
(:func:`disk_errors`) for every writer, whatever raised them (``os``, pyarrow).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from toolkit.errors import InvalidRequest, WriteError

MANIFEST = "_manifest.json"
#: the name of our temporary files: ``mkstemp``'s ``.<target's name>.<8 random
#: characters>.tmp`` (see :func:`_temp_name`); nothing else is ever swept
TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
#: when this process started: a temporary file of ours older than that was left by an
#: earlier run that was killed (SIGKILL, power loss) before it could remove it
RUN_STARTED = time.time()
_swept: set[Path] = set()
_swept_lock = threading.Lock()


# -- the disk's refusals -----------------------------------------------------------------

#: what to do when the place written to refuses, by errno ("{dir}": the folder)
_REFUSALS: dict[int, str] = {
    errno.ENOSPC: "the disk is full (ENOSPC): free space or choose another folder",
    errno.EDQUOT: "the disk quota is exhausted (EDQUOT): free space or choose another folder",
    errno.EFBIG: (
        "the file is too large for this filesystem (EFBIG): choose a folder on another "
        "filesystem (FAT32 holds at most 4 GiB a file), or raise the file-size limit "
        "(ulimit -f)"
    ),
    errno.EROFS: "the filesystem is read-only (EROFS): choose another folder",
    errno.EACCES: "no permission to write in {dir}: choose another folder or fix its permissions",
    errno.EPERM: "no permission to write in {dir}: choose another folder or fix its permissions",
}

# pyarrow's OSError may carry its errno only in its text: "... Detail: [errno 27] ..."
_ERRNO_IN_TEXT = re.compile(r"\[errno (\d+)\]", re.IGNORECASE)


def refusal_errno(exc: BaseException) -> int | None:
    """The errno of ``exc`` when it is one of the disk's refusals (full, quota, too large,
    read-only, no permission), read from the exception or from its text (pyarrow)."""
    if not isinstance(exc, OSError):
        return None
    code = exc.errno
    if code is None:
        found = _ERRNO_IN_TEXT.search(str(exc))
        code = int(found.group(1)) if found else None
    return code if code in _REFUSALS else None


def write_error(exc: BaseException, path: str | os.PathLike[str]) -> WriteError | None:
    """``exc``, raised while writing ``path``, as one :class:`~toolkit.errors.WriteError`
    naming ``path`` (the file meant, not its temporary name) and what to do, when it is
    one of the disk's refusals; None otherwise (and for an error already translated)."""
    code = refusal_errno(exc)
    if code is None or isinstance(exc, WriteError):
        return None
    target = Path(path)
    hint = _REFUSALS[code].format(dir=target.parent)
    return WriteError(f"cannot write {target}: {hint}", errno=code, filename=str(target))


@contextlib.contextmanager
def disk_errors(path: str | os.PathLike[str]) -> Iterator[None]:
    """Inside, the disk's refusals become a :class:`~toolkit.errors.WriteError` naming
    ``path`` (see :func:`write_error`); other errors pass as they are."""
    try:
        yield
    except OSError as exc:
        error = write_error(exc, path)
        if error is None:
            raise
        raise error from exc


# -- whole files -------------------------------------------------------------------------


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
    left as it was. Returns ``path``. The disk's refusals (full, read-only, file too
    large, no permission) are a :class:`~toolkit.errors.WriteError` naming ``path``."""
    target = Path(path)
    with disk_errors(target):
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


def _in_the_way(target: Path) -> InvalidRequest | None:
    """Why ``target`` cannot be replaced by a file (a folder, a device, a pipe is there),
    or None: a rename over it would fail half-way through a set."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return InvalidRequest(f"cannot write {target}: {exc.strerror or exc}")
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):  # a link is replaced, never followed
        return None
    what = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
    return InvalidRequest(
        f"cannot write {target}: it is {what}; move it away or choose another folder "
        "(nothing was written)"
    )


def refuse_non_files(directory: str | os.PathLike[str], names: Collection[str]) -> None:
    """InvalidRequest naming the first of ``names`` (and the manifest) in ``directory``
    that holds a folder or anything else but a file: a set written there would fail at
    its rename. A caller checks before any work that precedes the writing (a load)."""
    for name in (*names, MANIFEST):
        refused = _in_the_way(Path(directory) / name)
        if refused is not None:
            raise refused


class FileSet:
    """The members of a set being written by :func:`atomic_files`: ``path(name)`` gives
    the temporary path to write member ``name`` to."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._tmp: dict[str, Path] = {}
        self._writing: Path | None = None

    def path(self, name: str) -> Path:
        """The temporary path to write member ``name`` (a file name in the folder) to.
        InvalidRequest when a folder (or anything but a file) is where it goes."""
        if not name or Path(name).name != name or name == MANIFEST:
            raise ValueError(f"not a member file name: {name!r}")
        target = self.directory / name
        refused = _in_the_way(target)
        if refused is not None:
            raise refused
        if name not in self._tmp:
            with disk_errors(target):
                self._tmp[name] = _temp_name(target)
        self._writing = target
        return self._tmp[name]

    def _failed(self, exc: OSError) -> WriteError | None:
        """A write error inside the block, said of the member it was writing."""
        finals = {str(tmp): self.directory / name for name, tmp in self._tmp.items()}
        meant = finals.get(str(exc.filename)) or self._writing or self.directory
        return write_error(exc, meant)

    def _discard(self) -> None:
        for tmp in self._tmp.values():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def _commit(self) -> dict[str, Path]:
        for name in (*self._tmp, MANIFEST):
            # checked again before anything is replaced: a rename that fails after others
            # would leave half a set
            refused = _in_the_way(self.directory / name)
            if refused is not None:
                raise refused
        for name, tmp in self._tmp.items():
            with disk_errors(self.directory / name):
                fsync_path(tmp)
        manifest = self.directory / MANIFEST
        # every file replaced is first set aside, to be put back if a later step fails
        # (a rename, the manifest on a full disk): the old set again, whole
        kept: dict[Path, Path | None] = {}
        try:
            # the old manifest goes first, durably, before any member is replaced: a set
            # caught between renames (a mix of new and old files) has none, and readers
            # refuse it
            if _set_aside(manifest, kept, move=True):
                _fsync_folder(self.directory)
            final: dict[str, Path] = {}
            sizes: dict[str, int] = {}
            for name, tmp in self._tmp.items():
                target = self.directory / name
                with disk_errors(target):
                    _set_aside(target, kept)
                    os.replace(tmp, target)
                final[name] = target
                sizes[name] = target.stat().st_size
            # the renames are durable before the manifest that vouches for them
            _fsync_folder(self.directory)
            atomic_write_text(manifest, json.dumps({"complete": True, "files": sizes}, indent=1))
        except BaseException:
            _put_back(kept)
            raise
        for old in kept.values():
            if old is not None:
                with contextlib.suppress(OSError):
                    old.unlink()
        return final


def _set_aside(target: Path, kept: dict[Path, Path | None], *, move: bool = False) -> bool:
    """Keep the file at ``target`` (if any) under a hidden name beside it, noted in
    ``kept`` (``None``: there was none; a new file there is removed on failure). A hard
    link keeps ``target`` in place until its rename replaces it; ``move`` (or a filesystem
    without hard links) renames it away instead."""
    old = target.with_name(f".{target.name}.{secrets.token_hex(4)}.old")
    try:
        if move:
            os.rename(target, old)
        else:
            try:
                os.link(target, old, follow_symlinks=False)
            except FileNotFoundError:
                raise
            except OSError:  # no hard links here (FAT, some network shares)
                os.rename(target, old)
    except FileNotFoundError:
        kept[target] = None
        return False
    kept[target] = old
    return True


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samestat(os.lstat(a), os.lstat(b))
    except OSError:
        return False


def _put_back(kept: dict[Path, Path | None]) -> None:
    """Undo a commit that failed: the files set aside back in place, in reverse (the old
    manifest last, once the members it lists are back), the new ones removed."""
    for target, old in reversed(kept.items()):
        with contextlib.suppress(OSError):
            if old is None:
                target.unlink(missing_ok=True)
            elif _same_file(old, target):  # never replaced: a rename between two links
                old.unlink()  # of one file does nothing
            else:
                os.replace(old, target)
    if kept:
        _fsync_folder(next(iter(kept)).parent)


@contextlib.contextmanager
def atomic_files(
    directory: str | os.PathLike[str], members: Collection[str] = ()
) -> Iterator[FileSet]:
    """Write a set of files into ``directory`` whole or not at all.

    Inside the block, write each member to ``files.path(name)``. If the block raises,
    every temporary file is removed and the folder is left as it was. Otherwise every
    member is fsynced and renamed into place, then ``_manifest.json`` lists the members
    with their sizes (see :func:`read_manifest`).

    ``members``, the names the block will write when they are known, are checked before
    anything is written: a folder (or anything but a file) where one goes, or where the
    manifest goes, is an InvalidRequest naming it. The disk's refusals (full, read-only,
    file too large, no permission) are a :class:`~toolkit.errors.WriteError` naming the
    member being written."""
    root = Path(directory)
    refuse_non_files(root, members)
    with disk_errors(root):
        root.mkdir(parents=True, exist_ok=True)
    files = FileSet(root)
    try:
        yield files
    except BaseException as exc:
        files._discard()
        error = files._failed(exc) if isinstance(exc, OSError) else None
        if error is None:
            raise
        raise error from exc
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
