"""Compaction of a recording's closed days: the many small files a recorder leaves (one per
rotation) merged into few large ones, so a scan of a year opens hundreds of files, not
hundreds of thousands.

A run takes whole files, in their time order, into files of up to ``max_rows`` rows, each
named ``part-<first ns>-compact-<n>.r<first us>-<last us>.parquet`` and listing in its
metadata (``toolkit.compacted_from``) the files it replaces. Its rows are sorted by symbol,
then time, each symbol in row groups of its own (``_bysymbol``): a scan asking for some
pairs reads only their row groups, by the Parquet statistics alone. Each is written under a
temporary name and fsynced, renamed into place, the folder fsynced; only then are the files
it replaces deleted (the folder fsynced again). So:

- a crash loses nothing: before the rename the old files are whole and the temporary is
  swept on the next run; after it, the compacted file holds every row and the next run
  deletes the old files it names (readers of the toolkit already leave them out);
- no row is ever read twice nor missing by the toolkit's readers: a listing that finds a
  compacted file leaves out the files it names, and a reader whose listing predates the
  compaction and finds a file deleted lists again (``read_table``, ``replay``);
- readers that list files themselves (DuckDB's glob, Spark) see the old files and the
  new together between the rename and the deletions (milliseconds), or until the next
  run after a crash between the two: compact when they are not reading that day.

A day is closed once it is over (UTC) and no write-ahead segment opened before its end
(plus :data:`GRACE_NS`) is still waiting to be converted: a recorder running or crashed
may still add files to it until then.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from toolkit._atomic import disk_errors
from toolkit.errors import InvalidRequest
from toolkit.recording._badfiles import file_problem
from toolkit.recording._bysymbol import Counts, symbol_counts, write_by_symbol
from toolkit.recording._files import _fsync_path, widen
from toolkit.recording._layout import (
    COMPACTED_FROM,
    data_names,
    parquet_writer,
    range_name,
    replaced_by,
)
from toolkit.recording._read import _channels, recording_root
from toolkit.recording._rows import NS_PER_DAY, partition_value, recording_schema
from toolkit.recording._wal import SUFFIX

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["CompactStats", "closed_work", "compact_closed", "compact_recording"]

_log = logging.getLogger("toolkit.recording")
#: rows of a compacted file at most (a file is never split: one larger stays whole)
MAX_ROWS = 4_000_000
#: a segment opened this long after a day's end may still hold rows of that day
GRACE_NS = 10 * 60 * 10**9
_COMPACT = "-compact-"


@dataclass
class CompactStats:
    """What a compaction did: partitions compacted, files before and after in them, the
    rows moved, the partitions left as they were for a damaged or foreign file, and
    ``closed_before``: the first date (``YYYY-MM-DD``) that was not closed yet, every
    day before it done ("" when a recorder's stop ended the run before its end)."""

    partitions: int = 0
    files_before: int = 0
    files_after: int = 0
    rows: int = 0
    skipped: list[str] = field(default_factory=list)
    closed_before: str = ""

    def line(self) -> str:
        text = (
            f"compacted {self.partitions} day partition(s): {self.files_before:,} files "
            f"into {self.files_after:,} ({self.rows:,} rows)"
        )
        if self.skipped:
            text += f"; {len(self.skipped)} left as they were (a damaged file: {self.skipped[0]})"
        return text


def compact_recording(
    root: str | os.PathLike[str],
    channel: str | Iterable[str] | None = None,
    *,
    max_rows: int = MAX_ROWS,
    compression: str = "zstd",
    clock_ns: Callable[[], int] = time.time_ns,
) -> CompactStats:
    """Merge the files of each closed day of a recording into few large ones, sorted by
    symbol then time, in row groups that a read by symbol (``symbols=`` of
    :func:`scan_recording`, :func:`read_recording`, :func:`replay`) skips when they hold
    other pairs.

    Crash-safe and idempotent: run it again after a crash, or on a recording already
    compacted (it then does nothing). Never loses or duplicates a row; the toolkit's
    readers see the old files or the new, never both (module docstring: the order of
    renames and deletions, and what other engines see).

    Parameters
    ----------
    root : str or os.PathLike
        The recording's folder.
    channel : str or iterable of str, optional
        Only these channels (default: every one, ``_session`` included).
    max_rows : int
        Rows of a compacted file at most (a file is never split).
    compression : str
        Parquet compression of the files written.
    clock_ns : callable
        Unix nanoseconds now, to tell which days are over (tests inject it).

    Returns
    -------
    CompactStats
        Partitions compacted, files before and after, rows moved, partitions skipped.

    Raises
    ------
    InvalidRequest
        ``root`` is no recording; ``max_rows`` not a whole number > 0.
    toolkit.errors.WriteError
        The disk refused a write (full, read-only): the files of the partition being
        compacted are as they were.
    """
    path = recording_root(root)
    if not isinstance(max_rows, int) or isinstance(max_rows, bool) or max_rows <= 0:
        raise InvalidRequest(f"max_rows must be a whole number > 0; got {max_rows!r}")
    return compact_closed(
        path, _channels(channel), max_rows=max_rows, compression=compression, now_ns=clock_ns()
    )


def compact_closed(
    path: Path,
    names: list[str] | None,
    *,
    max_rows: int = MAX_ROWS,
    compression: str = "zstd",
    now_ns: int,
    stop: Callable[[], bool] | None = None,
) -> CompactStats:
    """``compact_recording`` on checked arguments; ``stop()`` is asked before each
    partition (a recorder that stops ends its compaction there: each partition is whole)."""
    stats = CompactStats()
    with _locked(path):
        closed_before = _closed_before(path, now_ns)
        for directory in _partitions(path, names, closed_before):
            if stop is not None and stop():
                return stats
            _sweep(directory)
            files = _finish(directory)
            runs = _runs(directory, files, max_rows, stats)
            if not runs:
                continue
            stats.partitions += 1
            stats.files_before += len(files)
            kept = len(files) - sum(len(run) for run in runs)
            for run in runs:
                stats.rows += _merge(directory, run, compression)
                _delete(directory, run)
            stats.files_after += kept + len(runs)
    stats.closed_before = closed_before
    return stats


def closed_work(path: Path, now_ns: int) -> tuple[bool, str]:
    """(whether a closed day of the recording has files to compact or a crash's temporary
    to sweep, the first date not closed), from folder listings alone: a recorder asks it
    before starting a compaction process for nothing."""
    closed_before = _closed_before(path, now_ns)
    for directory in _partitions(path, None, closed_before):
        if len(data_names(directory)) > 1 or any(directory.glob(f".part{_COMPACT}*.tmp")):
            return True, closed_before
    return False, closed_before


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One compaction at a time per recording (``ROOT/_wal/compact.lock``; a recorder
    holds another lock and may run meanwhile)."""
    import fcntl

    lock = root / "_wal" / "compact.lock"
    with disk_errors(lock):
        lock.parent.mkdir(exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise InvalidRequest(f"another compaction is running on {root}") from None
        yield
    finally:
        os.close(fd)


def _closed_before(root: Path, now_ns: int) -> str:
    """The first date not closed (``YYYY-MM-DD``): today, or the day of the oldest
    segment still waiting (opened before a day's end plus the grace)."""
    limit = now_ns
    wal = root / "_wal"
    if wal.is_dir():
        for segment in wal.glob(f"*{SUFFIX}"):
            opened = segment.name.partition("-")[0]
            limit = min(limit, int(opened) - GRACE_NS if opened.isdigit() else 0)
    return _day(limit)


def _day(ns: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ns // NS_PER_DAY * 86_400, UTC).strftime("%Y-%m-%d")


def _partitions(root: Path, names: list[str] | None, closed_before: str) -> Iterator[Path]:
    if names is None:
        channels = sorted(p for p in root.glob("channel=*") if p.is_dir())
    else:
        channels = [root / f"channel={partition_value(n)}" for n in sorted(set(names))]
    for channel_dir in channels:
        if not channel_dir.is_dir():
            continue
        for directory in sorted(channel_dir.glob("date=*")):
            if directory.is_dir() and directory.name.removeprefix("date=") < closed_before:
                yield directory


def _sweep(directory: Path) -> None:
    """Delete the temporaries of a compaction a crash interrupted."""
    for tmp in directory.glob(f".part{_COMPACT}*.tmp"):
        tmp.unlink(missing_ok=True)


def _finish(directory: Path) -> list[str]:
    """The data files of a partition, once the files a compacted one already replaces
    (a run that crashed before its deletions) are deleted."""
    names = data_names(directory)
    gone = replaced_by(directory, names)
    if gone:
        _delete(directory, sorted(gone))
    return [n for n in names if n not in gone]


def _runs(directory: Path, files: list[str], max_rows: int, stats: CompactStats) -> list[list[str]]:
    """The files to merge, in runs of consecutive files (time order) with the same
    metadata and up to ``max_rows`` rows; a compacted file of half that or more, and a
    run of one file, stay as they are. Nothing when a file is damaged or foreign."""
    import pyarrow.parquet as pq

    if len(files) < 2:
        return []
    sizes: list[tuple[str, int, bytes]] = []
    for name in files:
        problem = file_problem(str(directory / name))
        if problem is not None:
            _log.warning("not compacting %s: %s %s", directory, name, problem)
            stats.skipped.append(str(directory / name))
            return []
        meta = pq.read_metadata(directory / name)
        sizes.append((name, meta.num_rows, _key(meta.metadata)))
    runs: list[list[str]] = []
    run: list[str] = []
    rows = 0
    key = b""
    for name, count, file_key in sizes:
        full = _COMPACT in name and count * 2 >= max_rows
        if run and (full or file_key != key or rows + count > max_rows):
            runs.append(run)
            run, rows = [], 0
        if full:
            continue
        run.append(name)
        rows += count
        key = file_key
    if run:
        runs.append(run)
    return [r for r in runs if len(r) > 1]


def _key(metadata: dict[bytes, bytes] | None) -> bytes:
    """What a file's metadata says besides the compaction (its profile and account):
    files are merged only with files that say the same."""
    own = {k: v for k, v in (metadata or {}).items() if k not in (COMPACTED_FROM, b"ARROW:schema")}
    return json.dumps({k.decode(): v.decode() for k, v in sorted(own.items())}).encode()


def _merge(directory: Path, run: list[str], compression: str) -> int:
    """Write the rows of ``run`` into one compacted file (temporary, fsync, rename, folder
    fsync), sorted by symbol then time in row groups that statistics prune by symbol
    (:mod:`toolkit.recording._bysymbol`); its rows."""
    import pyarrow.parquet as pq

    first = pq.read_schema(directory / run[0])
    own = {
        k: v
        for k, v in (first.metadata or {}).items()
        if k not in (COMPACTED_FROM, b"ARROW:schema")
    }
    schema = recording_schema().with_metadata({**own, COMPACTED_FROM: json.dumps(run).encode()})
    tmp = directory / f".part{_COMPACT}{os.getpid()}.tmp"
    span: tuple[int, int] | None = None
    with disk_errors(tmp.with_name(f"part{_COMPACT}(new).parquet")):
        try:
            with parquet_writer(tmp, schema, compression) as writer:

                def write(table: pa.Table) -> None:
                    nonlocal span
                    writer.write_table(table.replace_schema_metadata(schema.metadata))
                    span = widen(span, table)

                rows = write_by_symbol(
                    write,
                    lambda: _tables(directory, run, schema),
                    _symbol_counts(directory, run),
                    lambda i: tmp.with_name(f"{tmp.stem}.g{i}.tmp"),
                )
            _fsync_path(tmp)
            first_ns = 0 if span is None else span[0]
            name = f"{first_ns:020d}{_COMPACT}{time.time_ns():020d}"
            final = directory / (
                range_name(name, *span) if span is not None else f"part-{name}.parquet"
            )
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise
        _fsync_path(directory)
    return rows


def _symbol_counts(directory: Path, run: list[str]) -> Counts:
    """The rows of each symbol in ``run`` (its ``symbol`` columns only; a file without the
    column counts as rows without symbol)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def columns() -> Iterator[pa.Array | pa.ChunkedArray]:
        for name in run:
            source = pq.ParquetFile(directory / name)
            if "symbol" in source.schema_arrow.names:
                yield source.read(columns=["symbol"]).column("symbol")
            else:
                yield pa.nulls(source.metadata.num_rows, pa.string())

    return symbol_counts(columns())


def _tables(directory: Path, run: list[str], schema: pa.Schema) -> Iterator[pa.Table]:
    """The rows of each file of ``run`` in order, a row group at a time, cast to the
    schema (files of the old nanosecond unit, or older column types)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name in run:
        source = pq.ParquetFile(directory / name)
        for i in range(source.num_row_groups):
            table = source.read_row_group(i)
            missing = [f for f in schema if f.name not in table.column_names]
            for f in missing:
                table = table.append_column(f, pa.nulls(table.num_rows, f.type))
            yield table.select(schema.names).cast(schema)


def _delete(directory: Path, names: list[str]) -> None:
    """Delete the files a compacted file replaces (it is in place: nothing is lost)."""
    for name in names:
        (directory / name).unlink(missing_ok=True)
    _fsync_path(directory)
