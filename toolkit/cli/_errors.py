"""How the command line reports a mistake of the user or the environment: one line (what,
where, what to do) and exit status 1, never a traceback unless ``--debug`` asks for it."""

from __future__ import annotations

import errno

from toolkit.errors import ToolkitError

#: exit status of a user's or the environment's mistake
ERROR_STATUS = 1

_HINTS: dict[int, str] = {
    errno.ENOSPC: "the disk is full: free space or choose another folder",
    errno.EDQUOT: "the disk quota is exhausted: free space or choose another folder",
    errno.EROFS: "the file system is read-only: choose a writable folder",
    errno.EACCES: "permission denied: choose a folder you can write, or fix its permissions",
    errno.EPERM: "operation not permitted: choose a folder you can write",
    errno.ENOENT: "no such file or folder: check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder: check the path",
    errno.EISDIR: "a folder is in the way where a file is expected: check the path",
    errno.EADDRINUSE: "the port is in use: choose another --port, or stop what listens there",
    errno.EADDRNOTAVAIL: "the address is not available on this machine: check --host",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n) or lower --concurrency",
}


def is_user_error(exc: BaseException) -> bool:
    """Errors that are the user's or the environment's, reported in one line."""
    from toolkit.recording._writer import RecorderBusy

    return isinstance(exc, ToolkitError | OSError | RecorderBusy)


def describe(exc: BaseException) -> str:
    """One line for ``exc``: what happened, where, and what to do."""
    if isinstance(exc, OSError) and not isinstance(exc, ToolkitError):
        hint = _HINTS.get(exc.errno or -1)
        where = exc.filename if exc.filename is not None else None
        what = exc.strerror or str(exc) or type(exc).__name__
        text = f"{what}: {where}" if where is not None else what
        return f"{text} ({hint})" if hint else text
    return str(exc).replace("\n", " ")
