"""The market join: per order the mid at creation, at its end and at each markout horizon,
and the spread at creation, from a recording's tickers of the orders' time window, read by
the report's engine (DuckDB) where they lie (Parquet) or registered (a frame), looked up in
numpy (``_asof``), used only where the recording covers the moment without a gap."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from toolkit.report._columns import _num, _text, _time
from toolkit.report._definitions import MARKOUT_HORIZONS_S

if TYPE_CHECKING:  # pragma: no cover
    import duckdb
    import pyarrow as pa

#: the recording channels the report reads (ticker rows, one per pair, and session rows)
TICKER_CHANNEL = "watchticker"
TICKERS_CHANNEL = "watchtickers"
TICKER_CHANNELS = (TICKER_CHANNEL, TICKERS_CHANNEL)
SESSION_CHANNEL = "_session"
#: what the join finds per order: one mid per kind of moment, in this order
KINDS: tuple[str, ...] = ("created", "ended", *(str(h) for h in MARKOUT_HORIZONS_S))
_NS = 1_000_000_000

# mid: (bid + ask) / 2 of a two-sided quote, else the last price; spread only when two-sided
_TWO_SIDED = "bid > 0 AND ask > 0 AND ask >= bid"
_PRICES = (
    f"CASE WHEN {_TWO_SIDED} THEN (bid + ask) / 2 ELSE last END AS mid, "
    f"CASE WHEN {_TWO_SIDED} THEN (ask - bid) / ((bid + ask) / 2) * 1e4 END AS spread_bp"
)
#: the columns read through ``read_recording``: the read order, the tickers and the gaps
_REST_COLUMNS = [
    *("received_at", "connection_id", "seq", "channel", "symbol", "updated_at"),
    *("bid", "ask", "last", "kind", "gap_start", "gap_end"),
]


class TickLayout(NamedTuple):
    """What a recording's tickers hold, found once per report: the span of moments ``t`` of
    each ``watchticker`` file (int64 ns, -1 / -1 for a file without one), the recording's
    span and gaps, and its ``watchtickers`` rows as the engine reads them."""

    lo: np.ndarray
    hi: np.ndarray
    start: int
    end: int
    gap_start: np.ndarray
    gap_end: np.ndarray
    rest: pa.Table


class RecordingMarket(NamedTuple):
    """The root of a recording, read by the engine where it lies (not loaded into pandas),
    and its ``watchticker`` files, checked (a damaged or foreign one is named at once);
    ``layout`` (:func:`tick_layout`) once found, so that each chunk of orders reads only
    the files of its own time window."""

    root: Path
    ticker_files: tuple[str, ...]
    layout: TickLayout | None = None


def recording_market(root: str | os.PathLike[str]) -> RecordingMarket:
    """The recording at ``root`` for the join; InvalidRequest when it is none or one of
    its ``watchticker`` files is damaged or foreign."""
    from toolkit.recording._badfiles import recording_files
    from toolkit.recording._read import recording_root

    path = recording_root(root)
    files, _ = recording_files(path, [TICKER_CHANNEL])
    return RecordingMarket(path, tuple(files))


class Ticks(NamedTuple):
    """Ticker rows as the engine reads them, and the recording's span and gaps."""

    relation: str  # SQL: symbol, t (ns), mid, spread_bp, o1, o2, o3 (the read order)
    start: int  # first moment the recording saw (ns since the epoch, UTC)
    end: int  # last moment it saw
    gap_start: np.ndarray  # int64 ns, disjoint, sorted
    gap_end: np.ndarray


class Mids(NamedTuple):
    """Per order (columns, in the order of ``po``): one row of mids per :data:`KINDS`, and
    the spread at creation in bp; NaN where the recording does not cover the moment."""

    mids: np.ndarray
    spread_bp: np.ndarray


def _ns(values: Any) -> pa.Array:
    """datetime64[ns] values as an int64 Arrow array, NaT as null."""
    import pyarrow as pa

    arr = np.asarray(values, dtype="datetime64[ns]")
    return pa.array(arr.view("int64"), mask=np.isnat(arr))


