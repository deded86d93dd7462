"""The rows of a compaction run written sorted by (symbol, received time), each symbol of
:data:`MIN_ROW_GROUP` rows or more in row groups of its own, so that a scan asking for some
symbols skips the other symbols' row groups by their Parquet statistics alone (min = max).

Memory stays bounded whatever the run: a first pass counts the rows of each symbol (the
``symbol`` column only); the symbols, in order, are then cut into groups of at most
``ceil(rows / GROUPS)`` rows (never fewer than a row group). When there are several, one
pass over the run's files (a day's 1,440 small files are read once: opening them is most
of the cost) puts each group's rows into a spill file of its own (a temporary, deleted
after; a crash's is swept by the next compaction), read back a group at a time. A group of
several symbols is sorted in memory; a symbol larger than a group is written as it is read
(file order, which is time order).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["GROUPS", "MIN_ROW_GROUP", "ROW_GROUP", "plan_groups", "write_by_symbol"]

#: rows of a row group at most
ROW_GROUP = 131_072
#: a symbol with fewer rows shares its row group with its neighbours (no row group of a
#: handful of rows per symbol of a channel with thousands of them)
MIN_ROW_GROUP = 4_096
#: groups of symbols a run is cut into, about (a group is sorted in memory: its rows at
#: most ``ceil(rows / GROUPS)``, or a row group)
GROUPS = 8
#: rows a group's spill takes before it writes them (bounds the memory of the pass)
_SPILL_ROWS = 16_384
_ORDER = [
    ("symbol", "ascending"),
    ("received_at", "ascending"),
    ("connection_id", "ascending"),
    ("seq", "ascending"),
]

Symbol = str | None
Counts = list[tuple[Symbol, int]]


def symbol_counts(symbols: Iterable[pa.ChunkedArray | pa.Array]) -> Counts:
    """The rows of each symbol of the ``symbol`` columns given, in the order a sort puts
    them (code points, i.e. the bytes of UTF-8, as Arrow sorts; no symbol last)."""
    import pyarrow.compute as pc

    counts: dict[Symbol, int] = {}
    for column in symbols:
        found = pc.value_counts(column)
        for value, count in zip(
            found.field("values").to_pylist(), found.field("counts").to_pylist(), strict=True
        ):
            counts[value] = counts.get(value, 0) + count
    return sorted(counts.items(), key=lambda item: (item[0] is None, item[0] or ""))


def plan_groups(counts: Counts) -> list[Counts]:
    """``counts`` cut, in order, into groups of at most ``ceil(total / GROUPS)`` rows (at
    least :data:`ROW_GROUP`); a symbol larger than that is a group of its own."""
    total = sum(n for _, n in counts)
    limit = max(ROW_GROUP, math.ceil(total / GROUPS))
    groups: list[Counts] = []
    group: Counts = []
    rows = 0
    for symbol, n in counts:
        if group and rows + n > limit:
            groups.append(group)
            group, rows = [], 0
        group.append((symbol, n))
        rows += n
    if group:
        groups.append(group)
    return groups


def write_by_symbol(
    write: Callable[[pa.Table], None],
    tables: Callable[[], Iterator[pa.Table]],
    counts: Counts,
    spill: Callable[[int], Path],
) -> int:
    """Write the rows ``tables()`` yields (read once) through ``write`` (one call per row
    group), sorted by (symbol, received_at, connection_id, seq); ``counts`` are their
    :func:`symbol_counts`; ``spill(i)`` the temporary file of group ``i`` when there are
    several. Returns the rows written."""
    groups = plan_groups(counts)
    if len(groups) <= 1:
        return sum(_group(write, tables(), group) for group in groups)
    paths = [spill(i) for i in range(len(groups))]
    try:
        _spill(tables(), groups, paths)
        return sum(
            _group(write, _read_spill(path), group)
            for path, group in zip(paths, groups, strict=True)
        )
    finally:
        for path in paths:
            path.unlink(missing_ok=True)


def _group(write: Callable[[pa.Table], None], parts: Iterator[pa.Table], group: Counts) -> int:
    if len(group) == 1 and group[0][1] > ROW_GROUP:
        return _stream(write, parts)
    return _sorted(write, parts, group)


def _spill(tables: Iterator[pa.Table], groups: list[Counts], paths: list[Path]) -> None:
    """One pass over ``tables``: each group's rows, in order, into its spill file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    wanted = [pa.array([s for s, _ in group], pa.string()) for group in groups]
    held: list[list[pa.Table]] = [[] for _ in groups]
    counts = [0] * len(groups)
    with contextlib.ExitStack() as stack:
        writers: list[pq.ParquetWriter | None] = [None] * len(groups)

        def flush(i: int) -> None:
            table = pa.concat_tables(held[i])
            writer = writers[i]
            if writer is None:
                writer = writers[i] = stack.enter_context(
                    pq.ParquetWriter(paths[i], table.schema, compression="lz4")
                )
            writer.write_table(table)
            held[i], counts[i] = [], 0

        for table in tables:
            for i, values in enumerate(wanted):
                part = _only(table, values)
                if part.num_rows:
                    held[i].append(part)
                    counts[i] += part.num_rows
                    if counts[i] >= _SPILL_ROWS:
                        flush(i)
        for i in range(len(groups)):
            if held[i]:
                flush(i)


def _read_spill(path: Path) -> Iterator[pa.Table]:
    import pyarrow.parquet as pq

    if not path.exists():  # a group without rows
        return
    source = pq.ParquetFile(path)
    for i in range(source.num_row_groups):
        yield source.read_row_group(i)


def _only(table: pa.Table, values: pa.Array) -> pa.Table:
    """The rows of ``table`` whose symbol is among ``values`` (None matches no symbol)."""
    import pyarrow.compute as pc

    return table.filter(pc.is_in(table.column("symbol"), value_set=values))


def _stream(write: Callable[[pa.Table], None], parts: Iterator[pa.Table]) -> int:
    """One symbol's rows, as read, in full row groups (the rest in a last one)."""
    import pyarrow as pa

    held: list[pa.Table] = []
    count = rows = 0
    for part in parts:
        held.append(part)
        count += part.num_rows
        if count >= ROW_GROUP:
            table = pa.concat_tables(held)
            full = count - count % ROW_GROUP
            for start in range(0, full, ROW_GROUP):
                write(table.slice(start, ROW_GROUP))
            rest = table.slice(full)
            held, count = ([rest], rest.num_rows) if rest.num_rows else ([], 0)
            rows += full
    if held:
        write(pa.concat_tables(held))
        rows += count
    return rows


def _sorted(write: Callable[[pa.Table], None], parts: Iterator[pa.Table], group: Counts) -> int:
    """A group of symbols, sorted in memory, each symbol of ``MIN_ROW_GROUP`` rows or
    more in row groups of its own, the smaller ones together."""
    import pyarrow as pa

    held = list(parts)
    if not held:
        return 0
    table = pa.concat_tables(held).sort_by(_ORDER)
    small: list[Any] = []
    small_rows = 0
    offset = 0

    def flush_small() -> None:
        nonlocal small, small_rows
        if small:
            write(pa.concat_tables(small))
            small, small_rows = [], 0

    for _, n in group:
        part = table.slice(offset, n)
        offset += n
        if n >= MIN_ROW_GROUP:
            flush_small()
            for start in range(0, n, ROW_GROUP):
                write(part.slice(start, ROW_GROUP))
            continue
        small.append(part)
        small_rows += n
        if small_rows >= MIN_ROW_GROUP:
            flush_small()
    flush_small()
    return offset
