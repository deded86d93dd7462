"""Where a recording's files are and what their names say: the Parquet writer every file
goes through (timestamps in microseconds, which every engine reads), the time range a file
name carries, and the listing of the files a read takes, pruned by channel, date and time
range without opening a file, and without the files a compacted file replaces.

A file name is ``part-<name>.r<first_us>-<last_us>.parquet``: the first and the last
``received_at`` of its rows in Unix microseconds, so a read of a window skips files outside
it by their names alone. Files written before the range was added (``part-<name>.parquet``)
are taken whatever the window, and their rows filtered once read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import unquote

from toolkit.recording._rows import partition_value

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    import pyarrow.parquet as pq

__all__ = [
    "COMPACTED_FROM",
    "TIME_UNIT",
    "file_range",
    "list_files",
    "listed_again",
    "parquet_writer",
    "range_name",
    "replaced_by",
]

#: the unit of every timestamp written (Spark refuses nanoseconds: PARQUET_TYPE_ILLEGAL);
#: files of older versions hold nanoseconds and read the same
TIME_UNIT = "us"
#: a compacted file's metadata: the JSON list of the file names (same folder) it replaces
COMPACTED_FROM = b"toolkit.compacted_from"
_RANGE = re.compile(r"\.r(\d+)-(\d+)\.parquet$")


def parquet_writer(
    path: str | os.PathLike[str], schema: pa.Schema, compression: str
) -> pq.ParquetWriter:
    """A Parquet writer for a recording file: the Arrow schema's nanosecond timestamps
    are stored as microseconds (``TIMESTAMP(MICROS, UTC)``), the sub-microsecond digits
    dropped."""
    import pyarrow.parquet as pq

    return pq.ParquetWriter(
        path,
        schema,
        compression=compression,
        coerce_timestamps=TIME_UNIT,
        allow_truncated_timestamps=True,
    )


def range_name(name: str, first_ns: int, last_ns: int) -> str:
    """``part-<name>.r<first_us>-<last_us>.parquet`` for rows received from ``first_ns``
    to ``last_ns`` (inclusive)."""
    return f"part-{name}.r{first_ns // 1000}-{last_ns // 1000}.parquet"


def file_range(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """The (first, last) ``received_at`` of a file's rows in Unix nanoseconds, from its
    name (the last one rounded up to the end of its microsecond); None for a name without
    one (a file of an older version)."""
    found = _RANGE.search(os.fspath(path))
    if found is None:
        return None
    return int(found.group(1)) * 1000, int(found.group(2)) * 1000 + 999


def _overlaps(path: str, start_ns: int | None, end_ns: int | None) -> bool:
    found = file_range(path)
    if found is None:
        return True
    first, last = found
    return (start_ns is None or last >= start_ns) and (end_ns is None or first < end_ns)


def _channel_dirs(root: Path, channels: Collection[str] | None) -> Iterator[Path]:
    if channels is None:
        yield from sorted(p for p in root.glob("channel=*") if p.is_dir())
        return
    for channel in sorted(set(channels)):
        path = root / f"channel={partition_value(channel)}"
        if path.is_dir():
            yield path


def _dates(
    channel_dir: Path,
    dates: Collection[str] | None,
    first_date: str | None,
    last_date: str | None,
) -> list[tuple[str, Path]]:
    out = []
    with os.scandir(channel_dir) as entries:
        for entry in entries:
            if not entry.name.startswith("date=") or not entry.is_dir():
                continue
            date = entry.name.removeprefix("date=")
            if (
                (dates is not None and date not in dates)
                or (first_date is not None and date < first_date)
                or (last_date is not None and date > last_date)
            ):
                continue
            out.append((date, Path(entry.path)))
    return sorted(out)


def data_names(directory: Path) -> list[str]:
    """The names of the Parquet files of one (channel, date) folder, sorted (time order),
    without temporaries and notes; those a compacted file replaces included."""
    with os.scandir(directory) as entries:
        return sorted(
            e.name
            for e in entries
            if e.name.endswith(".parquet") and not e.name.startswith((".", "_"))
        )


def partition_files(directory: Path) -> list[str]:
    """The data files of one (channel, date) folder, sorted; the files a compacted file
    replaces are left out (it holds their rows)."""
    names = data_names(directory)
    gone = replaced_by(directory, names)
    return [str(directory / n) for n in names if n not in gone]


def replaced_by(directory: Path, names: Collection[str]) -> set[str]:
    """The names among ``names`` that a compacted file among them replaces (its metadata
    lists them): a compaction that has renamed its file into place but not yet deleted
    the originals (or crashed between the two) is read as done."""
    compacted = [n for n in names if "-compact-" in n]
    if not compacted:
        return set()
    import pyarrow.parquet as pq

    gone: set[str] = set()
    for name in compacted:
        try:
            metadata = pq.read_schema(directory / name).metadata or {}
            listed = json.loads(metadata.get(COMPACTED_FROM, b"[]"))
        except FileNotFoundError:
            raise
        except (OSError, ValueError):
            continue  # a bad file is named by the reader's checks, not here
        if isinstance(listed, list):
            gone.update(str(n) for n in listed)
    return gone & set(names)


def list_files(
    root: str | os.PathLike[str],
    channels: Collection[str] | None = None,
    dates: Collection[str] | None = None,
    *,
    first_date: str | None = None,
    last_date: str | None = None,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> list[str]:
    """The data files of ``channels`` (default all) on ``dates`` (or from ``first_date``
    to ``last_date``, inclusive) whose rows may fall in ``[start_ns, end_ns)``: only those
    channels' and dates' folders are listed, a file is judged by its name, and none is
    opened (but a compacted file, for the names it replaces)."""
    wanted = None if dates is None else set(dates)
    out: list[str] = []
    for channel_dir in _channel_dirs(Path(root), channels):
        for _date, directory in _dates(channel_dir, wanted, first_date, last_date):
            out.extend(p for p in partition_files(directory) if _overlaps(p, start_ns, end_ns))
    return out


def partition_of(path: str | os.PathLike[str]) -> tuple[str, str]:
    """(channel, date) of a file from its folders (the channel percent-decoded, as
    pyarrow's Hive partitioning reads it)."""
    p = Path(path)
    return (
        unquote(p.parent.parent.name.removeprefix("channel=")),
        p.parent.name.removeprefix("date="),
    )


T = TypeVar("T")
#: how many times a read lists its files again when one it listed is gone meanwhile
LIST_TRIES = 5


def listed_again(read: Callable[[], T], tries: int = LIST_TRIES) -> T:
    """``read()`` (which lists the files it reads), called again when a file it listed is
    deleted before it was read: a compaction renames its file into place and only then
    deletes the files it replaces, so the next listing finds the compacted file."""
    for attempt in range(tries):
        try:
            return read()
        except FileNotFoundError:
            if attempt == tries - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
