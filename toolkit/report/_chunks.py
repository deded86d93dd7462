"""One chunk of orders through the per-order code, its parts written (:func:`chunk_work`),
and the chunks of a pass run in a pool of worker processes, merged in chunk order
(:func:`run_chunks`): a failing chunk stops the pass with its error, the workers reaped."""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import pandas as pd

from toolkit.report import _memory

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from toolkit.report._market import MarketLike
    from toolkit.report._per_order import Deduplicated

#: worker processes of a pass (the chunks' pandas work runs on one core each)
POOL_WORKERS = 2
#: the environment variable that sets them (``TOOLKIT_REPORT_WORKERS=0``: none, the chunks
#: in the caller's process)
WORKERS_ENV = "TOOLKIT_REPORT_WORKERS"
#: the fewest orders a pass runs in a pool for: below, starting the workers (each imports
#: pandas, pyarrow and DuckDB) costs more than it saves
POOL_MIN_ORDERS = 200_000


@dataclass(frozen=True)
class ChunkSetting:
    """What every chunk of a pass shares (given once to each worker)."""

    market: MarketLike | None
    max_quote_age: float | None
    quote_fields: Any
    duplicates: pd.Series  # orderId -> rows dropped, of the whole set
    usable: bool  # the set's quotes are usable (``counted_usable``)
    folder: Path


#: a chunk's rows of one table: a frame or table, or the folder of Parquet files the
#: partition wrote (:func:`~toolkit.report._partition.read_chunk`, read and removed by
#: the worker); None: the set has no such table
Rows: TypeAlias = "pd.DataFrame | pa.Table | Path | None"


@dataclass(frozen=True)
class ChunkTask:
    """One chunk's rows of each table."""

    index: int
    orders: Rows
    trades: Rows
    evaluated_tickers: Rows


@dataclass
class ChunkOut:
    """What a chunk gives the set: its parts' paths and what the set's figures need."""

    index: int
    per_order: Path
    makers: Path | None
    quotes: Path | None
    checks: dict[str, Path]  # check name -> its rows' file (in the parts' folder)
    fields: list[tuple[str, int, list[Any]]]  # (check, orders, distinct values in order)
    reasons: pd.Series | None  # quotes per (exchange, reason)
    orders: int


def _frame(rows: Rows) -> pd.DataFrame:
    """A chunk's rows as a frame; a chunk's folder is read once and removed."""
    if rows is None:
        return pd.DataFrame()
    if isinstance(rows, pd.DataFrame):
        return rows
    if isinstance(rows, Path):
        import shutil

        from toolkit.report._partition import read_chunk

        table = read_chunk(rows)
        shutil.rmtree(rows, ignore_errors=True)
        return table.to_pandas()
    return rows.to_pandas()


def deduplicated(setting: ChunkSetting, task: ChunkTask) -> Deduplicated:
    """The chunk's frames as ``deduplicate`` leaves them (its orders are kept ones already):
    each trade once, and each quote once when the set has orders loaded twice."""
    from toolkit.report._per_order import Deduplicated

    trades = _frame(task.trades)
    if len(trades) and {"orderId", "id"} <= set(trades.columns):
        trades = trades.drop_duplicates(["orderId", "id"], keep="last")
        trades = trades.reset_index(drop=True)
    et = _frame(task.evaluated_tickers)
    if len(et) and len(setting.duplicates):
        # the quotes of an order loaded twice are there twice
        et = et.drop_duplicates(keep="last").reset_index(drop=True)
    orders = _frame(task.orders)
    return Deduplicated(orders, trades, et, setting.quote_fields, setting.duplicates)


def chunk_work(setting: ChunkSetting, task: ChunkTask) -> ChunkOut:
    """The chunk through the per-order code, its parts written whole into the folder."""
    from toolkit.report._quotes import canonical_quotes

    d = deduplicated(setting, task)
    quotes = canonical_quotes(d, usable=setting.usable)
    return chunk_parts(d, quotes, setting.market, setting.max_quote_age, setting.folder, task.index)


def chunk_parts(
    d: Deduplicated,
    quotes: pd.DataFrame | None,
    market: MarketLike | None,
    max_quote_age: float | None,
    folder: Path,
    i: int,
) -> ChunkOut:
    """Deduplicated frames (a chunk, or the whole set) through the per-order code, their
    parts written as number ``i``."""
    from toolkit.report._checks import conform_checks, frame_checks, order_field_problems
    from toolkit.report._columns import NONE_LABEL, _text
    from toolkit.report._fills import maker_by_order
    from toolkit.report._parts import _write
    from toolkit.report._per_order import order_metrics

    po = order_metrics(d, quotes, market, max_quote_age=max_quote_age)
    # the chunk's check rows on disk, never every check row of the set in memory
    checks = {
        name: _write(conform_checks([rows]), folder / f"checks-{i:06d}-{k:02d}.parquet")
        for k, (name, rows) in enumerate(frame_checks(po, d.orders, d.trades).items())
    }
    fields = []
    for p in order_field_problems(po):
        values = po.loc[p.rows, "side" if p.check.startswith("side") else "status"]
        fields.append((p.check, len(values), list(pd.unique(values))))
    reasons = None
    if quotes is not None and len(quotes):
        venue = _text(quotes, "exchange", NONE_LABEL).replace("", NONE_LABEL)
        reason = _text(quotes, "reason")
        reasons = pd.DataFrame({"exchange": venue, "reason": reason}).value_counts()
    makers = maker_by_order(d.trades)
    return ChunkOut(
        index=i,
        makers=(
            _write(makers.reset_index(), folder / f"makers-{i:06d}.parquet")
            if len(makers)
            else None
        ),
        quotes=None if quotes is None else _write(quotes, folder / f"quotes-{i:06d}.parquet"),
        per_order=_write(po, folder / f"per_order-{i:06d}.parquet"),
        checks=checks,
        fields=fields,
        reasons=reasons,
        orders=len(po),
    )


