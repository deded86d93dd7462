"""``core_metrics``: the report's core metrics (arrival mid and spread, markouts, quote
slippage, per venue) over an export folder and a recording root, on DuckDB or on Spark,
by the one portable query of ``_portable``; the inputs found and checked here."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.errors import InvalidRequest
from toolkit.report._portable import (
    ORDER_COLUMNS,
    QUOTE_COLUMNS,
    TICK_COLUMNS,
    TRADE_COLUMNS,
    Asof,
    Source,
    Sources,
    core_sql,
    venues_sql,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

ENGINES = ("duckdb", "spark")
#: the session rows' columns the gaps are drawn from
_SESSION_COLUMNS = ["received_at", "kind", "gap_start", "gap_end"]
# a disconnect never followed by a connect: a gap to the end of time (the join only looks
# up moments inside the recording's span, so it is a gap to the recording's end)
_OPEN_END = 2**63 - 1


class Files:
    """The files :func:`core_metrics` reads, checked: the export's three tables (trades
    and quotes optional), the recording's ``watchticker`` files grouped by schema, its
    gaps (start, end ns) and the span its session rows saw."""

    def __init__(
        self, export: str | os.PathLike[str], recording: str | os.PathLike[str] | None
    ) -> None:
        folder = Path(export) if isinstance(export, str | os.PathLike) else None
        if folder is None or not str(export).strip() or not folder.is_dir():
            raise InvalidRequest(
                f"core_metrics needs the folder of an export (OrderFrames.to_parquet), "
                f"not {export!r}"
            )
        self.orders = folder / "orders.parquet"
        if not self.orders.is_file():
            raise InvalidRequest(f"no orders.parquet in {folder}")
        self.trades = _optional(folder / "trades.parquet")
        self.quotes = _optional(folder / "evaluated_tickers.parquet")
        self.tick_groups: list[tuple[dict[str, Any], list[str]]] = []
        self.gaps: list[tuple[int, int]] = []
        self.span: tuple[int, int] | None = None
        if recording is not None:
            self._read_recording(recording)

    def _read_recording(self, recording: str | os.PathLike[str]) -> None:
        import numpy as np
        import pyarrow.parquet as pq

        from toolkit.recording._read import read_recording_table
        from toolkit.report._columns import _time
        from toolkit.report._market import _gaps, naive_ns
        from toolkit.report._market_join import SESSION_CHANNEL, recording_market

        market = recording_market(recording)
        groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
        types: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
        wanted = {column for _, column in TICK_COLUMNS.values()}
        for path in market.ticker_files:
            schema = pq.read_schema(path)
            found = {f.name: f.type for f in schema if f.name in wanted}
            key = tuple(sorted((n, str(t)) for n, t in found.items()))
            groups.setdefault(key, []).append(os.fspath(path))
            types[key] = found
        self.tick_groups = [(types[k], files) for k, files in groups.items()]
        session = read_recording_table(
            market.root, [SESSION_CHANNEL], columns=_SESSION_COLUMNS
        ).to_pandas()
        if len(session):
            seen = naive_ns(_time(session, "received_at")).view("int64")
            self.span = (int(seen.min()), int(seen.max()))
            starts, ends = _gaps(session, np.datetime64(_OPEN_END, "ns"))
            self.gaps = list(
                zip(starts.view("int64").tolist(), ends.view("int64").tolist(), strict=True)
            )


def _optional(path: Path) -> Path | None:
    return path if path.is_file() else None


def kinds(
    schema: dict[str, pa.DataType],
    columns: dict[str, tuple[str, str]],
    where: str,
    *,
    ns_as_long: bool = False,
) -> dict[str, str]:
    """How each needed column of a file is held (:class:`Source` ``kinds``); a time column
    that is no timestamp, or a number column that is no number, raises InvalidRequest
    naming the file and the column. ``ns_as_long``: the engine reads nanosecond
    timestamps as integers (Spark)."""
    import pyarrow as pa

    out: dict[str, str] = {}
    for sql_type, column in columns.values():
        t = schema.get(column)
        if t is None:
            continue
        if sql_type == "TIME":
            if not pa.types.is_timestamp(t):
                raise InvalidRequest(
                    f"{where}: column {column} is {t}, not a timestamp (the export and the "
                    "recording write timestamps)"
                )
            out[column] = "ns" if ns_as_long and t.unit == "ns" else "timestamp"
        elif sql_type in ("DOUBLE", "BIGINT") and not (
            pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        ):
            raise InvalidRequest(f"{where}: column {column} is {t}, not a number")
        else:
            out[column] = "value"
    return out


def file_schema(path: Path | str) -> dict[str, pa.DataType]:
    """The columns of a Parquet file (InvalidRequest naming an unreadable one)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return {f.name: f.type for f in pq.read_schema(path)}
    except (OSError, pa.ArrowException) as exc:
        raise InvalidRequest(f"{path}: not a readable Parquet file ({exc})") from None