def _frame_rows(
    market: pd.DataFrame, order: tuple[Any, Any, Any] | None
) -> tuple[pa.Table, list[Any], pd.DataFrame]:
    """A frame's ticker rows as the engine's columns, every moment it saw (naive ns arrays)
    and its ``_session`` rows. ``order``: the three columns of the read order, default the
    row's position."""
    import pyarrow as pa

    from toolkit.report._engine import arrow_text
    from toolkit.report._market import naive_ns

    if "channel" in market.columns:
        channel = _text(market, "channel").str.lower()
        session = market[channel == SESSION_CHANNEL]
        rows = market[channel != SESSION_CHANNEL]
    else:
        session, rows = market.iloc[0:0], market
    # the ticker's service time (a recording keeps it as updated_at), else when it arrived
    t = _time(rows, "timestamp")
    for fallback in ("updated_at", "received_at"):
        if fallback in rows.columns:
            t = t.where(t.notna(), _time(rows, fallback))
    seen = [naive_ns(t)]
    for frame in (rows, session):
        if "received_at" in frame.columns and len(frame):
            seen.append(naive_ns(_time(frame, "received_at")))
    if order is None:
        o1: Any = pa.array(np.arange(len(rows), dtype="int64"))
        o2: Any = pa.nulls(len(rows), pa.string())
        o3: Any = pa.nulls(len(rows), pa.int64())
    else:
        o1, o2, o3 = order
    table = pa.table(
        {
            "symbol": arrow_text(_text(rows, "symbol")),
            "t": _ns(naive_ns(t)),
            "bid": pa.array(_num(rows, "bid").to_numpy(), from_pandas=True),
            "ask": pa.array(_num(rows, "ask").to_numpy(), from_pandas=True),
            "last": pa.array(_num(rows, "last").to_numpy(), from_pandas=True),
            "o1": o1,
            "o2": o2,
            "o3": o3,
        }
    )
    return table, seen, session


def _span(seen: list[Any]) -> tuple[int, int] | None:
    every = np.concatenate(seen) if seen else np.array([], dtype="datetime64[ns]")
    every = every[~np.isnat(every)]
    if len(every) == 0:
        return None
    return int(every.min().view("int64")), int(every.max().view("int64"))


def _gap_arrays(session: pd.DataFrame, end: int) -> tuple[np.ndarray, np.ndarray]:
    from toolkit.report._market import _gaps

    gs, ge = _gaps(session, np.datetime64(end, "ns"))
    return gs.view("int64"), ge.view("int64")


def frame_ticks(con: duckdb.DuckDBPyConnection, market: pd.DataFrame) -> Ticks | None:
    """Ticker (and ``_session``) rows of a frame, registered with the engine."""
    table, seen, session = _frame_rows(market, None)
    span = _span(seen)
    if span is None:
        return None
    con.register("market_frame", table)
    relation = f"SELECT symbol, t, {_PRICES}, o1, o2, o3 FROM market_frame"
    return Ticks(relation, span[0], span[1], *_gap_arrays(session, span[1]))


def _listed(files: Any) -> str:
    return ", ".join("'" + os.fspath(f).replace("'", "''") + "'" for f in files)


_FILE_TICKS = (
    "SELECT symbol, coalesce(epoch_ns(updated_at), epoch_ns(received_at)) AS t, bid, ask, "
    "last, epoch_ns(received_at) AS o1, connection_id AS o2, seq AS o3"
)


