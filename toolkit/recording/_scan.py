"""A recording as a lazy ``pyarrow.dataset.Dataset``: nothing is read until it is scanned
(by pyarrow, DuckDB, Polars), and then only the files, row groups and columns the
channel, window and symbols asked for need.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from toolkit.errors import InvalidRequest
from toolkit.recording._badfiles import check_on_bad_file, recording_files, warn_skipped
from toolkit.recording._read import (
    ColumnsArg,
    TimeLike,
    _channels,
    _date,
    _timestamp_ns,
    _wanted_columns,
    recording_root,
)
from toolkit.recording._rows import COLUMNS, SESSION_CHANNEL, recording_schema
from toolkit.recording._tickers import TICKERS_CHANNEL

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow.dataset as pads

__all__ = ["scan_recording"]


def scan_recording(
    root: str | os.PathLike[str],
    channel: str | Iterable[str] | None = None,
    *,
    start: TimeLike | None = None,
    end: TimeLike | None = None,
    symbols: Sequence[str] | None = None,
    columns: ColumnsArg = None,
    raw: bool = False,
    on_bad_file: str = "raise",
) -> pads.Dataset:
    """A recording as a lazy ``pyarrow.dataset.Dataset``, pruned before anything is read.

    Only the folders of ``channel`` and of the dates ``start``/``end`` span are listed,
    only the files whose names say they hold rows of the window are taken (each checked
    as :func:`read_recording` does), and the window and ``symbols`` are a filter of the
    dataset, so a scan reads only the row groups that can match and only the columns
    asked for: on a compacted day (sorted by symbol, a row group per symbol), only the
    row groups of the ``symbols`` asked for are read. Nothing is sorted: order by
    ``received_at``, ``connection_id``, ``seq`` where it matters. Scan it with pyarrow
    (``.to_table()``, ``.to_batches()``), DuckDB (``duckdb.sql("select ... from lazy")``,
    filters and columns pushed down) or Polars (``pl.scan_pyarrow_dataset(lazy)``).

    The columns are those :func:`read_recording` gives (the channel's own by default),
    typed as it types them (``received_at`` ``timestamp[ns, UTC]`` for the files of
    every version), plus ``date`` (the partition, ``YYYY-MM-DD``), without ``raw``
    (most of a row's bytes) unless ``raw=True`` or ``columns`` names it. The file of
    each row: ``lazy.files``, or ``lazy.to_table(columns=[..., "__filename"])``.

    ``watchtickers`` rows are one per message, as recorded (their pairs are in ``raw``;
    ``raw`` is then always given, and ``symbols`` keeps every such row):
    :func:`read_recording` splits them per pair.

    Parameters
    ----------
    root : str or os.PathLike
        The recording's folder.
    channel : str or iterable of str, optional
        Channel names (any case; ``"_session"`` for connects, gaps and drops).
    start, end : str, datetime, pandas.Timestamp or number, optional
        Half-open window on ``received_at``.
    symbols : sequence of str, optional
        Pairs to keep, in any case (session rows are kept too).
    columns : list of str or "all", optional
        The columns to give (``date`` is always there, and ``received_at``, ``channel``
        and, with ``symbols``, ``symbol``, which the filter takes); default: those the
        channels use.
    raw : bool
        Give ``raw``, the message's JSON text, too.
    on_bad_file : {"raise", "skip"}
        As in :func:`read_recording`; the files skipped are warned about.

    Returns
    -------
    pyarrow.dataset.Dataset
        The lazy, filtered dataset (empty, with its schema, when no file matches).

    Raises
    ------
    InvalidRequest
        As :func:`read_recording`: ``root`` is no recording, an unknown column, a time
        that is no time, a damaged or foreign file (unless ``on_bad_file="skip"``).

    Examples
    --------
    >>> lazy = scan_recording(root, "watchticker", start="2026-11-22 10:00",
    ...                       end="2026-11-22 12:00", symbols=["BTC/BRL"])  # doctest: +SKIP
    >>> duckdb.sql("select symbol, avg((bid + ask) / 2) from lazy group by 1")  # doctest: +SKIP
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    path = recording_root(root)
    check_on_bad_file(on_bad_file)
    names = _channels(channel)
    wanted = _wanted_columns(columns, names)
    unknown = sorted(set(wanted) - set(COLUMNS))
    if unknown:
        raise InvalidRequest(f"unknown recording columns: {', '.join(unknown)}")
    if columns is None and not raw and not (names is not None and TICKERS_CHANNEL in names):
        wanted = [c for c in wanted if c != "raw"]
    elif raw and "raw" not in wanted:
        wanted.append("raw")
    start_ns = None if start is None else _timestamp_ns(start)
    end_ns = None if end is None else _timestamp_ns(end)
    files, bad = recording_files(
        path,
        names,
        first_date=None if start_ns is None else _date(start_ns),
        last_date=None if end_ns is None else _date(end_ns),
        start_ns=start_ns,
        end_ns=end_ns,
        on_bad_file=on_bad_file,
    )
    warn_skipped(path, bad, stacklevel=2)
    full = recording_schema()
    # a dataset filters on its own columns only: those the filter takes are given too
    needed = {"received_at", "channel"} | ({"symbol"} if symbols is not None else set())
    kept = [c for c in COLUMNS if c in wanted or c in needed]
    schema = pa.schema([full.field(c) for c in kept]).append(pa.field("date", pa.string()))
    partitioning = ds.partitioning(
        pa.schema([pa.field("channel", pa.string()), pa.field("date", pa.string())]),
        flavor="hive",
    )
    dataset = ds.dataset(
        files,
        format="parquet",
        partitioning=partitioning,
        partition_base_dir=str(path),
        schema=schema,
    )
    expr: Any = None
    for part in _filters(names, start_ns, end_ns, symbols, full):
        expr = part if expr is None else expr & part
    if expr is not None:
        dataset = dataset.filter(expr)
    return dataset


def _filters(
    names: list[str] | None,
    start_ns: int | None,
    end_ns: int | None,
    symbols: Sequence[str] | None,
    schema: Any,
) -> list[Any]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    out: list[Any] = []
    if names is not None:
        out.append(ds.field("channel").isin(names))
    stamp = schema.field("received_at").type
    if start_ns is not None:
        out.append(ds.field("received_at") >= pc.scalar(start_ns).cast(stamp))
    if end_ns is not None:
        out.append(ds.field("received_at") < pc.scalar(end_ns).cast(stamp))
    if symbols is not None:
        upper = pa.array([s.strip().upper() for s in symbols], pa.string())
        keep = pc.utf8_upper(ds.field("symbol")).isin(upper) | (
            ds.field("channel") == SESSION_CHANNEL
        )
        out.append(keep | (ds.field("channel") == TICKERS_CHANNEL))
    return out
