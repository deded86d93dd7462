"""The store on disk: Parquet part files per month of ``createdAt``
(``ROOT/month=YYYY-MM/part-*.parquet``; each order in exactly one file), each written or
replaced whole through ``toolkit._atomic``; the state file ``ROOT/_store.json`` (written
last by a sync); the plan of a compaction under way; the writer's lock file."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import logging
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit._atomic import atomic_write, atomic_write_text, fsync_path
from toolkit.errors import InvalidRequest, ToolkitError
from toolkit.protocol import LIVE_LIMIT_STATUSES as LIVE_LIMIT_STATUSES  # the sync's filter
from toolkit.protocol import TERMINAL
from toolkit.store._state import read_state, write_state

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    import pyarrow.parquet as pq

logger = logging.getLogger("toolkit.store")

PART_GLOB = "part-*.parquet"
STATE_NAME = "_store.json"
PROFILE_NAME = "_profile.toml"
LOCK_NAME = ".lock"
#: the plan of a compaction (its month, merged file and old parts), there until it is done
COMPACTION_NAME = "_compaction.json"
#: how many times a read lists the files again when a writer changed them under it
SNAPSHOT_TRIES = 10

#: statuses after which an order never changes again (protocol.TERMINAL)
FINAL_STATUSES = TERMINAL

#: where an order came from, in the ``_source`` column (first discovery)
SOURCES = ("listing", "recording", "ids", "live")


@dataclass(frozen=True)
class Snapshot:
    """The part files a read takes, each held open (:meth:`StoreFiles.snapshot`)."""

    parts: list[tuple[Path, pa.NativeFile]]
    #: a compaction's plan was there: an order may be in two of the files
    merging: bool


class StoreLocked(ToolkitError):
    """Another writer (a sync in this or another process) holds the store's lock."""


@dataclass(frozen=True)
class Entry:
    """What the store knows of one order without reading its body."""

    status: str
    updated_ms: int | None
    created_ms: int
    type: str
    source: str
    #: the part file that holds the order
    file: str = ""

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES


def month_of(created_ms: int) -> str:
    """The partition (``YYYY-MM``, UTC) of an order created at ``created_ms``."""
    return datetime.fromtimestamp(created_ms / 1000, UTC).strftime("%Y-%m")


def schema() -> pa.Schema:
    """The columns of every month file (the partition column ``month`` is the folder)."""
    import pyarrow as pa

    ts = pa.timestamp("ms", tz="UTC")
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("type", pa.string()),
            pa.field("symbol", pa.string()),
            pa.field("status", pa.string()),
            pa.field("createdAt", ts),
            pa.field("updatedAt", ts),
            pa.field("_source", pa.string()),
            pa.field("_synced_at", ts),
            pa.field("body", pa.string()),
        ]
    )


