"""Parquet output of a recording: rows and Arrow tables grouped by (channel, UTC day), each
file written under a temporary name, fsynced, then renamed into place (always complete).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from toolkit._atomic import disk_errors
from toolkit.recording._layout import parquet_writer, range_name
from toolkit.recording._misses import Misses, escape_surrogates, valid_text
from toolkit.recording._rows import NS_PER_DAY, partition_dir, recording_schema
from toolkit.recording._wal import Row

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


_ROW_GROUP = 65_536


# ------------------------------------------------------------------ Parquet output


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _date_of(ns: int, cache: dict[int, str]) -> str:
    day = ns // NS_PER_DAY
    date = cache.get(day)
    if date is None:
        date = datetime.fromtimestamp(day * 86_400, UTC).strftime("%Y-%m-%d")
        cache[day] = date
    return date


def _table(rows: Sequence[Row], schema: pa.Schema, misses: Misses | None = None) -> pa.Table:
    """The table of ``rows``; a text that is not valid UTF-8 (a lone surrogate) is made
    valid (``valid_text``, counted in ``misses``) rather than failing the whole table."""
    import pyarrow as pa

    # zip(*rows) transposes at C speed; pa.array converts each column in C
    columns = list(zip(*rows, strict=True))
    arrays = []
    for col, f in zip(columns, schema, strict=True):
        try:
            arrays.append(pa.array(col, type=f.type))
        except UnicodeEncodeError:  # only then a Python pass over the column
            arrays.append(pa.array(valid_text(f.name, col, misses), type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _write_file(
    parts: Sequence[Sequence[Row] | pa.Table],
    tmp: Path,
    final: Path,
    schema: pa.Schema,
    compression: str,
    name: str | None = None,
) -> Path:
    """Write ``parts`` to ``tmp``, fsync, rename to ``final`` (named for the range of its
    rows, :func:`~toolkit.recording._layout.range_name`, when ``name`` is given)."""

    import pyarrow as pa

    span: tuple[int, int] | None = None
    with disk_errors(final):
        tmp.parent.mkdir(parents=True, exist_ok=True)
        try:
            with parquet_writer(tmp, schema, compression) as writer:
                for part in parts:
                    if isinstance(part, pa.Table):
                        if part.schema.metadata != schema.metadata:
                            part = part.replace_schema_metadata(schema.metadata)
                        writer.write_table(part, row_group_size=_ROW_GROUP)
                        span = widen(span, part)
                        continue
                    for i in range(0, len(part), _ROW_GROUP):
                        table = _table(part[i : i + _ROW_GROUP], schema)
                        writer.write_table(table)
                        span = widen(span, table)
            _fsync_path(tmp)
            if span is not None and name is not None:
                final = final.with_name(range_name(name, *span))
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise
    _fsync_path(final.parent)
    return final


def widen(span: tuple[int, int] | None, table: pa.Table) -> tuple[int, int] | None:
    """``span`` (first, last received_at in ns) widened to the rows of ``table``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not table.num_rows:
        return span
    found = pc.min_max(table.column("received_at").cast(pa.int64()))
    low, high = found["min"].as_py(), found["max"].as_py()
    if low is None or high is None:
        return span
    return (low, high) if span is None else (min(span[0], low), max(span[1], high))


Buckets = dict[tuple[str, int], list[Row]]


def bucket_rows(rows: Iterable[Row], buckets: Buckets | None = None) -> Buckets:
    """Rows grouped by (channel, UTC day): one Parquet file each. A channel name that is
    not valid text (a lone surrogate) has it written as its JSON escape, in the rows and
    the partition alike."""
    out: Buckets = {} if buckets is None else buckets
    for row in rows:
        key = (row[3], row[0] // NS_PER_DAY)
        bucket = out.get(key)
        if bucket is None:
            out[key] = bucket = []
        bucket.append(row)
    # checked once per bucket, not per row
    for key in [k for k in out if not k[0].isascii()]:
        channel = escape_surrogates(key[0])
        if channel != key[0]:
            moved = [row._replace(channel=channel) for row in out.pop(key)]
            out.setdefault((channel, key[1]), []).extend(moved)
    return out


def write_buckets(
    root: str | os.PathLike[str], buckets: Buckets, name: str, *, compression: str = "zstd"
) -> list[Path]:
    """Write each bucket as ``part-<name>.parquet`` in its (channel, date) partition, each
    complete before it appears (temporary name + ``os.replace``). Same name, same files:
    converting a segment twice (after a crash mid-way) overwrites rather than duplicates.
    No per-row Python runs here, so a worker thread doing it does not starve the loop."""
    return write_parts(
        root, {key: [rows] for key, rows in buckets.items()}, name, compression=compression
    )


Parts = dict[tuple[str, int], list["Sequence[Row] | pa.Table"]]


def write_parts(
    root: str | os.PathLike[str],
    parts: Parts,
    name: str,
    *,
    compression: str = "zstd",
    metadata: dict[bytes, bytes] | None = None,
) -> list[Path]:
    """``write_buckets`` for rows and Arrow tables mixed: one file per (channel, day).
    ``metadata`` goes into each file's key-value metadata (the profile it was read under)."""
    schema = recording_schema()
    if metadata:
        schema = schema.with_metadata(metadata)
    dates: dict[int, str] = {}
    files = []
    for (channel, day), bucket in parts.items():
        directory = partition_dir(root, channel, _date_of(day * NS_PER_DAY, dates))
        files.append(
            _write_file(
                bucket,
                directory / f".part-{name}.parquet.tmp",
                directory / f"part-{name}.parquet",
                schema,
                compression,
                name,
            )
        )
    return files


def write_rows(
    root: str | os.PathLike[str], rows: Iterable[Row], name: str, *, compression: str = "zstd"
) -> list[Path]:
    """Write rows as ``part-<name>.parquet`` files, one per (channel, date)."""
    return write_buckets(root, bucket_rows(rows), name, compression=compression)