#: the chunk work a pass runs (a test swaps it for one that fails in a worker)
CHUNK_WORK: Callable[[ChunkSetting, ChunkTask], ChunkOut] = chunk_work

# a worker's setting, given once when it starts
_SETTING: ChunkSetting | None = None


def _start_worker(setting: ChunkSetting) -> None:
    global _SETTING
    _SETTING = setting
    from toolkit.report import _engine

    # the pool runs a worker per core: each one's engine on one thread, not on all of them
    _engine.THREADS = 1
    # the per-order code imported before the first chunk arrives
    import toolkit.report._per_order  # noqa: F401


def _in_worker(work: Callable[[ChunkSetting, ChunkTask], ChunkOut], task: ChunkTask) -> ChunkOut:
    assert _SETTING is not None, "a chunk worker without its setting"
    try:
        return work(_SETTING, task)
    finally:
        _memory.release_memory()  # the worker's next chunk starts from what is left


@contextmanager
def _main_not_run_again() -> Iterator[None]:
    """While workers start, the caller's ``__main__`` is not named to them: a spawned
    process imports it again (to find its functions), and a script without an ``if
    __name__ == "__main__":`` guard would then start its report again in each worker.
    The workers run only the toolkit's functions (and those of importable modules)."""
    main = sys.modules.get("__main__")
    names = ("__file__", "__spec__")
    saved = {n: main.__dict__[n] for n in names if main is not None and n in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__dict__["__spec__"] = None
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__dict__.update(saved)
            if "__spec__" not in saved:
                main.__dict__.pop("__spec__", None)


@contextmanager
def _pool(setting: ChunkSetting, workers: int) -> Iterator[Any]:
    """A pool of ``workers`` fresh processes (spawned: the engine's threads are never
    forked), reaped on the way out whatever happens; on an error the chunks not started
    are cancelled and those running are waited for (their parts are then removed with the
    folder)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(setting,),
    )
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def run_chunks(
    setting: ChunkSetting,
    tasks: Iterable[ChunkTask],
    merge: Callable[[ChunkOut], None],
    *,
    workers: int,
) -> None:
    """Each task through :data:`CHUNK_WORK`, each result given to ``merge`` in task order:
    in this process (``workers`` < 2), else in a pool of ``workers`` processes with at
    most ``workers`` chunks handed over at a time (memory bounded by them, not by the
    set); the first failing chunk raises its own error."""
    work = CHUNK_WORK
    if workers < 2:
        for task in tasks:
            merge(work(setting, task))
            del task
            _memory.release_memory()  # what the chunk freed, before the next one grows
        return
    from concurrent.futures.process import BrokenProcessPool

    from toolkit.errors import InvalidRequest

    with _main_not_run_again(), _pool(setting, workers) as pool:
        running: deque[Future[ChunkOut]] = deque()
        try:
            for task in tasks:
                if len(running) >= workers:
                    merge(running.popleft().result())
                running.append(pool.submit(_in_worker, work, task))
                del task  # the rows are the worker's now
            while running:
                merge(running.popleft().result())
        except BrokenProcessPool as exc:
            raise InvalidRequest(
                f"a worker process of the report's pass ended abruptly ({exc}): out of "
                "memory? a smaller chunk_orders holds less per worker"
            ) from None


def pool_workers(orders: int, chunk_orders: int) -> int:
    """The worker processes for a pass over about ``orders`` orders: none (in this
    process) for one chunk or a small set, else ``$TOOLKIT_REPORT_WORKERS``, by default
    :data:`POOL_WORKERS` at most the cores; 0 or 1: none.

    Raises
    ------
    InvalidRequest
        ``$TOOLKIT_REPORT_WORKERS`` that is no whole number >= 0 (named).
    """
    from toolkit.errors import InvalidRequest

    text = os.environ.get(WORKERS_ENV, "").strip()
    wanted = min(POOL_WORKERS, os.cpu_count() or 1)
    if text:
        if not text.isdigit():
            raise InvalidRequest(
                f"${WORKERS_ENV}={text!r}: the report's worker processes are a whole "
                "number >= 0 (0: none)"
            )
        wanted = int(text)
    if wanted < 2 or orders <= chunk_orders or orders < POOL_MIN_ORDERS:
        return 0
    return wanted
