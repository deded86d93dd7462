"""The data checks of a set of orders kept on disk (:class:`StoredChecks`, Parquet files in
``data_checks``' order) and the ``data_checks`` table of a report built from parts
(:class:`DataChecks`): read whole only when asked for, counted and shown a few rows per
check without holding every row."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from toolkit.report._checks import CHECK_COLUMNS, check_order, conform_checks
from toolkit.report._columns import _conform, empty

__all__ = ["CheckedTables", "DataChecks", "StoredChecks", "store_checks", "write_checks"]


def _write_frame(frame: pd.DataFrame, path: Path) -> Path:
    """Rows of checks (conformed to ``CHECK_COLUMNS``) as Parquet at ``path``, whole or
    not at all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from toolkit._atomic import atomic_write

    table = pa.Table.from_pandas(conform_checks([frame]), preserve_index=False)
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp))


@dataclass(frozen=True)
class StoredChecks:
    """``data_checks`` rows on disk: the Parquet files ``files`` (``CHECK_COLUMNS``), read
    in order and concatenated, are the rows in ``data_checks``' order."""

    files: tuple[Path, ...] = ()

    def rows(self) -> int:
        """How many rows the files hold (their footers, nothing else read)."""
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(f).metadata.num_rows for f in self.files)

    def read(self) -> pd.DataFrame:
        """Every row, one frame (``CHECK_COLUMNS``)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.files:
            return empty(CHECK_COLUMNS)
        tables = [pq.read_table(f) for f in self.files]
        table = pa.concat_tables(tables, promote_options="permissive")
        del tables
        return _conform(table.to_pandas(self_destruct=True), CHECK_COLUMNS)

    def counts(self) -> dict[str, int]:
        """Check -> rows, reading the ``check`` column alone (dictionary-encoded)."""
        return self.page(0)[1]

    def heads(self, n: int) -> pd.DataFrame:
        """The first ``n`` rows of each check, in ``data_checks``' order, reading only
        the row groups that hold them."""
        return self.page(n)[0]

    def page(self, n: int) -> tuple[pd.DataFrame, dict[str, int]]:
        """:meth:`heads` and :meth:`counts` in one reading: the ``check`` column of each
        file as numbers into its few names (never a text per row), then the row groups
        holding the rows shown."""
        import pyarrow.parquet as pq

        counts: dict[str, int] = {}
        frames = []
        for f in self.files:
            col = pq.read_table(f, columns=["check"], read_dictionary=["check"]).column(0)
            keep = np.zeros(len(col), dtype=bool)
            offset = 0
            for chunk in col.chunks:
                codes = np.asarray(chunk.indices.fill_null(-1))
                names = chunk.dictionary.to_pylist()
                for code in pd.unique(codes[codes >= 0]):
                    at = np.flatnonzero(codes == code)
                    name = names[code]
                    need = n - min(n, counts.get(name, 0))
                    keep[offset + at[:need]] = True
                    counts[name] = counts.get(name, 0) + len(at)
                offset += len(chunk)
            if keep.any():
                frames.append(_rows_at(pq.ParquetFile(f), keep))
        return conform_checks(frames), counts


def _rows_at(pf: Any, keep: np.ndarray) -> pd.DataFrame:
    """The rows of ``pf`` where ``keep``, reading only the row groups up to the last."""
    last = int(np.flatnonzero(keep)[-1])
    groups, start = [], 0
    for g in range(pf.num_row_groups):
        if start > last:
            break
        groups.append(g)
        start += pf.metadata.row_group(g).num_rows
    rows = pf.read_row_groups(groups).to_pandas()
    return rows[keep[: len(rows)]]


def store_checks(
    chunks: Sequence[Mapping[str, Path]],
    folder: Path,
    *,
    quote_problems: Sequence[tuple[str, str]] = (),
    duplicates: pd.Series | None = None,
    coverage: Sequence[str] = (),
) -> StoredChecks:
    """Every ``data_checks`` row but the slippage outliers, on disk in ``data_checks``'
    order (:func:`~toolkit.report._checks.check_order`): the rows of the set written to
    ``folder``, then those of ``chunks`` (each chunk's :func:`frame_checks` written by
    check name), a check sorted by orderId merged across chunks by the engine (sorting
    on disk, under its memory limit), never every row in memory."""
    files: list[Path] = []
    for k, item in enumerate(
        check_order(quote_problems=quote_problems, duplicates=duplicates, coverage=coverage)
    ):
        if isinstance(item, pd.DataFrame):
            files.append(_write_frame(item, folder / f"checks-set-{k:02d}.parquet"))
            continue
        name, by_id = item
        parts = [c[name] for c in chunks if name in c]
        if len(parts) > 1 and by_id:
            files.append(_sorted_by_id(parts, folder / f"checks-set-{k:02d}.parquet"))
        else:
            files.extend(parts)
    return StoredChecks(tuple(files))


def _sorted_by_id(parts: Sequence[Path], path: Path) -> Path:
    """The rows of ``parts`` (in order) sorted by orderId, stable, as one file."""
    from toolkit._atomic import atomic_write
    from toolkit.report._engine import connection, memory_limit
    from toolkit.report._memory import half_limit, release_memory

    release_memory()  # the chunks' leftovers, before the engine takes its share
    listed = ", ".join("'" + os.fspath(p).replace("'", "''") + "'" for p in parts)
    # half the engine's limit, as the pass: the sort spills to disk beyond it
    with connection(half_limit(memory_limit())) as con:
        # the files' position breaks ties: the order a stable sort of their rows keeps
        con.execute(
            f"CREATE TEMP VIEW rows AS SELECT * EXCLUDE (filename, file_row_number), "
            f"list_position([{listed}], filename) AS f, file_row_number AS r "
            f"FROM read_parquet([{listed}], filename = true, file_row_number = true)"
        )
        atomic_write(
            path,
            lambda tmp: con.execute(
                f"COPY (SELECT {', '.join(_quoted(c) for c in CHECK_COLUMNS)} FROM rows "
                f"ORDER BY \"orderId\" NULLS LAST, f, r) TO '{_sql_path(tmp)}' "
                "(FORMAT parquet)"
            ),
        )
    return path


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_path(p: Path) -> str:
    return os.fspath(p).replace("'", "''")


def write_checks(frames: Sequence[pd.DataFrame | StoredChecks], path: Path) -> None:
    """Rows of checks (frames, or stored files streamed a row group at a time) as one
    Parquet file at ``path``: the file ``DataFrame.to_parquet`` gives of their
    concatenation, without holding them all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.Schema.from_pandas(empty(CHECK_COLUMNS), preserve_index=False)
    with pq.ParquetWriter(path, schema) as writer:
        for item in frames:
            if isinstance(item, pd.DataFrame):
                if len(item):
                    t = pa.Table.from_pandas(conform_checks([item]), preserve_index=False)
                    writer.write_table(t.cast(schema))
                continue
            for f in item.files:
                pf = pq.ParquetFile(f)
                for g in range(pf.num_row_groups):
                    t = pf.read_row_group(g).select(list(CHECK_COLUMNS))
                    writer.write_table(t.cast(schema))


