"""Conversion of a closed write-ahead segment to Parquet, streamed: the segment is read one
record at a time and its messages are converted in groups of ``GROUP_ROWS``, each group
appended as row groups to the files of its (channel, UTC day), so the memory it takes does
not grow with the segment. Each file is written under a temporary name, fsynced and
renamed into place (always complete), then the segment is deleted, unless it has bad bytes
before its end: it is then kept as ``<name>.wal.corrupt``, with a warning.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit._atomic import disk_errors
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.recording._chunk import CHUNK_MARK, decode_chunk
from toolkit.recording._files import Parts, _date_of, _fsync_path, _table, bucket_rows, widen
from toolkit.recording._layout import parquet_writer, range_name
from toolkit.recording._misses import Misses, count_row_misses, merge
from toolkit.recording._raw import _BATCH_MARK, _decode_batches, tables_from_raw
from toolkit.recording._rows import (
    META_ACCOUNT,
    NS_PER_DAY,
    partition_dir,
    profile_from_metadata,
    profile_metadata,
    recording_schema,
)
from toolkit.recording._wal import (
    MAGIC,
    PROFILE_MARK,
    Row,
    decode_payload,
    decode_profile_record,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    import pyarrow.parquet as pq

#: messages converted at a time: the memory of a conversion is bounded by this, not by the
#: size of the segment
GROUP_ROWS = 32_768
#: the suffix added to a segment kept for its bad bytes (recovery never reads it again)
CORRUPT_SUFFIX = ".corrupt"
_log = logging.getLogger("toolkit.recording")
_HEADER = struct.Struct("<II")
_MAX_RECORD = 256 * 1024 * 1024


@dataclass(slots=True)
class RecordScan:
    """Where reading a segment stopped: ``end``, the end of its last intact record, and
    ``size``, the file's. ``torn``: the bytes after ``end`` (if any) are one record cut
    short by the end of the file, as a crash while appending it leaves; False when they
    are bad bytes (a corrupt record, with or without more bytes after it)."""

    size: int = 0
    end: int = 0
    torn: bool = True

    @property
    def ignored(self) -> int:
        """Bytes after the last intact record."""
        return self.size - self.end


def iter_records(path: str | os.PathLike[str], scan: RecordScan | None = None) -> Iterator[bytes]:
    """The payload of every intact record of a segment file, read one at a time; stops at
    the first torn or corrupt record, since everything after it is suspect. ``scan`` (if
    given) is kept up to date: where the records handed out so far end, and why it
    stopped."""
    scan = RecordScan() if scan is None else scan
    with open(path, "rb") as f:
        scan.size = os.fstat(f.fileno()).st_size
        magic = f.read(len(MAGIC))
        if magic != MAGIC:
            scan.torn = MAGIC.startswith(magic) and scan.size < len(MAGIC)
            return
        scan.end = len(MAGIC)
        while True:
            head = f.read(_HEADER.size)
            if len(head) < _HEADER.size:
                return  # the end, or a header cut short
            length, crc = _HEADER.unpack(head)
            if length > _MAX_RECORD:
                scan.torn = False
                return
            payload = f.read(length)
            if len(payload) < length:
                return  # a record cut short by the end of the file
            if zlib.crc32(payload) != crc:
                scan.torn = False
                return
            yield payload
            scan.end += _HEADER.size + length


class _PartFiles:
    """The Parquet files of one conversion, one per (channel, UTC day), appended to group
    by group; ``commit`` makes each durable and renames it into place."""

    def __init__(self, root: Path, name: str, compression: str, schema: pa.Schema) -> None:
        self.root = root
        self.name = name
        self.compression = compression
        self.schema = schema
        self._open: dict[tuple[str, int], tuple[pq.ParquetWriter, Path, Path]] = {}
        self._dates: dict[int, str] = {}
        #: each file's first and last received_at (ns), for its name
        self._ranges: dict[tuple[str, int], tuple[int, int]] = {}

    @property
    def opened(self) -> bool:
        """Some file was begun (its schema can no longer change)."""
        return bool(self._open)

    def write(self, parts: Parts) -> None:
        import pyarrow as pa

        schema = self.schema
        for key, bucket in parts.items():
            entry = self._open.get(key)
            if entry is None:
                channel, day = key
                directory = partition_dir(
                    self.root, channel, _date_of(day * NS_PER_DAY, self._dates)
                )
                final = directory / f"part-{self.name}.parquet"
                tmp = directory / f".part-{self.name}.parquet.tmp"
                with disk_errors(final):
                    directory.mkdir(parents=True, exist_ok=True)
                    try:
                        writer = parquet_writer(tmp, schema, self.compression)
                    except BaseException:  # it may have made the file before failing
                        with contextlib.suppress(FileNotFoundError):
                            tmp.unlink()
                        raise
                entry = self._open[key] = (writer, tmp, final)
            writer = entry[0]
            with disk_errors(entry[2]):
                for part in bucket:
                    if isinstance(part, pa.Table):
                        if part.schema.metadata != schema.metadata:
                            part = part.replace_schema_metadata(schema.metadata)
                    elif part:
                        part = _table(part, schema)
                    else:
                        continue
                    writer.write_table(part)
                    span = widen(self._ranges.get(key), part)
                    if span is not None:
                        self._ranges[key] = span

    def commit(self) -> list[Path]:
        files = []
        for key, (writer, tmp, named) in self._open.items():
            span = self._ranges.get(key)
            final = named if span is None else named.with_name(range_name(self.name, *span))
            with disk_errors(named):
                writer.close()
                _fsync_path(tmp)
                os.replace(tmp, final)
                # converted before (a crash before the segment was deleted) by a version
                # that named files otherwise: same rows, so one file only
                for other in named.parent.glob(f"part-{self.name}.*parquet"):
                    if other != final:
                        other.unlink(missing_ok=True)
            _fsync_path(final.parent)
            files.append(final)
        self._open.clear()
        self._ranges.clear()
        return files

    def abort(self) -> None:
        for writer, tmp, _final in self._open.values():
            with contextlib.suppress(Exception):
                writer.close()
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        self._open.clear()
        self._ranges.clear()


def convert_segment(
    root: str | os.PathLike[str],
    segment: str | os.PathLike[str],
    *,
    compression: str = "zstd",
    profile: ServiceProfile = DEFAULT_PROFILE,
    misses: Misses | None = None,
) -> list[Path]:
    """Turn a closed (or crash-torn) WAL segment into Parquet files (columns extracted
    under the profile the segment names in its first record, else ``profile``; the files'
    metadata names the one used), then delete it. Same segment, same
    file names: converting it twice (after a crash mid-way) overwrites, never duplicates.
    ``misses``: count there the messages that lack a field the profile maps, per
    ``payloads.*`` setting (left as they were when the conversion fails).

    The rows before a bad record are converted; a segment with bad bytes (not just a last
    record cut short by a crash) is then kept as ``<name>.wal.corrupt``, not deleted, and a
    warning gives the number of bytes not converted. So is a segment with messages that
    fail to convert (what they hold, not the disk): every other message is converted, and
    the warning names the error. Only an ``OSError`` (or running out of memory) leaves the
    segment as it was, for the next try, and is raised."""
    path = Path(segment)
    schema = recording_schema().with_metadata(profile_metadata(profile))
    files = _PartFiles(Path(root), path.stem, compression, schema)
    items: list[Row | pa.RecordBatch] = []
    held = 0
    found: Misses = {}
    failed = _Failed()

    def build(group: list[Row | pa.RecordBatch]) -> Parts:
        """The tables of a group of rows and raw batches; its misses go to ``found`` only
        when it converts."""
        import pyarrow as pa

        counted: Misses = {}
        rows = [item for item in group if isinstance(item, Row)]
        batches = [item for item in group if not isinstance(item, Row)]
        parts: Parts = {}
        if rows:
            count_row_misses(rows, profile, counted)
            for key, bucket in bucket_rows(rows).items():
                parts.setdefault(key, []).append(_table(bucket, files.schema, counted))
        if batches:
            for key, found_parts in tables_from_raw(batches, profile, counted).items():
                parts.setdefault(key, []).extend(
                    part if isinstance(part, pa.Table) else _table(part, files.schema, counted)
                    for part in found_parts
                )
        merge(found, counted)
        return parts

    def convert(group: list[Row | pa.RecordBatch]) -> None:
        """Convert a group; when it fails for what it holds, its halves, down to the
        messages that fail, which are left out (the segment is then kept)."""
        try:
            parts = build(group)
        except (OSError, MemoryError):
            raise
        except Exception as exc:  # what the messages hold, not the disk
            halves = _halves(group)
            if halves is None:
                failed.note(group, exc)
                return
            for half in halves:
                convert(half)
            return
        files.write(parts)

    def flush() -> None:
        nonlocal items, held
        if items:
            convert(items)
        items, held = [], 0

    scan = RecordScan()
    try:
        for payload in iter_records(path, scan):
            head = payload[: len(CHUNK_MARK)]
            try:
                if head == PROFILE_MARK:
                    # the profile the segment was recorded under (its first record)
                    if items or files.opened:
                        raise ValueError("a profile record after the segment's first rows")
                    named = decode_profile_record(payload)
                    profile = _segment_profile(named, profile)
                    # the segment's own metadata (its profile, the account it was
                    # recorded with), as its recorder would have written it
                    files.schema = recording_schema().with_metadata(
                        {**profile_metadata(profile), **_extra(named)}
                    )
                    continue
                if head == CHUNK_MARK:
                    decoded: list[Any] = [decode_chunk(payload)]
                elif head == _BATCH_MARK:
                    decoded = list(_decode_batches(memoryview(payload)))
                else:
                    decoded = [decode_payload(payload)]
            except ValueError:  # intact but malformed: as bad as a failed checksum
                scan.torn = False
                break
            items.extend(decoded)
            held += sum(1 if isinstance(d, Row) else d.num_rows for d in decoded)
            if held >= GROUP_ROWS:
                flush()
        flush()
        written = files.commit()
    except BaseException as exc:
        files.abort()
        if isinstance(exc, Exception) and not isinstance(exc, OSError | MemoryError):
            # the last resort: never a segment that fails every start of a recorder
            _keep(path, f"could not be converted ({type(exc).__name__}: {exc})")
            return []
        raise
    _dispose(path, scan, failed)
    _release_memory()
    if misses is not None:
        merge(misses, found)
    return written


@dataclass(slots=True)
class _Failed:
    """The messages of a segment that failed to convert, and the first error."""

    messages: int = 0
    error: Exception | None = None

    def note(self, group: list[Row | pa.RecordBatch], exc: Exception) -> None:
        self.messages += sum(1 if isinstance(i, Row) else i.num_rows for i in group)
        if self.error is None:
            self.error = exc


def _halves(
    group: list[Row | pa.RecordBatch],
) -> tuple[list[Row | pa.RecordBatch], list[Row | pa.RecordBatch]] | None:
    """``group`` cut in two (a lone raw batch cut between its messages), or None when it
    is one message."""
    if len(group) > 1:
        middle = len(group) // 2
        return group[:middle], group[middle:]
    if group and not isinstance(group[0], Row) and group[0].num_rows > 1:
        batch = group[0]
        middle = batch.num_rows // 2
        return [batch.slice(0, middle)], [batch.slice(middle)]
    return None


def _segment_profile(metadata: dict[bytes, bytes], fallback: ServiceProfile) -> ServiceProfile:
    """The profile a segment names: ``fallback`` itself when it maps the payloads the same
    way, so a recorder's own segments keep its profile whole."""
    named = profile_from_metadata(metadata)
    if named is None:
        raise ValueError("a profile record without the profile's name")
    if profile_metadata(named) == profile_metadata(fallback):
        return fallback
    _log.info(
        "write-ahead segment recorded under profile %r, not %r: converted under %r",
        named.name,
        fallback.name,
        named.name,
    )
    return named


