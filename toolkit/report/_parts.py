"""The orders of a report with their per-order metrics on disk, in parts: built in memory as
one part (frames), or out of core in chunks of consecutive orders (an export folder, an
order store), each chunk through the same per-order code, with the market of its window."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from toolkit.errors import InvalidRequest
from toolkit.report._scratch import Owner, make, remove
from toolkit.report._stored_checks import StoredChecks

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.report._chunks import ChunkOut
    from toolkit.report._market import MarketLike

__all__ = ["OrderParts", "order_parts", "parts_from_frames"]


@dataclass
class OrderParts:
    """The orders of a report with their per-order metrics on disk."""

    per_order: list[Path]  # Parquet files. Read in list order and concatenated
    # (pd.concat(..., ignore_index=True)) they ARE
    # per_order(deduplicate(frames), market, max_quote_age=...):
    # same columns in the same order, same dtypes after
    # _columns._conform / the reader, SAME ROW ORDER.
    makers: list[Path]  # Parquet: maker_by_order(trades).reset_index() of the same
    # orders (orderId, trades, maker_trades, cost, maker_cost),
    # concatenated in list order; an order in at most one part.
    quotes: list[Path]  # Parquet: canonical_quotes(d) rows of the same orders
    # (for worst_order_quotes / order charts of a few ids).
    checks: StoredChecks  # every data_checks row EXCEPT the slippage outliers
    # (_checks._outliers), CHECK_COLUMNS, in data_checks' order, on disk.
    contingencies: pd.DataFrame  # contingencies(canonical_quotes(d))[0], whole set
    contingency_reasons: pd.DataFrame  # ...[1]
    warnings: list[str]  # the RuntimeWarning messages all_tables emits today
    orders: int  # rows of per_order in total
    folder: Path | None  # a temporary folder owning the files (None: nothing to remove)

    # the lock that says this process still uses ``folder`` (see _scratch)
    owner: Owner | None = field(default=None, repr=False)

    def close(self) -> None:
        """Remove :attr:`folder` and every part in it (again: nothing)."""
        if self.folder is not None:
            remove(self.folder, self.owner)
            self.folder = None


@dataclass
class _Merge:
    """What the chunks give, merged in chunk order into the set's figures."""

    per_order: list[Path] = field(default_factory=list)
    makers: list[Path] = field(default_factory=list)
    quotes: list[Path] = field(default_factory=list)
    # per chunk: check name -> its rows' file (never every check row in memory)
    checks: list[dict[str, Path]] = field(default_factory=list)
    # field check -> (orders, their distinct values in order)
    fields: dict[str, tuple[int, list[Any]]] = field(default_factory=dict)
    # (exchange, reason) -> quotes
    reasons: list[pd.Series] = field(default_factory=list)
    orders: int = 0

    def add(self, chunk: ChunkOut) -> None:
        """The next chunk's parts and figures (chunks come in the set's order)."""
        self.per_order.append(chunk.per_order)
        if chunk.makers is not None:
            self.makers.append(chunk.makers)
        if chunk.quotes is not None:
            self.quotes.append(chunk.quotes)
        self.checks.append(chunk.checks)
        for check, n, values in chunk.fields:
            before, seen = self.fields.get(check, (0, []))
            known = set(seen)
            self.fields[check] = (before + n, seen + [v for v in values if v not in known])
        if chunk.reasons is not None:
            self.reasons.append(chunk.reasons)
        self.orders += chunk.orders


@contextmanager
def _owned(folder: str | os.PathLike[str] | None) -> Iterator[tuple[Path, Owner]]:
    """A fresh folder for the parts (in ``folder``, else the system's temporary one), held
    by this process (``_scratch``: a killed report's folder goes at the next report's
    start), removed when the block fails: nothing is left behind."""
    if folder is not None and not Path(folder).is_dir():
        raise InvalidRequest(f"no folder {folder} for the report's parts")
    path, owner = make(folder)
    try:
        yield path, owner
    except BaseException:
        remove(path, owner)
        raise


def _write(frame: pd.DataFrame, path: Path) -> Path:
    """``frame`` as Parquet at ``path``, whole or not at all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from toolkit._atomic import atomic_write

    table = pa.Table.from_pandas(frame, preserve_index=False)
    # a dictionary of the labels only: of the numbers it costs three times the writing
    labels = [
        f.name
        for f in table.schema
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]
    # parts live as long as their report: LZ4 (written and read faster than Snappy at
    # the same size), and statistics only of the order id (read by ids, nothing else)
    stats = ["orderId"] if "orderId" in table.schema.names else False
    return atomic_write(
        path,
        lambda tmp: pq.write_table(
            table, tmp, use_dictionary=labels, compression="lz4", write_statistics=stats
        ),
    )


def _contingencies(out: _Merge) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``contingencies`` of the set's quotes from the chunks' counts per (venue, reason)."""
    from toolkit.report._breakdowns import contingencies
    from toolkit.report._columns import _conform

    if not out.reasons:
        return contingencies(None)
    cols = {"exchange": "str", "quotes": "int64", "contingencies": "int64", "rate": "float64"}
    rcols = {"exchange": "str", "reason": "str", "quotes": "int64", "share_of_venue": "float64"}
    counted = pd.concat(out.reasons).rename("n").reset_index()
    counted = counted.groupby(["exchange", "reason"], sort=True)["n"].sum().reset_index()
    counted["has"] = (counted["reason"] != "").astype("int64") * counted["n"]
    g = counted.groupby("exchange", sort=True)
    per = pd.DataFrame({"quotes": g["n"].sum(), "contingencies": g["has"].sum()})
    per["rate"] = per["contingencies"] / per["quotes"]
    r = counted[counted["reason"] != ""].rename(columns={"n": "quotes"})
    r = r[["exchange", "reason", "quotes"]].reset_index(drop=True)
    r["share_of_venue"] = r["quotes"] / r["exchange"].map(per["quotes"]).astype("float64")
    return _conform(per.reset_index(), cols), _conform(r, rcols)


