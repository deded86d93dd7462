"""The files of a recording a reader takes: each checked to be a whole Parquet file with a
recording's columns before it is read, so a damaged copy or another dataset's file is named
(InvalidRequest) or, with ``on_bad_file="skip"``, left out and counted."""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolkit.errors import InvalidRequest
from toolkit.recording._layout import list_files, partition_of

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "BadFile",
    "bad_file_error",
    "check_on_bad_file",
    "damaged_file",
    "file_problem",
    "recording_files",
    "warn_skipped",
]

#: what ``on_bad_file=`` takes: a damaged or foreign file stops the read, or is skipped
ON_BAD_FILE = ("raise", "skip")
#: the columns without which a file is no recording's (every writer wrote them)
_REQUIRED = ("received_at", "connection_id", "seq", "channel", "raw")


@dataclass(frozen=True)
class BadFile:
    """A file of a recording's folders that is not one of its parts, and why."""

    path: str
    problem: str


def check_on_bad_file(value: object) -> str:
    if value not in ON_BAD_FILE:
        raise InvalidRequest(f'on_bad_file must be "raise" or "skip", not {value!r}')
    return str(value)


def _all_files(root: str | os.PathLike[str]) -> list[str]:
    # only the dataset's own files: a README or a live recorder's temporaries beside
    # them are not data, nor the files a compacted one replaces
    return list_files(root)


def _kind(t: pa.DataType) -> str:
    """The family of an Arrow type: files of older writers may differ within one
    (a time unit, an integer width, large strings) and are cast on reading."""
    import pyarrow as pa

    for name, test in (
        ("time", pa.types.is_timestamp),
        ("integer", pa.types.is_integer),
        ("number", pa.types.is_floating),
        ("text", lambda x: pa.types.is_string(x) or pa.types.is_large_string(x)),
        ("null", pa.types.is_null),
    ):
        if test(t):
            return name
    return str(t)


def file_problem(path: str) -> str | None:
    """What is wrong with ``path`` as a file of a recording (its footer and columns), in
    words; None when it reads as one. An error of the system (no permission, an I/O
    error) is not the file's: it is raised as it is."""
    import pyarrow.parquet as pq

    try:
        size = os.stat(path).st_size
        if size == 0:
            return "is empty (0 bytes: a copy that never got its data)"
        found = pq.read_schema(path)
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:
            raise
        return (
            f"is not a whole Parquet file ({size} bytes; truncated, or not Parquet at all: "
            f"{_first_line(exc)})"
        )
    names = set(found.names)
    missing = [name for name in _REQUIRED if name not in names]
    if missing:
        return (
            "is a Parquet file of another dataset, not a recording's (no "
            f"{', '.join(map(repr, missing))} column)"
        )
    for field in found:
        want = _expected().get(field.name)
        if want is not None and _kind(field.type) not in (want[1], "null"):
            return (
                f"is a Parquet file of another dataset, not a recording's (its column "
                f"{field.name!r} is {field.type}, not {want[0]})"
            )
    return None


@functools.cache
def _expected() -> dict[str, tuple[pa.DataType, str]]:
    """Each column of a recording: its type and the family of it (:func:`_kind`)."""
    from toolkit.recording._rows import recording_schema

    return {f.name: (f.type, _kind(f.type)) for f in recording_schema()}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def bad_file_error(root: str | os.PathLike[str], bad: BadFile) -> InvalidRequest:
    """The error for ``bad``: the file, what is wrong, and what to do."""
    return InvalidRequest(
        f"recording file {bad.path} {bad.problem}; nothing was read: move it out of "
        f"{root} (or copy it again from where it came), or in Python read the rest with "
        "on_bad_file='skip'"
    )


_partition = partition_of


def recording_files(
    root: str | os.PathLike[str],
    channels: Collection[str] | None = None,
    dates: Collection[str] | None = None,
    *,
    first_date: str | None = None,
    last_date: str | None = None,
    start_ns: int | None = None,
    end_ns: int | None = None,
    on_bad_file: str = "raise",
) -> tuple[list[str], list[BadFile]]:
    """The files of the recording at ``root`` a read of ``channels`` on ``dates`` (or
    from ``first_date`` to ``last_date``, inclusive; files whose names say they hold no
    row of ``[start_ns, end_ns)`` left out unopened: :func:`~toolkit.recording._layout.
    list_files`) takes, each checked (:func:`file_problem`), and those left out for what
    is wrong with them. A bad file raises InvalidRequest naming it, or is left out with
    ``on_bad_file="skip"``."""
    good: list[str] = []
    bad: list[BadFile] = []
    taken = list_files(
        root,
        channels,
        dates,
        first_date=first_date,
        last_date=last_date,
        start_ns=start_ns,
        end_ns=end_ns,
    )
    for path, problem in zip(taken, map(file_problem, taken), strict=True):
        if problem is None:
            good.append(path)
            continue
        found = BadFile(path, problem)
        if on_bad_file != "skip":
            raise bad_file_error(root, found)
        bad.append(found)
    return good, bad


def warn_skipped(root: str | os.PathLike[str], bad: Sequence[BadFile], stacklevel: int) -> None:
    """One warning for the files a read left out: how many, and the first."""
    if bad:
        warnings.warn(
            f"recording {root}: {len(bad)} damaged or foreign file(s) skipped, the first "
            f"{bad[0].path} ({bad[0].problem})",
            RuntimeWarning,
            stacklevel=stacklevel + 1,
        )


def damaged_file(files: Iterable[str], columns: Sequence[str]) -> BadFile | None:
    """The file whose pages do not read (its footer did: :func:`file_problem` passed it),
    found by reading ``columns`` of each; None when every one reads (the error was not
    a file's)."""
    import pyarrow.parquet as pq

    for path in files:
        try:
            schema = pq.read_schema(path)
            pq.read_table(path, columns=[c for c in columns if c in schema.names])
        except (OSError, ValueError) as exc:
            if isinstance(exc, OSError) and exc.errno is not None:
                raise
            return BadFile(path, f"is damaged: its data does not read ({_first_line(exc)})")
    return None