def tick_layout(con: duckdb.DuckDBPyConnection, market: RecordingMarket) -> TickLayout | None:
    """The layout of ``market``'s tickers (one pass over the ``watchticker`` files' two time
    columns); ``watchtickers`` (one row per pair, split from each message) and ``_session``
    rows through ``read_recording``, in its read order (received_at, connection_id, seq).
    None: the recording saw no moment."""
    import pyarrow as pa

    from toolkit.recording._read import read_recording_table
    from toolkit.report._engine import arrow_text

    files = market.ticker_files
    rest = read_recording_table(
        market.root,
        [TICKERS_CHANNEL, SESSION_CHANNEL],
        columns=_REST_COLUMNS,
    ).to_pandas()
    received = _ns(_time(rest, "received_at").to_numpy(dtype="datetime64[ns]"))
    ticker = _text(rest, "channel").str.lower() != SESSION_CHANNEL
    order = (
        received.filter(pa.array(ticker.to_numpy())),
        arrow_text(rest.loc[ticker, "connection_id"]),
        pa.array(rest.loc[ticker, "seq"].to_numpy(dtype="float64"), from_pandas=True).cast(
            pa.int64()
        ),
    )
    table, seen, session = _frame_rows(rest, order)
    lo = np.full(len(files), -1, dtype="int64")
    hi = np.full(len(files), -1, dtype="int64")
    if files:
        got = con.execute(
            f"SELECT filename, min(t), max(t), min(o1), max(o1) FROM ({_FILE_TICKS}, filename "
            f"FROM read_parquet([{_listed(files)}], union_by_name = true, filename = true)) "
            "GROUP BY filename"
        ).fetchall()
        at = {os.fspath(f): i for i, f in enumerate(files)}
        for name, lo_t, hi_t, lo_r, hi_r in got:
            if lo_t is not None:
                lo[at[name]], hi[at[name]] = lo_t, hi_t
            moments = [v for v in (lo_t, hi_t, lo_r, hi_r) if v is not None]
            seen.append(np.array(moments, dtype="int64").view("datetime64[ns]"))
    span = _span(seen)
    if span is None:
        return None
    return TickLayout(lo, hi, span[0], span[1], *_gap_arrays(session, span[1]), table)


def recording_ticks(
    con: duckdb.DuckDBPyConnection,
    market: RecordingMarket,
    window: tuple[int | None, int] | None = None,
) -> Ticks | None:
    """A recording's tickers, the ``watchticker`` files read by the engine where they lie:
    only the files holding a moment of ``window`` (ns, inclusive; a lower bound None: none),
    found by their layout (:func:`tick_layout`, found here when ``market`` has none). A
    damaged or foreign file raises InvalidRequest naming it."""
    layout = market.layout if market.layout is not None else tick_layout(con, market)
    if layout is None:
        return None
    con.register("market_rest", layout.rest)
    parts = [f"SELECT symbol, t, {_PRICES}, o1, o2, o3 FROM market_rest"]
    files = window_files(market._replace(layout=layout), window)
    if files:
        con.execute(
            f"CREATE TEMP VIEW market_files AS {_FILE_TICKS} "
            f"FROM read_parquet([{_listed(files)}], union_by_name = true)"
        )
        parts.append(f"SELECT symbol, t, {_PRICES}, o1, o2, o3 FROM market_files")
    relation = " UNION ALL ".join(parts)
    return Ticks(relation, layout.start, layout.end, layout.gap_start, layout.gap_end)


def window_files(market: RecordingMarket, window: tuple[int | None, int] | None) -> tuple[str, ...]:
    """The ``watchticker`` files of ``market`` holding a moment of ``window`` (all of them
    without a window or a layout); a file with no moment holds no usable ticker."""
    layout = market.layout
    if layout is None:
        return market.ticker_files
    has = layout.lo >= 0
    if window is not None:
        lo, hi = window
        has &= layout.lo <= hi
        if lo is not None:
            has &= layout.hi >= lo
    return tuple(f for f, keep in zip(market.ticker_files, has, strict=True) if keep)


def moment_window(po: pd.DataFrame, tolerance_ns: int | None) -> tuple[int | None, int] | None:
    """The moments (ns) the join may read a ticker at for ``po``'s orders: from the earliest
    moment looked up less the quote age limit (no lower bound without one) to the latest
    moment (the longest markout horizon after the latest anchor); None: no moment."""
    from toolkit.report._market import naive_ns

    def ns(col: str, rows: Any = None) -> np.ndarray:
        if col not in po.columns:
            return np.array([], dtype="int64")
        t = naive_ns(po[col] if rows is None else po.loc[rows, col])
        return t[~np.isnat(t)].view("int64")

    first = [ns("createdAt"), ns("endedAt")]
    anchor = ns("markout_anchor", po["executed"].to_numpy(dtype=bool))
    lows = [a.min() for a in (*first, anchor) if len(a)]
    highs = [a.max() for a in first if len(a)]
    if len(anchor):
        highs.append(anchor.max() + max(MARKOUT_HORIZONS_S) * _NS)
        lows[-1] += min(MARKOUT_HORIZONS_S) * _NS
    if not lows:
        return None
    lo = int(min(lows))
    return (None if tolerance_ns is None else lo - tolerance_ns), int(max(highs))