def _finish(
    out: _Merge,
    folder: Path,
    owner: Owner,
    *,
    quote_problems: Sequence[tuple[str, str]],
    duplicates: pd.Series,
    coverage: Sequence[str],
) -> OrderParts:
    from toolkit.report._checks import field_warning
    from toolkit.report._stored_checks import store_checks

    checks = store_checks(
        out.checks,
        folder,
        quote_problems=quote_problems,
        duplicates=duplicates,
        coverage=coverage,
    )
    messages = [m for _, m in quote_problems]
    messages += [field_warning(check, n, seen) for check, (n, seen) in out.fields.items()]
    cont, reasons = _contingencies(out)
    return OrderParts(
        per_order=out.per_order,
        makers=out.makers,
        quotes=out.quotes,
        checks=checks,
        contingencies=cont,
        contingency_reasons=reasons,
        warnings=messages,
        orders=out.orders,
        folder=folder,
        owner=owner,
    )


def parts_from_frames(
    frames: Any,
    market: Any = None,
    *,
    max_quote_age: float | None = 60.0,
    folder: str | os.PathLike[str] | None = None,
) -> OrderParts:
    """The report's orders of in-memory ``frames`` as one part: exactly the per-order table,
    makers, checks and contingencies the report computes of them in memory.

    Parameters
    ----------
    frames : OrderFrames or alike
        ``orders``, ``trades``, ``evaluated_tickers`` (and ``quote_fields``, ``attrs``).
    market : DataFrame, RecordingMarket or path, optional
        Ticker rows, or the root of a recording.
    max_quote_age : float or None
        Seconds; an older ticker is no price at that moment (None: no limit).
    folder : path, optional
        Where the parts' temporary folder goes (default: the system's temporary folder).

    Returns
    -------
    OrderParts
        Owning its temporary folder: :meth:`OrderParts.close` removes it.
    """
    from toolkit.report._chunks import chunk_parts
    from toolkit.report._coverage import frame_notes
    from toolkit.report._per_order import deduplicate
    from toolkit.report._quotes import canonical_quotes, quote_problems

    chosen = _market(market)
    with _owned(folder) as (path, owner):
        d = deduplicate(frames)
        out = _Merge()
        out.add(chunk_parts(d, canonical_quotes(d), chosen, max_quote_age, path, 0))
        return _finish(
            out,
            path,
            owner,
            quote_problems=quote_problems(frames),
            duplicates=d.duplicate_orders,
            coverage=frame_notes(frames),
        )


def _market(market: Any) -> MarketLike | None:
    """``market`` as the join reads it: a frame, a recording's root (a path, or a pyarrow
    dataset of its files, ``scan_recording``)."""
    from toolkit.report._market import market_source

    if market is None:
        return None
    import pyarrow.dataset as ds

    if isinstance(market, ds.FileSystemDataset):
        return _dataset_market(market)
    return market_source(market)


def _dataset_market(dataset: Any) -> MarketLike:
    """A pyarrow dataset of a recording's files (``scan_recording``) as its root's market:
    the ``watchticker`` files it lists (those of its window), read where they lie, and the
    root's ``watchtickers`` and ``_session`` rows; its row filter is not applied beyond the
    files it chose."""
    from toolkit.recording._read import recording_root
    from toolkit.report._market_join import TICKER_CHANNEL, RecordingMarket

    files = [Path(f) for f in dataset.files]
    if not files:
        raise InvalidRequest(
            "the market dataset lists no file (none of the recording in its window): pass "
            "the recording's root, or a scan_recording of a window it covers"
        )
    for f in files:
        for parent in f.parents:
            if parent.name.startswith("channel="):
                root = recording_root(parent.parent)
                ticks = [
                    os.fspath(x)
                    for x in files
                    if f"channel={TICKER_CHANNEL}" in (p.name for p in x.parents)
                ]
                return RecordingMarket(root, tuple(ticks))
    raise InvalidRequest(
        f"the market dataset's files are not a recording's ({files[0]}): pass the "
        "recording's root or tk.scan_recording(root, 'watchticker')"
    )