@dataclass(frozen=True)
class DataChecks:
    """The ``data_checks`` table of a report from parts: the stored rows, then the
    slippage outliers (drawn by the tables step, in memory)."""

    stored: StoredChecks
    outliers: pd.DataFrame = field(default_factory=lambda: empty(CHECK_COLUMNS))
    # the page's few rows and the counts, read once (the page, repr and notes share them)
    _pages: dict[int, tuple[pd.DataFrame, pd.DataFrame]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def frame(self) -> pd.DataFrame:
        """Every row (read from disk each time)."""
        stored = self.stored.read()
        if not len(self.outliers):
            return stored
        if not len(stored):
            return self.outliers
        return pd.concat([stored, self.outliers], ignore_index=True)

    def rows(self) -> int:
        return self.stored.rows() + len(self.outliers)

    def counts(self) -> pd.DataFrame:
        """Rows per check (``check``, ``rows``), in the order checks first appear."""
        # the same counts come with any page already read
        return next(iter(self._pages.values()))[1] if self._pages else self._page(0)[1]

    def heads(self, n: int) -> pd.DataFrame:
        """The first ``n`` rows of each check, in order."""
        return self._page(n)[0]

    def _page(self, n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        if n not in self._pages:
            stored, got = self.stored.page(n)
            outliers = self.outliers["check"].astype(str)
            for name, k in outliers.value_counts(sort=False).items():
                got[str(name)] = got.get(str(name), 0) + int(k)
            counts = pd.DataFrame(
                {"check": pd.Series(list(got), dtype="str"), "rows": list(got.values())}
            ).astype({"rows": "int64"})
            extra = self.outliers.groupby("check", sort=False).head(n)
            heads = conform_checks([f for f in (stored, extra) if len(f)])
            self._pages[n] = (heads, counts)
        return self._pages[n]

    def write(self, path: Path) -> None:
        """The table as Parquet at ``path`` (streamed)."""
        write_checks([self.stored, self.outliers], path)


class CheckedTables(MutableMapping[str, pd.DataFrame]):
    """Tables by name where ``data_checks`` may be a :class:`DataChecks` read from disk
    each time it is asked for (:meth:`raw` gives it unread)."""

    def __init__(self, tables: Mapping[str, pd.DataFrame | DataChecks]):
        self._tables: dict[str, pd.DataFrame | DataChecks] = dict(tables)

    def raw(self) -> dict[str, pd.DataFrame | DataChecks]:
        """The tables, a :class:`DataChecks` unread."""
        return dict(self._tables)

    def __getitem__(self, name: str) -> pd.DataFrame:
        got = self._tables[name]
        return got.frame() if isinstance(got, DataChecks) else got

    def __setitem__(self, name: str, df: pd.DataFrame) -> None:
        self._tables[name] = df

    def __delitem__(self, name: str) -> None:
        del self._tables[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def __contains__(self, name: object) -> bool:
        return name in self._tables