def _moments(po: pd.DataFrame, pair_id: pd.Series) -> tuple[np.ndarray, ...]:
    """Every moment the join looks up: (order position, kind in :data:`KINDS`, pair id or
    -1, ns): creation, end, and each markout horizon after an executed order's anchor."""
    from toolkit.report._market import naive_ns

    sid = np.asarray(pair_id.fillna(-1).to_numpy(dtype="float64"), dtype="int64")
    ended = po["endedAt"] if "endedAt" in po.columns else pd.Series(pd.NaT, index=po.index)
    anchor = naive_ns(po["markout_anchor"])
    executed = po["executed"].to_numpy(dtype=bool) & ~np.isnat(anchor)
    rows, kinds, times = [], [], []
    for kind, at, has in (
        (0, naive_ns(po["createdAt"]), None),
        (1, naive_ns(ended), None),
        *((2 + i, anchor, executed) for i in range(len(MARKOUT_HORIZONS_S))),
    ):
        ok = ~np.isnat(at) if has is None else has
        rows.append(np.flatnonzero(ok))
        kinds.append(np.full(int(ok.sum()), kind, dtype="int64"))
        shift = 0 if kind < 2 else MARKOUT_HORIZONS_S[kind - 2] * _NS
        times.append(at[ok].view("int64") + shift)
    row = np.concatenate(rows)
    return row, np.concatenate(kinds), sid[row], np.concatenate(times)


def market_mids(
    po: pd.DataFrame,
    market: pd.DataFrame | RecordingMarket,
    max_quote_age: float | None,
) -> Mids | None:
    """The mids and arrival spreads of ``po``'s orders from ``market``; None when the
    market has no ticker the orders' pairs could use."""
    from toolkit.report._asof import Latest, backward
    from toolkit.report._engine import connection
    from toolkit.report._market import symbol_key

    tolerance = None if max_quote_age is None else round(max_quote_age * _NS)
    window = moment_window(po, tolerance)
    if window is None:
        return None
    with connection() as con:
        if isinstance(market, RecordingMarket):
            ticks = recording_ticks(con, market, window)
        else:
            ticks = frame_ticks(con, market)
        if ticks is None:
            return None
        lo, hi = window
        # only the tickers of the window (a moment outside it reads none of them) with a
        # price; the engine reads them where they lie, the lookup runs in numpy
        floor = "" if lo is None else f"t >= {lo} AND "
        rows: pa.Table = con.sql(
            f"SELECT symbol, t, mid, spread_bp, o1, o2, o3 FROM ({ticks.relation}) "
            f"WHERE {floor}t <= {hi} AND mid > 0"
        ).to_arrow_table()
    names = pd.Series(_distinct_text(rows.column("symbol")), dtype="str")
    # pairs compared without case or separators; one integer per pair
    ids = {k: i for i, k in enumerate(pd.unique(symbol_key(names)))}
    latest = Latest(rows, ids)
    del rows
    # each distinct pair of the orders keyed once, not once per order
    pairs = pd.Series(pd.unique(po["symbol"].to_numpy(dtype=object)), dtype="str")
    pair_ids = dict(zip(pairs, symbol_key(pairs).map(ids), strict=True))
    row, kind, sid, t = _moments(po, po["symbol"].map(pair_ids))
    found = backward(
        latest,
        sid,
        t,
        tolerance_ns=tolerance,
        span=(ticks.start, ticks.end),
        gaps=(ticks.gap_start, ticks.gap_end),
    )
    hit = found >= 0
    mids = np.full((len(KINDS), len(po)), np.nan)
    mids[kind[hit], row[hit]] = latest.mid[found[hit]]
    spread = np.full(len(po), np.nan)
    created = hit & (kind == 0)
    spread[row[created]] = latest.spread_bp[found[created]]
    return Mids(mids, spread)


def _distinct_text(column: Any) -> list[str]:
    """The distinct present values of a text column, in the order first seen."""
    import pyarrow.compute as pc

    return [v for v in pc.unique(column.combine_chunks()).to_pylist() if v is not None]