class StoreFiles:
    """The files of one store root."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        if not isinstance(root, str | os.PathLike) or not str(os.fspath(root)).strip():
            # an empty path would be the current folder, filled without a word
            raise InvalidRequest(f"an order store needs a folder path, not {root!r}")
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise InvalidRequest(f"order store {self.root} is a file, not a folder")

    # -- layout ---------------------------------------------------------------------------

    def month_dir(self, month: str) -> Path:
        return self.root / f"month={month}"

    def month_files(self, months: Iterable[str] | None = None) -> list[Path]:
        """The part files present (of ``months`` when given), oldest month first."""
        if months is not None:
            return [
                p for m in sorted(set(months)) for p in sorted(self.month_dir(m).glob(PART_GLOB))
            ]
        return sorted(self.root.glob(f"month=*/{PART_GLOB}"))

    def months(self) -> list[str]:
        return sorted(p.name.removeprefix("month=") for p in self.root.glob("month=*"))

    def clean_temporaries(self) -> int:
        """Remove what an interrupted write left (hidden ``.*.tmp`` files): the files they
        were meant to replace are still whole. Returns how many were removed."""
        removed = 0
        for tmp in [*self.root.glob(".*.tmp"), *self.root.glob("month=*/.*.tmp")]:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                removed += 1
        return removed

    # -- reading --------------------------------------------------------------------------

    def read(
        self,
        columns: Sequence[str] | None = None,
        months: Iterable[str] | None = None,
        filter: Any = None,
    ) -> pa.Table:
        """The rows of the store (of ``months``), ``columns`` only, ``filter`` applied: one
        consistent set of part files (:meth:`snapshot`), each order once, also while a
        sync writes or compacts the store."""
        import pyarrow.dataset as ds

        wanted = list(columns) if columns is not None else schema().names
        read = list(dict.fromkeys(["id", *wanted]))
        with self.snapshot(months) as snap:
            parts = snap.parts
            if not parts:
                return schema().empty_table().select(wanted)
            for path, handle in parts:
                self.part_metadata(path, handle)
            fmt = ds.ParquetFileFormat()
            dataset = ds.FileSystemDataset(
                [fmt.make_fragment(handle) for _, handle in parts], schema=schema(), format=fmt
            )
            try:
                table = dataset.to_table(columns=read, filter=filter)
            except (OSError, ValueError) as exc:
                if not _damaged(exc):
                    raise
                # the footers read, a page did not: name the file
                for path, handle in parts:
                    self.read_part(path, read, handle)
                raise InvalidRequest(f"order store {self.root} could not be read: {exc}") from exc
        return _once(table).select(wanted)

    @contextlib.contextmanager
    def snapshot(self, months: Iterable[str] | None = None) -> Iterator[Snapshot]:
        """The part files (of ``months``) as one consistent set, each held open for the
        block (oldest month, then oldest file, first).

        A sync replaces files by renames and a compaction removes a month's old parts once
        their merged file is in place; an open file stays readable after either. So the
        files are listed, opened, and listed again: a file gone before it was opened, or a
        listing that changed meanwhile, starts again. The set then holds each order at
        least once; an order in both a merged file and an old part not removed yet (the
        only way to be twice) is read once by :meth:`read`, the merged (newer) copy. Such
        a pair is in the set only while a compaction's plan is there, looked at between
        the two listings: ``Snapshot.merging`` says it was."""
        import pyarrow as pa

        months = None if months is None else sorted(set(months))
        listed = self.month_files(months)
        for attempt in range(1, SNAPSHOT_TRIES + 1):
            _step("snapshot listed")
            opened: list[tuple[Path, pa.NativeFile]] = []
            try:
                for path in listed:
                    opened.append((path, pa.OSFile(str(path))))
                # a merged file and an old part of it both listed twice were both there
                # from the first listing to the second, and so was the plan
                merging = (self.root / COMPACTION_NAME).exists()
                again = self.month_files(months)
                if again == listed:
                    break
                listed = again
            except FileNotFoundError:
                listed = self.month_files(months)
            for _, handle in opened:
                handle.close()
            if attempt == SNAPSHOT_TRIES:
                raise ToolkitError(
                    f"order store {self.root} changed under this read {SNAPSHOT_TRIES} times "
                    "in a row (syncs writing it): read it again"
                )
        try:
            yield Snapshot(opened, merging)
        finally:
            for _, handle in opened:
                handle.close()

    def index(self) -> dict[str, Entry]:
        """id -> :class:`Entry` of every order in the store."""
        import pyarrow as pa

        out: dict[str, Entry] = {}
        wanted = ["id", "status", "updatedAt", "createdAt", "type", "_source"]
        for path in self.month_files():
            table = self.read_part(path, wanted)
            cols = {
                name: (
                    table.column(name).cast(pa.int64())
                    if name in ("updatedAt", "createdAt")
                    else table.column(name)
                ).to_pylist()
                for name in wanted
            }
            name = str(path)
            for oid, status, updated, created, kind, source in zip(
                *(cols[c] for c in wanted), strict=True
            ):
                out[oid] = Entry(
                    status=status or "",
                    updated_ms=_ms(updated),
                    created_ms=_ms(created) or 0,
                    type=kind or "",
                    source=source or "",
                    file=name,
                )
        return out

    def count(self) -> int:
        """Orders in the store, from the footers of a :meth:`snapshot`; while a
        compaction is under way or was interrupted, from the ids (:meth:`read`), so each
        counts once. (Files an older toolkit's interrupted compaction left without a plan
        count twice until a sync repairs them.)"""
        with self.snapshot() as snap:
            if not snap.merging:
                return sum(self.part_metadata(path, handle).num_rows for path, handle in snap.parts)
        return int(self.read(["id"]).num_rows)

    def part_metadata(self, path: Path, handle: pa.NativeFile | None = None) -> pq.FileMetaData:
        """The footer of the part file ``path`` (read from ``handle`` when it is open),
        checked to hold the store's columns; InvalidRequest naming the file when it is
        damaged or another dataset's file."""
        import pyarrow.parquet as pq

        try:
            metadata = pq.read_metadata(path if handle is None else handle)
            found = metadata.schema.to_arrow_schema()
        except (OSError, ValueError) as exc:
            if not _damaged(exc):
                raise
            raise self._not_a_part(path, f"unreadable: {exc}") from None
        extra = sorted(set(found.names) - set(schema().names))
        if extra:
            raise self._not_a_part(path, f"columns the store does not write: {', '.join(extra)}")
        for want in schema():
            index = found.get_field_index(want.name)
            if index < 0:
                raise self._not_a_part(path, f"no {want.name!r} column")
            if found.field(index).type != want.type:
                raise self._not_a_part(
                    path, f"column {want.name!r} is {found.field(index).type}, not {want.type}"
                )
        return metadata

    def read_part(
        self,
        path: Path,
        columns: Sequence[str] | None = None,
        handle: pa.NativeFile | None = None,
    ) -> pa.Table:
        """The rows of one part file (``columns`` only; read from ``handle`` when it is
        open), checked like :meth:`part_metadata`."""
        import pyarrow.parquet as pq

        self.part_metadata(path, handle)
        try:
            return pq.read_table(
                path if handle is None else handle, columns=columns, schema=schema()
            )
        except (OSError, ValueError) as exc:
            if not _damaged(exc):
                raise
            raise self._not_a_part(path, f"unreadable: {exc}") from None

    def _not_a_part(self, path: Path, why: str) -> InvalidRequest:
        return InvalidRequest(
            f"order store file {path} is not a readable part of this store ({why}); nothing "
            f"was changed: move it out of {path.parent}, then sync with full_listing=True "
            "(toolkit sync --full-listing) to fetch again the listed orders it may have held"
        )

    # -- writing --------------------------------------------------------------------------

    def add_part(self, month: str, rows: pa.Table) -> Path:
        """Write ``rows`` (orders the store does not hold yet) as a new part file of
        ``month``, whole or not at all; returns its path."""
        directory = self.month_dir(month)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"part-{time.time_ns()}-{uuid.uuid4().hex[:8]}.parquet"
        self.write_table(path, rows.cast(schema()))
        return path

    def replace_in_part(self, path: Path, rows: pa.Table) -> None:
        """Replace, in the part file ``path``, the orders of ``rows`` by these rows: the
        file is rewritten whole or not at all, so each order stays in exactly one file."""
        import pyarrow.compute as pc

        rows = rows.cast(schema())
        old = self.read_part(path)
        keep = pc.invert(pc.is_in(old.column("id"), value_set=rows.column("id")))
        self.write_table(path, pa_concat([old.filter(keep), rows]))

    def compact(self, month: str, max_files: int) -> bool:
        """Merge the part files of ``month`` into one when there are more than
        ``max_files``: its plan (``ROOT/_compaction.json``) first, then the merged file
        (the newest name) written whole, then the old ones removed, then the plan.

        No order of file operations keeps the month's orders once each in the files at
        every instant (the merged file and the old ones cannot change places at once), so
        a sync killed between the merged file and the last removal leaves the orders of
        the old parts twice for a raw reader. The plan names them:
        :meth:`finish_interrupted` (any ``OrderStore`` opened) or the next sync removes
        them before anything else."""
        import pyarrow.parquet as pq

        files = self.month_files([month])
        if len(files) <= max_files:
            return False

        def stream(tmp: Path) -> None:
            # row group by row group: memory stays at one row group, not the month
            merged = schema().with_metadata(_generation())
            with pq.ParquetWriter(tmp, merged, compression="zstd") as writer:
                for f in files:
                    source = pq.ParquetFile(f)
                    for i in range(source.num_row_groups):
                        writer.write_table(source.read_row_group(i).cast(merged))

        path = self.month_dir(month) / f"part-{time.time_ns()}-{uuid.uuid4().hex[:8]}.parquet"
        plan = {"month": month, "merged": path.name, "parts": [f.name for f in files]}
        atomic_write_text(self.root / COMPACTION_NAME, json.dumps(plan, indent=1))
        _step("compact planned")
        atomic_write(path, stream)
        _step("compact merged")
        self._end_compaction(month, plan["parts"])
        return True

    def _end_compaction(self, month: str, parts: Iterable[str]) -> None:
        """Remove the old parts of a compaction whose merged file is in place, then its
        plan (the removals durable first: a plan gone means they are done)."""
        directory = self.month_dir(month)
        for name in parts:
            (directory / name).unlink(missing_ok=True)
            _step(f"compact removed {name}")
        with contextlib.suppress(OSError):
            fsync_path(directory)
        (self.root / COMPACTION_NAME).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            fsync_path(self.root)

    def finish_compaction(self) -> bool:
        """Complete the compaction a killed sync left (its plan is still there): its old
        parts are removed when its merged file is in place (whole: written under a
        temporary name); else the kill came before it and the old parts are the month's
        files, as they were. Call it holding the writer's lock. Returns whether there was
        a plan."""
        path = self.root / COMPACTION_NAME
        try:
            plan = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return False
        except ValueError as exc:  # not JSON, not UTF-8
            plan = exc
        month, merged, parts = _plan_fields(plan)
        if month is None:
            # never written so (it is written whole): remove nothing it names; repair()
            # finds any leftover by the orders the files hold
            logger.warning("order store %s: ignoring an unreadable %s (%s)", self.root, path, plan)
            path.unlink(missing_ok=True)
            return True
        if (self.month_dir(month) / merged).is_file():
            logger.info("order store %s: finishing the compaction of %s", self.root, month)
            self._end_compaction(month, parts)
        else:
            path.unlink(missing_ok=True)
        return True

    def finish_interrupted(self) -> bool:
        """:meth:`finish_compaction` when a plan is there and no writer runs (best effort:
        a store another sync is writing, or one this process may not write, is left as it
        is; :meth:`read` still sees each order once). Returns whether it took a plan."""
        if not (self.root / COMPACTION_NAME).is_file():
            return False
        try:
            with self.lock():
                return self.finish_compaction()
        except StoreLocked:
            return False  # that sync finishes it before anything else
        except OSError as exc:
            logger.warning(
                "order store %s: a killed sync left a compaction unfinished, and it could not "
                "be finished here (%s); the next sync finishes it",
                self.root,
                exc,
            )
            return False

    def repair(self) -> int:
        """Finish an interrupted compaction (:meth:`finish_compaction`), then remove the
        part files one without a plan left (an older toolkit): a file whose orders are
        all in one newer file of its month. Outside compaction each order is in exactly
        one file, so nothing else matches; a file that does not read as a part of the store
        stops it before anything is removed (InvalidRequest naming it). Returns how many
        files were removed by the second step."""
        self.finish_compaction()
        files_of = {month: self.month_files([month]) for month in self.months()}
        for path in (f for files in files_of.values() for f in files):
            self.part_metadata(path)
        removed = 0
        for files in files_of.values():
            if len(files) < 2:
                continue
            ids = {f: set(self.read_part(f, ["id"]).column("id").to_pylist()) for f in files}
            for i, f in enumerate(files):
                if any(ids[f] <= ids[g] for g in files[i + 1 :]):
                    f.unlink()
                    removed += 1
        return removed

    @contextlib.contextmanager
    def open_part(self, path: Path) -> Iterator[pa.NativeFile]:
        """The part file ``path`` held open for the block (read from one version of it)."""
        import pyarrow as pa

        handle = pa.OSFile(str(path))
        try:
            yield handle
        finally:
            handle.close()

    def write_table(self, path: Path, table: pa.Table) -> None:
        """``table`` to ``path`` (newest first), whole or not at all (``toolkit._atomic``),
        with a new generation in its metadata (so each version's footer differs: the
        typed tables name the version they were derived from)."""
        import pyarrow.parquet as pq

        table = table.sort_by([("createdAt", "descending"), ("id", "ascending")])
        table = table.replace_schema_metadata(_generation())
        atomic_write(
            path,
            lambda tmp: pq.write_table(table, tmp, compression="zstd", row_group_size=16_384),
        )

    # -- state ----------------------------------------------------------------------------

    def read_state(self) -> dict[str, Any]:
        """The state file (``_state.read_state``)."""
        return read_state(self.root / STATE_NAME)

    def write_state(self, state: Mapping[str, Any]) -> None:
        write_state(self.root / STATE_NAME, state)

    # -- the writer's lock ----------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the store's writer lock for the block; StoreLocked when another writer
        holds it. The lock is an OS file lock: it goes with the process that held it, so
        a killed sync never leaves the store locked."""
        import fcntl

        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                raise StoreLocked(
                    f"order store {self.root} is being written by another sync ({holder}); "
                    "one writer at a time: wait for it to finish"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
            try:
                yield
            finally:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _generation() -> dict[bytes, bytes]:
    return {b"toolkit.store.generation": uuid.uuid4().hex.encode()}


def _plan_fields(plan: object) -> tuple[str | None, str, list[str]]:
    """(month, merged file, old parts) of a compaction plan; month None when it is not
    one compact() writes (names only of part files, never a path)."""

    def part(name: object) -> bool:
        return (
            isinstance(name, str)
            and "/" not in name
            and "\\" not in name
            and fnmatch.fnmatchcase(name, PART_GLOB)
        )

    if isinstance(plan, dict):
        month, merged, parts = plan.get("month"), plan.get("merged"), plan.get("parts")
        if (
            isinstance(month, str)
            and len(month) == 7
            and month[:4].isdigit()
            and month[4] == "-"
            and month[5:].isdigit()
            and part(merged)
            and isinstance(parts, list)
            and all(part(p) for p in parts)
            and merged not in parts
        ):
            return month, str(merged), [str(p) for p in parts]
    return None, "", []


def _step(where: str) -> None:
    """A seam for tests: called between the steps of a compaction (``compact planned``,
    ``compact merged``, ``compact removed <part>``) and when a read has listed the files
    (``snapshot listed``), so a test can pause one there while the other runs."""


def _once(table: pa.Table) -> pa.Table:
    """``table`` with each order once: an order in a compaction's merged file and in one
    of its old parts not removed yet (a compaction under way or interrupted) keeps the
    row of the later file, the merged one (files are read oldest name first)."""
    import pyarrow.compute as pc

    if pc.count_distinct(table.column("id")).as_py() == table.num_rows:
        return table
    last = {oid: i for i, oid in enumerate(table.column("id").to_pylist())}
    return table.take(sorted(last.values()))


def pa_concat(tables: Sequence[pa.Table]) -> pa.Table:
    import pyarrow as pa

    return pa.concat_tables(list(tables))


def _damaged(exc: BaseException) -> bool:
    """Whether a pyarrow error reading a file says the file is damaged or not Parquet
    (ArrowInvalid is a ValueError; a bad footer an OSError without errno), not that the
    system failed (no permission, I/O error, gone: those stay OSErrors)."""
    return not isinstance(exc, OSError) or exc.errno is None


def _ms(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    return int(value)  # type: ignore[call-overload]
