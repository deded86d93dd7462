"""The rows of a compaction run written sorted by (symbol, received time), each symbol of
:data:`MIN_ROW_GROUP` rows or more in row groups of its own, so that a scan asking for some
symbols skips the other symbols' row groups by their Parquet statistics alone (min = max).

Memory stays bounded whatever the run: a first pass counts the rows of each symbol (the
``symbol`` column only); the symbols, in order, are then cut into groups of at most
``ceil(rows / PASSES)`` rows (never fewer than a row group), and each group is one pass over
the run's files that keeps its rows: a group of several symbols is sorted in memory, a
symbol larger than a group is written as it is read (file order, which is time order).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["MIN_ROW_GROUP", "PASSES", "ROW_GROUP", "plan_groups", "write_by_symbol"]

#: rows of a row group at most
ROW_GROUP = 131_072
#: a symbol with fewer rows shares its row group with its neighbours (no row group of a
#: handful of rows per symbol of a channel with thousands of them)
MIN_ROW_GROUP = 4_096
#: passes over a run's files at most (each reads the rows of one group of symbols)
PASSES = 8
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
    """``counts`` cut, in order, into groups of at most ``ceil(total / PASSES)`` rows (at
    least :data:`ROW_GROUP`); a symbol larger than that is a group of its own."""
    total = sum(n for _, n in counts)
    limit = max(ROW_GROUP, math.ceil(total / PASSES))
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
) -> int:
    """Write the rows ``tables()`` yields (one pass each time it is called) through
    ``write`` (one call per row group), sorted by (symbol, received_at, connection_id,
    seq); ``counts`` are their :func:`symbol_counts`. Returns the rows written."""
    rows = 0
    for group in plan_groups(counts):
        wanted = [symbol for symbol, _ in group]
        if len(group) == 1 and group[0][1] > ROW_GROUP:
            rows += _stream(write, _rows_of(tables(), wanted))
        else:
            rows += _sorted(write, _rows_of(tables(), wanted), group)
    return rows


def _rows_of(tables: Iterator[pa.Table], wanted: list[Symbol]) -> Iterator[pa.Table]:
    import pyarrow as pa
    import pyarrow.compute as pc

    values = pa.array(wanted, pa.string())  # None in it matches the rows without symbol
    for table in tables:
        kept = table.filter(pc.is_in(table.column("symbol"), value_set=values))
        if kept.num_rows:
            yield kept


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