def _extra(metadata: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """What a segment's metadata says besides its profile (the account it was recorded
    with)."""
    return {k: v for k, v in metadata.items() if k == META_ACCOUNT}


def _dispose(path: Path, scan: RecordScan, failed: _Failed) -> None:
    """Delete a converted segment; keep one with bad bytes or messages that failed to
    convert (renamed, never converted again), warning what was not converted."""
    reasons = []
    if scan.ignored and not scan.torn:
        reasons.append(
            f"has {scan.ignored} bytes that are not intact records (from byte {scan.end} of "
            f"{scan.size}): the rows before them are converted"
        )
    if failed.messages:
        error = f"{type(failed.error).__name__}: {failed.error}"
        reasons.append(
            f"has {failed.messages} messages that could not be converted ({error}): every "
            "other message is converted"
        )
    if reasons:
        _keep(path, "; ".join(reasons))
        return
    if scan.ignored:
        _log.warning(
            "write-ahead segment %s ends with %d bytes of a record cut short (a crash, or a "
            "failed write that could not be undone): ignored",
            path,
            scan.ignored,
        )
    path.unlink()


def _keep(path: Path, reason: str) -> None:
    """Keep a segment as ``<name>.wal.corrupt`` (recovery never reads it again), warning
    why."""
    kept = path.with_name(path.name + CORRUPT_SUFFIX)
    os.replace(path, kept)
    _log.warning("write-ahead segment %s %s, the segment is kept as %s", path, reason, kept.name)


def _release_memory() -> None:
    """Hand the memory of a finished conversion back to the system: Arrow's allocator
    keeps freed pages for reuse otherwise, and the resident size stays at its peak."""
    import pyarrow as pa

    with contextlib.suppress(Exception):
        pa.default_memory_pool().release_unused()