def plan(
    files: Files,
    define: Callable[[str, Sequence[str]], None],
    *,
    ns_as_long: bool = False,
) -> Sources:
    """The sources of the core query: each file (or group of files) defined as a view by
    ``define(view, paths)`` of the engine, with how its columns are held."""

    def source(view: str, paths: Sequence[str], schema: Any, cols: Any) -> Source:
        define(view, paths)
        return Source(view, kinds(schema, cols, paths[0], ns_as_long=ns_as_long))

    def export(view: str, path: Path | None, cols: Any) -> Source | None:
        if path is None:
            return None
        return source(view, [os.fspath(path)], file_schema(path), cols)

    orders = export("orders_file", files.orders, ORDER_COLUMNS)
    assert orders is not None
    ticks = [
        source(f"ticks_{i}", paths, schema, TICK_COLUMNS)
        for i, (schema, paths) in enumerate(files.tick_groups)
    ]
    return Sources(
        orders=orders,
        trades=export("trades_file", files.trades, TRADE_COLUMNS),
        quotes=export("quotes_file", files.quotes, QUOTE_COLUMNS),
        ticks=ticks,
        gaps="gaps" if files.gaps and ticks else None,
        span=files.span,
    )


def _check(engine: str, spark: Any, max_quote_age: float | None) -> None:
    if engine not in ENGINES:
        raise InvalidRequest(
            f"core_metrics engine must be one of {', '.join(ENGINES)}, not {engine!r}"
        )
    if spark is not None and engine != "spark":
        raise InvalidRequest("core_metrics: a spark session is for engine='spark'")
    if max_quote_age is not None and (
        isinstance(max_quote_age, bool)
        or not isinstance(max_quote_age, int | float)
        or math.isnan(max_quote_age)
        or max_quote_age < 0
    ):
        raise InvalidRequest(
            f"core_metrics max_quote_age must be seconds >= 0 or None, not {max_quote_age!r}"
        )


def core_metrics(
    export: str | os.PathLike[str],
    recording: str | os.PathLike[str] | None = None,
    *,
    engine: str = "duckdb",
    spark: Any = None,
    max_quote_age: float | None = 60.0,
) -> dict[str, pd.DataFrame]:
    """The report's core metrics over files, computed by one portable query on DuckDB or
    on Spark, equal to the report's own numbers.

    Parameters
    ----------
    export : str or path
        The folder of an export (``OrderFrames.to_parquet``): ``orders.parquet``, and
        ``trades.parquet`` and ``evaluated_tickers.parquet`` when present.
    recording : str or path, optional
        The root of a recording: its ``watchticker`` files give the arrival mid and
        spread and the markouts; its ``_session`` rows its gaps (a moment is priced only
        by a ticker with no gap between them).
    engine : {"duckdb", "spark"}
        Where the query runs. ``"spark"`` needs ``pip install 'toolkit[spark]'`` and a
        Java runtime (17+).
    spark : pyspark.sql.SparkSession, optional
        The session to run on (``engine="spark"``); default a local one built here and
        stopped at the end.
    max_quote_age : float or None
        Seconds; an older ticker is no price at that moment (None: no limit).

    Returns
    -------
    dict of str to DataFrame
        ``"per_order"``: one row per order id (its latest ``updatedAt``), sorted by
        ``orderId``, with ``arrival_mid``, ``arrival_spread_bp``, ``markout_<h>s_bp`` per
        horizon of the report, ``quote_slippage_bp`` and ``best_quote_slippage_bp``
        (NaN where the order did not execute or nothing prices it); ``"venues"``: per
        venue of the executed orders, ``orders``, ``notional`` and the notional-weighted
        ``quote_slippage_bp`` and ``best_quote_slippage_bp``.

    Raises
    ------
    InvalidRequest
        No export folder or no ``orders.parquet`` in it, no recording at ``recording``, a
        column of the wrong type (named with its file), an unknown engine, a negative
        ``max_quote_age``, or ``engine="spark"`` without pyspark, SQLGlot or Java.

    Notes
    -----
    Not covered (the report's per-order table has them): the ``watchtickers`` channel
    (one message for many pairs), fees, fills and limit-order metrics.
    """
    _check(engine, spark, max_quote_age)
    files = Files(export, recording)
    if engine == "spark":
        from toolkit.report._spark import run_spark

        return run_spark(files, spark, max_quote_age)
    return run_duckdb(files, max_quote_age)


def run_duckdb(
    files: Files, max_quote_age: float | None, asof: Asof | None = None
) -> dict[str, pd.DataFrame]:
    """The core metrics of ``files`` on the report's DuckDB engine (``asof``: how the
    join is written, :func:`core_sql`)."""
    import pyarrow as pa

    from toolkit.report._engine import connection

    with connection() as con:

        def define(view: str, paths: Sequence[str]) -> None:
            listed = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
            con.execute(
                f"CREATE TEMP VIEW {view} AS SELECT * FROM "
                f"read_parquet([{listed}], union_by_name = true)"
            )

        sources = plan(files, define)
        if sources.gaps:
            gs, ge = zip(*files.gaps, strict=True)
            con.register(
                "gaps", pa.table({"gs": pa.array(gs, pa.int64()), "ge": pa.array(ge, pa.int64())})
            )
        con.execute(f"CREATE TEMP TABLE per_order AS {core_sql(sources, max_quote_age, asof)}")
        per_order = con.sql('SELECT * FROM per_order ORDER BY "orderId"').df()
        venues = con.sql(venues_sql("per_order")).df()
    return {"per_order": per_order, "venues": venues}
