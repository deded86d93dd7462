"""The store's typed tables: the five frame tables (orders, trades, fees, evaluated_tickers,
fills) of each part file's bodies, kept beside it as Parquet
(``ROOT/_tables/<table>/month=YYYY-MM/<part file's name>``), so an engine reads typed
columns without parsing JSON and :meth:`OrderStore.frames` reads them instead of the bodies.

A table file says which part file it was derived from (a hash of that file's Parquet
footer, which holds a new random ``generation`` at every write) and with which profile
settings (quote fields, timestamp unit). A table file that does not match its part file
(an older toolkit's store, a sync killed between the two writes, another profile) is
never read: the part's bodies are parsed instead, and the next sync writes it again.
Every file is written whole or not at all (``toolkit._atomic``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import warnings
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit._atomic import atomic_write
from toolkit.frames._schema import FRAME_NAMES

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from toolkit.profile import ServiceProfile
    from toolkit.store._files import StoreFiles

logger = logging.getLogger("toolkit.store")

TABLES_DIR = "_tables"
#: the tables, as the frames name them (and the folders under ``ROOT/_tables``)
TABLE_NAMES: tuple[str, ...] = FRAME_NAMES
#: what each table's rows are keyed by (the order's id)
KEY = {name: ("id" if name == "orders" else "orderId") for name in TABLE_NAMES}
#: the layout of the table files; another one is derived again
FORMAT = 1
META_KEY = b"toolkit.store.table"
#: the part files' own metadata: a new value at each write, so their footers differ
GENERATION_KEY = b"toolkit.store.generation"


def part_token(source: str | os.PathLike[str] | pa.NativeFile) -> str:
    """What identifies one version of a part file: its size and a hash of its Parquet
    footer (which holds the file's generation, the row groups' offsets and statistics),
    read from an open handle or a path; "" when it cannot be read."""
    import pyarrow as pa

    handle = source if isinstance(source, pa.NativeFile) else pa.OSFile(os.fspath(source))
    try:
        size = handle.size()
        if size < 12:
            return ""
        tail = handle.read_at(8, size - 8)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != b"PAR1" or length + 12 > size:
            return ""
        footer = handle.read_at(length, size - 8 - length)
    except (OSError, ValueError):  # gone, unreadable; pyarrow's range errors
        return ""
    finally:
        if handle is not source:
            handle.close()
    return f"{size}:{hashlib.blake2b(footer, digest_size=16).hexdigest()}"


def profile_key(profile: ServiceProfile) -> str:
    """The profile settings the tables are derived with (a change derives them again)."""
    from toolkit.frames._schema import QuoteFields

    return json.dumps(
        {
            "format": FORMAT,
            "quote_fields": QuoteFields.from_profile(profile).to_dict(),
            "timestamp_unit": profile.orders.timestamp_unit,
        },
        sort_keys=True,
    )


def derive(
    bodies: Sequence[Any], profile: ServiceProfile, *, exact: bool = False
) -> tuple[dict[str, pa.Table], list[str]]:
    """The five tables of the fetchOrder ``bodies`` and the warnings their building gave
    (an odd value set to null, a renamed field), recorded rather than shown."""
    from toolkit.frames._frames import build_tables

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tables = build_tables(bodies, exact=exact, profile=profile)
    return tables, list(dict.fromkeys(str(w.message) for w in caught))


def _bodies(table: pa.Table) -> list[bytes]:
    """The body column as bytes (one Python object per body, no ``str`` copy too)."""
    import pyarrow as pa

    return table.column("body").cast(pa.binary()).to_pylist()  # type: ignore[no-any-return]


def to_disk(table: pa.Table) -> tuple[pa.Table, list[str]]:
    """``table`` with its ``timestamp[ms, UTC]`` columns in microseconds (what every engine,
    Spark included, reads), and their names (to put back on read)."""
    import pyarrow as pa

    us = pa.timestamp("us", tz="UTC")
    cast: list[str] = []
    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type) and f.type.unit == "ms" and f.type.tz == "UTC":
            table = table.set_column(i, f.name, table.column(i).cast(us))
            cast.append(f.name)
    return table, cast


def from_disk(table: pa.Table, cast: Collection[str]) -> pa.Table:
    """The table as the frames build it: the columns :func:`to_disk` changed back in ms."""
    import pyarrow as pa

    ms = pa.timestamp("ms", tz="UTC")
    for i, name in enumerate(table.column_names):
        if name in cast:
            table = table.set_column(i, name, table.column(i).cast(ms))
    return table


def align(tables: Mapping[str, pa.Table], ids: pa.ChunkedArray | pa.Array) -> dict[str, pa.Table]:
    """The rows of each table in the order of their order's id in ``ids`` (the part file's
    rows), each order's items kept in their order (a stable sort); rows of other orders
    are dropped."""
    import pyarrow.compute as pc

    out: dict[str, pa.Table] = {}
    for name, table in tables.items():
        position = pc.index_in(table.column(KEY[name]), value_set=ids)
        table = table.append_column("__position", position).filter(pc.is_valid(position))
        out[name] = table.sort_by("__position").drop_columns(["__position"])
    return out


class Tables:
    """The typed tables of one store, derived with one profile."""

    def __init__(self, files: StoreFiles, profile: ServiceProfile) -> None:
        self.files = files
        self.profile = profile
        self.key = profile_key(profile)
        self.root = files.root / TABLES_DIR

    def path(self, name: str, part: Path) -> Path:
        """The file of table ``name`` derived from the part file ``part``."""
        return self.root / name / part.parent.name / part.name

    # -- reading --------------------------------------------------------------------------

    def meta(self, name: str, part: Path, token: str) -> dict[str, Any] | None:
        """The metadata of table ``name`` of ``part`` when it was derived from this version
        of the part (``token``) with this profile; None otherwise (absent, stale, damaged)."""
        import pyarrow.parquet as pq

        try:
            found = pq.read_schema(self.path(name, part))
            info = json.loads((found.metadata or {}).get(META_KEY, b"null"))
        except (OSError, ValueError):  # absent, gone, cut short, not ours
            return None
        if (
            not isinstance(info, dict)
            or not token
            or info.get("part") != token
            or info.get("key") != self.key
        ):
            return None
        info["columns"] = found.names
        return info

    def read(
        self,
        part: Path,
        token: str,
        columns: Collection[str] | None = None,
        ids: pa.Array | pa.ChunkedArray | None = None,
    ) -> tuple[dict[str, pa.Table], list[str]] | None:
        """The five tables of ``part`` (``columns`` only, with each table's key; the rows of
        the orders ``ids`` only, filtered as they are read) and the warnings recorded when
        they were derived, or None when one of them does not match this version of the
        part (``token``) or cannot be read."""
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        out: dict[str, pa.Table] = {}
        said: list[str] = []
        for name in TABLE_NAMES:
            info = self.meta(name, part, token)
            if info is None:
                return None
            wanted = None
            if columns is not None:
                wanted = [c for c in info["columns"] if c == KEY[name] or c in columns]
            try:
                table = pq.read_table(
                    self.path(name, part),
                    columns=wanted,
                    filters=None if ids is None else ds.field(KEY[name]).isin(ids),
                )
            except (OSError, ValueError):
                return None
            out[name] = from_disk(table.replace_schema_metadata(None), info.get("ms", []))
            said.extend(w for w in info.get("warnings", []) if isinstance(w, str))
        return out, said

    # -- writing (the caller holds the writer's lock) ----------------------------------------

    def write(
        self, part: Path, token: str, tables: Mapping[str, pa.Table], said: Sequence[str]
    ) -> None:
        """The five tables of this version of ``part``, each file whole or not at all."""
        import pyarrow.parquet as pq

        for name in TABLE_NAMES:
            table, cast = to_disk(tables[name])
            info = {"part": token, "key": self.key, "ms": cast, "warnings": list(said)}
            table = table.replace_schema_metadata(
                {**(table.schema.metadata or {}), META_KEY: json.dumps(info).encode()}
            )
            target = self.path(name, part)
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(
                target,
                lambda tmp, t=table: pq.write_table(  # type: ignore[misc]
                    t, tmp, compression="zstd", row_group_size=65_536
                ),
            )

    def refresh(
        self, part: Path, previous: str | None = None, changed: Collection[str] = ()
    ) -> bool:
        """Derive again the tables of ``part`` after it was written: only the orders of
        ``changed`` when the tables of its ``previous`` version are there (the others are
        copied as they are), else every order of the part. Never raises for the data (a
        body the frames refuse, a field whose type changed): the part is then read from
        its bodies until a later sync succeeds. The disk's refusals (a full disk) are
        raised, as for any file of the store. Returns whether the tables were written."""
        try:
            self._refresh(part, previous, changed)
        except OSError:
            raise
        except Exception as exc:  # a cache: the bodies stay the truth
            logger.warning("order store: the typed tables of %s were not written: %s", part, exc)
            with contextlib.suppress(OSError):
                for name in TABLE_NAMES:
                    self.path(name, part).unlink(missing_ok=True)
            return False
        return True

    def _refresh(self, part: Path, previous: str | None, changed: Collection[str]) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        with self.files.open_part(part) as handle:
            token = part_token(handle)
            ids = self.files.read_part(part, ["id"], handle).column("id")
            kept = self.read(part, previous) if previous and changed else None
            if kept is None:
                rows = self.files.read_part(part, ["id", "body"], handle)
                tables, said = derive(_bodies(rows), self.profile)
            else:
                old, said = kept
                wanted = pa.array(sorted(set(changed)), pa.string())
                rows = self.files.read_part(part, ["id", "body"], handle)
                rows = rows.filter(pc.is_in(rows.column("id"), value_set=wanted))
                new, more = derive(_bodies(rows), self.profile)
                said = list(dict.fromkeys([*said, *more]))
                tables = {}
                for name in TABLE_NAMES:
                    stale = pc.is_in(old[name].column(KEY[name]), value_set=wanted)
                    tables[name] = pa.concat_tables(
                        [old[name].filter(pc.invert(stale)), new[name]], promote_options="default"
                    )
            self.write(part, token, align(tables, ids), said)

    def merge(self, merged: Path, parts: Sequence[tuple[Path, str]]) -> None:
        """The tables of a compaction's merged file: those of its old ``parts`` (path,
        token before the merge) one after the other, as the merged file holds their rows;
        derived from the bodies when one of them is missing. Then the old ones removed."""
        import pyarrow as pa

        try:
            got = [self.read(path, token) for path, token in parts]
            if all(g is not None for g in got):
                with self.files.open_part(merged) as handle:
                    token = part_token(handle)
                said: list[str] = []
                tables: dict[str, list[pa.Table]] = {name: [] for name in TABLE_NAMES}
                for g in got:
                    assert g is not None
                    for name in TABLE_NAMES:
                        tables[name].append(g[0][name])
                    said.extend(g[1])
                self.write(
                    merged,
                    token,
                    {n: pa.concat_tables(t, promote_options="default") for n, t in tables.items()},
                    list(dict.fromkeys(said)),
                )
            else:
                self.refresh(merged)
        except OSError:
            raise
        except Exception as exc:  # types that do not concatenate: from the bodies
            logger.info("order store: merged tables derived again (%s)", exc)
            self.refresh(merged)
        self.sweep()

    def sweep(self) -> int:
        """Remove the table files whose part file is gone (compacted, repaired); returns
        how many."""
        removed = 0
        for path in self._files():
            if not (self.files.root / path.parent.name / path.name).exists():
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += 1
        return removed

    def _files(self) -> Iterator[Path]:
        for name in TABLE_NAMES:
            yield from (self.root / name).glob("month=*/part-*.parquet")

    def backfill(self) -> int:
        """Derive the tables of every part file that has none matching it (a store an
        older toolkit wrote, a sync killed between a part and its tables, a profile
        changed); returns how many parts."""
        done = 0
        for part in self.files.month_files():
            token = part_token(part)
            if any(self.meta(name, part, token) is None for name in TABLE_NAMES):
                done += self.refresh(part)
        return done

    def current(self) -> dict[str, list[Path]]:
        """The table files of every part file, each derived now where it has none matching
        it (the caller holds the writer's lock); InvalidRequest naming a part whose
        bodies make no tables."""
        from toolkit.errors import InvalidRequest

        self.files.finish_compaction()
        out: dict[str, list[Path]] = {name: [] for name in TABLE_NAMES}
        for part in self.files.month_files():
            token = part_token(part)
            if any(self.meta(name, part, token) is None for name in TABLE_NAMES):
                self.refresh(part)
                token = part_token(part)
                if any(self.meta(name, part, token) is None for name in TABLE_NAMES):
                    raise InvalidRequest(
                        f"order store file {part}: its bodies make no typed tables (see the "
                        "warning logged); store.frames() reads them"
                    )
            for name in TABLE_NAMES:
                out[name].append(self.path(name, part))
        return out