def order_parts(
    source: Any,
    market: Any = None,
    *,
    max_quote_age: float | None = 60.0,
    chunk_orders: int = 250_000,
    folder: str | os.PathLike[str] | None = None,
) -> OrderParts:
    """The report's orders with their per-order metrics, built out of core in chunks.

    The engine reads the set's files where they lie, keeps each order id once (its latest
    ``updatedAt``, else its last row, at that row's position) and splits the orders into
    chunks of ``chunk_orders`` consecutive orders with their trades and quotes; each chunk
    goes through the per-order code with only the tickers of its time window, its parts
    written whole, then freed. The parts concatenated are the per-order table of the set.
    From ``POOL_MIN_ORDERS`` (200,000) orders of several chunks (and no market frame in
    memory), the chunks run in worker processes (``$TOOLKIT_REPORT_WORKERS``, default 2
    at most the cores; 0: none), each chunk of ``chunk_orders`` / workers orders, handed
    over as the files the engine wrote (it is closed by then): about ``chunk_orders``
    orders are in memory at a time, as in one process.

    Parameters
    ----------
    source : path, OrderStore or OrderFrames
        An export folder (``OrderFrames.to_parquet``), an order store (its typed tables)
        or frames in memory (one part: :func:`parts_from_frames`).
    market : DataFrame, path or pyarrow dataset, optional
        Ticker rows, the root of a recording, or ``tk.scan_recording(root, ...)``.
    max_quote_age : float or None
        Seconds; an older ticker is no price at that moment (None: no limit).
    chunk_orders : int
        Orders per chunk (memory grows with it, not with the set).
    folder : path, optional
        Where the parts' temporary folder goes (default: the system's temporary folder).

    Returns
    -------
    OrderParts
        Owning its temporary folder: :meth:`OrderParts.close` removes it.

    Raises
    ------
    InvalidRequest
        A source that is none of those, a bad ``chunk_orders`` or
        ``$TOOLKIT_REPORT_WORKERS``, a damaged or foreign file (named), a worker process
        that ended abruptly; the temporary folder is then removed, the workers reaped.
    """
    from toolkit.report._inputs import frames_source, set_files

    if isinstance(chunk_orders, bool) or not isinstance(chunk_orders, int) or chunk_orders < 1:
        raise InvalidRequest(
            f"chunk_orders takes a whole number of orders >= 1, not {chunk_orders!r}"
        )
    found = set_files(source)
    if found is None:
        # frames in memory, an object giving them (``frames()``), a store without orders
        frames = frames_source(source)
        return parts_from_frames(frames, market, max_quote_age=max_quote_age, folder=folder)
    chosen = _market(market)
    with _owned(folder) as (path, owner):
        return _out_of_core(found, chosen, max_quote_age, chunk_orders, path, owner)


def _out_of_core(
    found: Any,
    market: MarketLike | None,
    max_quote_age: float | None,
    chunk_orders: int,
    path: Path,
    owner: Owner,
) -> OrderParts:
    from toolkit.report._chunks import ChunkSetting, ChunkTask, pool_workers, run_chunks
    from toolkit.report._engine import connection, memory_limit
    from toolkit.report._market_join import RecordingMarket, tick_layout
    from toolkit.report._memory import half_limit
    from toolkit.report._partition import chunk_rows, file_rows, partition
    from toolkit.report._quotes import counted_quote_problems, counted_usable

    names = ("orders", "trades", "evaluated_tickers")
    # a market frame in memory would be copied into every worker: its chunks run here
    in_memory = isinstance(market, pd.DataFrame)
    workers = 0 if in_memory else pool_workers(file_rows(found.files["orders"]), chunk_orders)
    # each worker holds a chunk: chunks of chunk_orders / workers keep about chunk_orders
    # orders in memory at a time, as in one process
    size = max(1, chunk_orders // workers) if workers else chunk_orders
    out = _Merge()
    # the pass holds its work under half the engine's limit: each chunk's joins open a
    # connection of their own, and both together stay within the limit's order
    inputs = path / "input"
    with connection(half_limit(memory_limit())) as con:
        part = partition(con, found.files, size, inputs)
        if isinstance(market, RecordingMarket) and market.layout is None:
            # the recording's span, gaps and each file's moments, once for every chunk
            layout = tick_layout(con, market)
            market = market._replace(layout=layout) if layout is not None else None
    # the chunks are files now, the engine closed (its memory freed) before they run
    problems = counted_quote_problems(part.quote_rows, part.quote_counts, found.quote_fields)
    usable = counted_usable(part.quote_rows, part.quote_counts, found.quote_fields)
    setting = ChunkSetting(market, max_quote_age, found.quote_fields, part.duplicates, usable, path)
    tasks = (
        ChunkTask(i, *(chunk_rows(part, name, i) for name in names)) for i in range(part.chunks)
    )
    run_chunks(setting, tasks, out.add, workers=workers if part.chunks > 1 else 0)
    # each chunk's folders went with it (its worker removed them): the empty rest goes now
    shutil.rmtree(inputs, ignore_errors=True)
    return _finish(
        out,
        path,
        owner,
        quote_problems=problems,
        duplicates=part.duplicates,
        coverage=found.coverage,
    )
