"""The report's core metrics as portable SQL, written once (DuckDB's dialect) and run on
DuckDB as it is and on Spark through SQLGlot: per order the arrival mid and spread, the
markouts and the quote slippage, and per venue the orders, notional and mean costs.

The inputs are views the engine defines over the files (:class:`Sources`); their columns
are brought to one typed shape here (:func:`staging`), every time as BIGINT nanoseconds, so
the core query needs no engine's time functions. The ASOF join of the report (the last
ticker at or before a moment) is a window: the moments and the tickers of a pair in one
sorted stream, each moment taking the last ticker before it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from toolkit.report._definitions import MARKOUT_HORIZONS_S

_NS = 1_000_000_000

#: how a column of a file holds a time: a Parquet timestamp (any unit), nanoseconds as a
#: 64-bit integer (Spark's reading of old recordings), or absent (NULL)
TimeKind = Literal["timestamp", "ns", "absent"]

#: the columns each input is brought to: name -> (SQL type, the file's column)
ORDER_COLUMNS: dict[str, tuple[str, str]] = {
    "id": ("VARCHAR", "id"),
    "symbol": ("VARCHAR", "symbol"),
    "side": ("VARCHAR", "side"),
    "type": ("VARCHAR", "type"),
    "status": ("VARCHAR", "status"),
    "exchange": ("VARCHAR", "exchange"),
    "executed_exchange": ("VARCHAR", "executedExchange"),
    "average": ("DOUBLE", "average"),
    "cost": ("DOUBLE", "cost"),
    "filled": ("DOUBLE", "filled"),
    "quote_amount": ("DOUBLE", "quoteAmount"),
    "amount": ("DOUBLE", "amount"),
    "created": ("TIME", "createdAt"),
    "executed_at": ("TIME", "executedAt"),
    "updated": ("TIME", "updatedAt"),
}
TRADE_COLUMNS: dict[str, tuple[str, str]] = {
    "order_id": ("VARCHAR", "orderId"),
    "amount": ("DOUBLE", "amount"),
    "cost": ("DOUBLE", "cost"),
    "traded": ("TIME", "timestamp"),
}
QUOTE_COLUMNS: dict[str, tuple[str, str]] = {
    "order_id": ("VARCHAR", "orderId"),
    "rank": ("DOUBLE", "rank"),
    "exchange": ("VARCHAR", "exchange"),
    "price": ("DOUBLE", "price"),
    "reason": ("VARCHAR", "reason"),
}
TICK_COLUMNS: dict[str, tuple[str, str]] = {
    "symbol": ("VARCHAR", "symbol"),
    "updated": ("TIME", "updated_at"),
    "received": ("TIME", "received_at"),
    "bid": ("DOUBLE", "bid"),
    "ask": ("DOUBLE", "ask"),
    "last": ("DOUBLE", "last"),
    "connection_id": ("VARCHAR", "connection_id"),
    "seq": ("BIGINT", "seq"),
}

#: the per-order columns :func:`core_sql` gives, in order
PER_ORDER = (
    "orderId",
    "symbol",
    "side",
    "type",
    "venue",
    "executed",
    "average",
    "notional",
    "quote",
    "best_quote",
    "quote_slippage_bp",
    "best_quote_slippage_bp",
    "arrival_mid",
    "arrival_spread_bp",
    *(f"markout_{h}s_bp" for h in MARKOUT_HORIZONS_S),
)
#: the per-venue columns :func:`venues_sql` gives
VENUES = ("venue", "orders", "notional", "quote_slippage_bp", "best_quote_slippage_bp")


@dataclass(frozen=True)
class Source:
    """One view the engine defined over files, and how each needed column is found in it:
    ``kinds`` maps a file column to its :data:`TimeKind` (time columns) or ``"value"``;
    a column not in ``kinds`` is absent from the files."""

    view: str
    kinds: Mapping[str, str]


@dataclass(frozen=True)
class Sources:
    """Everything the core query reads: the export's three files, the recording's ticker
    files (one source per group of files with one schema) and its gaps, None without."""

    orders: Source
    trades: Source | None
    quotes: Source | None
    ticks: Sequence[Source]
    gaps: str | None  # a view of (gs, ge) BIGINT ns, disjoint or not
    span: tuple[int, int] | None  # the first and last moments the session rows saw


def quoted(name: str) -> str:
    """``name`` as a DuckDB identifier (SQLGlot gives Spark its backticks)."""
    return '"' + name.replace('"', '""') + '"'


def staging(source: Source, columns: Mapping[str, tuple[str, str]]) -> str:
    """A SELECT of ``source`` with ``columns`` (output name -> (type, file column)): text
    and numbers cast, every time as BIGINT nanoseconds, an absent column NULL."""
    parts = []
    for name, (kind, column) in columns.items():
        got = source.kinds.get(column)
        col = quoted(column)
        if kind == "TIME":
            if got == "timestamp":
                expr = f"epoch_ns({col})"
            elif got == "ns":
                expr = f"CAST({col} AS BIGINT)"
            else:
                expr = "CAST(NULL AS BIGINT)"
        elif got is None:
            expr = f"CAST(NULL AS {kind})"
        else:
            expr = f"CAST({col} AS {kind})"
        parts.append(f"{expr} AS {quoted(name)}")
    return f"SELECT {', '.join(parts)} FROM {source.view}"


def symbol_key(column: str) -> str:
    """Pairs compared without case or separators (``btc/brl`` = ``BTC-BRL``), as the
    report's ``symbol_key``."""
    return f"regexp_replace(upper({column}), '[^A-Z0-9]', '', 'g')"


def _bp(price: str) -> str:
    # the report's formula, operation for operation: sign * (average - p) / p * 1e4
    return f"sign * (average - {price}) / {price} * 1e4"


def _orders(sources: Sources) -> str:
    trades = (
        staging(sources.trades, TRADE_COLUMNS)
        if sources.trades
        else "SELECT CAST(NULL AS VARCHAR) AS order_id, CAST(NULL AS DOUBLE) AS amount, "
        "CAST(NULL AS DOUBLE) AS cost, CAST(NULL AS BIGINT) AS traded WHERE 1 = 0"
    )
    return f"""
    src AS ({staging(sources.orders, ORDER_COLUMNS)}),
    -- an id present twice counts once, at its latest updatedAt
    ord AS (
        SELECT * FROM (
            SELECT src.*, row_number() OVER (
                PARTITION BY id ORDER BY updated DESC NULLS LAST) AS dup
            FROM src
        ) d WHERE dup = 1
    ),
    tt AS (
        SELECT order_id, sum(amount) AS amount, sum(cost) AS cost, max(traded) AS last_at
        FROM ({trades}) t GROUP BY order_id
    ),
    priced AS (
        SELECT ord.*,
            CASE WHEN lower(side) = 'buy' THEN 1.0 WHEN lower(side) = 'sell' THEN -1.0
                END AS sign,
            CASE WHEN coalesce(lower(type), '') = '' THEN 'market' ELSE lower(type) END
                AS otype,
            CASE WHEN coalesce(executed_exchange, '') <> '' THEN executed_exchange
                WHEN coalesce(exchange, '') <> '' THEN exchange ELSE '(none)' END AS venue,
            CASE WHEN ord.average > 0 THEN ord.average
                WHEN tt.cost / CASE WHEN tt.amount > 0 THEN tt.amount END > 0
                    THEN tt.cost / CASE WHEN tt.amount > 0 THEN tt.amount END
                ELSE ord.cost / CASE WHEN filled > 0 THEN filled END END AS avg_any,
            coalesce(executed_at, tt.last_at) AS anchor
        FROM ord LEFT JOIN tt ON tt.order_id = ord.id
    ),
    o AS (
        SELECT id, symbol, side, otype, venue, sign, created, anchor,
            {symbol_key("symbol")} AS key,
            coalesce(upper(status) IN ('CLOSED', 'EXECUTED') AND avg_any > 0, FALSE)
                AS executed,
            CASE WHEN avg_any > 0 THEN avg_any END AS average,
            CASE WHEN upper(status) IN ('CLOSED', 'EXECUTED') AND avg_any > 0 THEN
                CASE WHEN cost > 0 THEN cost WHEN quote_amount > 0 THEN quote_amount
                    WHEN filled * avg_any > 0 THEN filled * avg_any
                    ELSE amount * avg_any END END AS notional_any
        FROM priced
    )"""


def _quotes(sources: Sources) -> str:
    if sources.quotes is None:
        return """,
    picks AS (SELECT CAST(NULL AS VARCHAR) AS id, CAST(NULL AS DOUBLE) AS quote,
        CAST(NULL AS DOUBLE) AS best_quote WHERE 1 = 0)"""
    # the chosen venue's own quote: its first by rank; the best clean quote (no
    # contingency reason): buy the lowest, sell the highest price
    return f""",
    q AS (
        SELECT o.id, o.sign, qs.rank, qs.price, qs.exchange = o.venue AS own,
            coalesce(qs.reason, '') = '' AS clean
        FROM ({staging(sources.quotes, QUOTE_COLUMNS)}) qs
        JOIN o ON o.id = qs.order_id
        WHERE qs.price > 0 AND o.executed
    ),
    own AS (
        SELECT id, price AS quote FROM (
            SELECT id, price, row_number() OVER (
                PARTITION BY id ORDER BY rank ASC NULLS LAST, price ASC) AS n
            FROM q WHERE own
        ) r WHERE n = 1
    ),
    best AS (
        SELECT id, min(sign * price) * min(sign) AS best_quote FROM q
        WHERE clean GROUP BY id
    ),
    picks AS (
        SELECT coalesce(own.id, best.id) AS id, own.quote, best.best_quote
        FROM own FULL OUTER JOIN best ON own.id = best.id
    )"""


def _ticks(sources: Sources) -> str:
    groups = " UNION ALL ".join(f"({staging(s, TICK_COLUMNS)})" for s in sources.ticks)
    two_sided = "bid > 0 AND ask > 0 AND ask >= bid"
    return f""",
    raw AS (
        SELECT symbol, coalesce(updated, received) AS t, received AS o1,
            connection_id AS o2, seq AS o3, bid, ask, last
        FROM ({groups}) g
    ),
    tk AS (
        SELECT key, t, o1, o2, o3, mid,
            -- a one-sided quote has no spread: -1, never NULL (the window skips NULLs)
            coalesce(spread, -1.0) AS spread
        FROM (
            SELECT {symbol_key("symbol")} AS key, t, o1, o2, o3,
                CASE WHEN {two_sided} THEN (bid + ask) / 2 ELSE last END AS mid,
                CASE WHEN {two_sided} THEN (ask - bid) / ((bid + ask) / 2) * 1e4 END
                    AS spread
            FROM raw WHERE symbol IS NOT NULL
        ) p
        WHERE mid > 0 AND t IS NOT NULL
    ),
    bounds AS (
        SELECT min(lo) AS lo, max(hi) AS hi FROM (
            SELECT min(t) AS lo, max(t) AS hi FROM raw
            UNION ALL SELECT min(o1), max(o1) FROM raw
            {_span_row(sources.span)}
        ) b
    )"""


def _span_row(span: tuple[int, int] | None) -> str:
    if span is None:
        return ""
    return f"UNION ALL SELECT CAST({span[0]} AS BIGINT), CAST({span[1]} AS BIGINT)"


#: how the ASOF join is written: "window" (moments and tickers of a pair in one sorted
#: stream; any age; the faster on DuckDB, but one task per pair on Spark) or "buckets"
#: (an equi-join on the pair and a time bucket as wide as max_quote_age, then the latest
#: candidate; needs a limit; spreads over every task of a cluster)
Asof = Literal["window", "buckets"]


def _asof_window() -> str:
    # at one time, tickers before moments; of tickers at one time, the one read last is
    # last (received_at, connection, seq, as the report's read order)
    window = (
        "PARTITION BY key ORDER BY t ASC, kind ASC, o1 ASC NULLS FIRST, o2 ASC NULLS LAST, "
        "o3 ASC NULLS LAST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    )
    return f"""
    ev AS (
        SELECT key, t, 0 AS kind, o1, o2, o3, t AS tick_t, mid, spread,
            CAST(NULL AS VARCHAR) AS id, CAST(NULL AS INTEGER) AS h
        FROM tk
        UNION ALL
        SELECT key, t, 1 AS kind, CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR),
            CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE),
            CAST(NULL AS DOUBLE), id, h
        FROM tg
    ),
    found AS (
        SELECT id, h, t,
            last_value(tick_t IGNORE NULLS) OVER ({window}) AS tick_t,
            last_value(mid IGNORE NULLS) OVER ({window}) AS mid,
            last_value(spread IGNORE NULLS) OVER ({window}) AS spread
        FROM ev
    )"""


def _asof_buckets(tolerance_ns: int) -> str:
    # a ticker serves the moments of its own bucket and of the next: every ticker at most
    # one bucket's width older than a moment is a candidate; the latest one (its time,
    # then the read order) wins
    width = max(tolerance_ns, _NS)
    latest = "tk.t DESC, tk.o1 DESC NULLS LAST, tk.o2 DESC NULLS FIRST, tk.o3 DESC NULLS FIRST"
    return f"""
    tb AS (
        SELECT key, t, o1, o2, o3, mid, spread, t // {width} AS b FROM tk
        UNION ALL
        SELECT key, t, o1, o2, o3, mid, spread, t // {width} + 1 AS b FROM tk
    ),
    cand AS (
        SELECT tg.id, tg.h, tg.t, tk.t AS tick_t, tk.mid, tk.spread,
            row_number() OVER (PARTITION BY tg.id, tg.h ORDER BY {latest}) AS n
        FROM tg JOIN tb tk ON tk.key = tg.key AND tk.b = tg.t // {width}
        WHERE tk.t <= tg.t AND tg.t - tk.t <= {tolerance_ns}
    ),
    found AS (SELECT id, h, t, tick_t, mid, spread FROM cand WHERE n = 1)"""


def _mids(sources: Sources, tolerance_ns: int | None, asof: Asof) -> str:
    horizons = [
        f"SELECT id, key, {1 + i} AS h, anchor + {int(h) * _NS} AS t FROM o "
        "WHERE executed AND anchor IS NOT NULL"
        for i, h in enumerate(MARKOUT_HORIZONS_S)
    ]
    arrival = "SELECT id, key, 0 AS h, created AS t FROM o WHERE executed AND created IS NOT NULL"
    moments = " UNION ALL ".join([arrival, *horizons])
    fresh = "" if tolerance_ns is None else f"AND w.t - w.tick_t <= {tolerance_ns}"
    if asof == "buckets" and tolerance_ns is not None:
        found = _asof_buckets(tolerance_ns)
    else:
        found = _asof_window()
    # no gap of the recording between the ticker used and the moment
    gap_join = (
        f"LEFT JOIN {sources.gaps} g ON g.gs <= hit.t AND g.ge >= hit.tick_t"
        if sources.gaps
        else ""
    )
    gap_ok = "WHERE g.gs IS NULL" if sources.gaps else ""
    pivot = ", ".join(
        f"max(CASE WHEN h = {i} THEN mid END) AS m{i}" for i in range(1 + len(MARKOUT_HORIZONS_S))
    )
    return f""",
    tg AS ({moments}),{found},
    hit AS (
        SELECT w.* FROM found w CROSS JOIN bounds b
        WHERE w.id IS NOT NULL AND w.tick_t IS NOT NULL AND w.t BETWEEN b.lo AND b.hi {fresh}
    ),
    ok AS (SELECT hit.* FROM hit {gap_join} {gap_ok}),
    mids AS (
        SELECT id, {pivot},
            max(CASE WHEN h = 0 AND spread >= 0 THEN spread END) AS spread
        FROM ok GROUP BY id
    )"""


def core_sql(sources: Sources, max_quote_age: float | None, asof: Asof | None = None) -> str:
    """The per-order query (columns :data:`PER_ORDER`, sorted by orderId) in DuckDB's
    dialect; ``max_quote_age`` in seconds (None: no limit); ``asof`` how the join is
    written (default the window; buckets need a limit)."""
    market = bool(sources.ticks)
    tolerance = None if max_quote_age is None else round(max_quote_age * _NS)
    if asof is None or tolerance is None:
        asof = "window"
    ctes = _orders(sources) + _quotes(sources)
    if market:
        ctes += _ticks(sources) + _mids(sources, tolerance, asof)
    mids = ["m.m0", "m.spread"] + [f"m.m{1 + i}" for i in range(len(MARKOUT_HORIZONS_S))]
    if not market:
        mids = ["CAST(NULL AS DOUBLE)"] * len(mids)
    markouts = [
        f"{_bp(m)} AS {quoted(f'markout_{h}s_bp')}"
        for m, h in zip(mids[2:], MARKOUT_HORIZONS_S, strict=True)
    ]
    join = "LEFT JOIN mids m ON m.id = o.id" if market else ""
    return f"""WITH {ctes}
    SELECT o.id AS {quoted("orderId")}, symbol, side, otype AS type, venue, executed,
        average, CASE WHEN notional_any > 0 THEN notional_any END AS notional,
        p.quote, p.best_quote,
        {_bp("p.quote")} AS quote_slippage_bp,
        {_bp("p.best_quote")} AS best_quote_slippage_bp,
        {mids[0]} AS arrival_mid, {mids[1]} AS arrival_spread_bp,
        {", ".join(markouts)}
    FROM o LEFT JOIN picks p ON p.id = o.id {join}
    ORDER BY {quoted("orderId")}"""


def venues_sql(per_order: str) -> str:
    """Per venue of the executed orders of the view ``per_order``: orders, notional and
    the notional-weighted quote and best-quote slippage (as the report's ``venues``)."""

    def weighted(metric: str) -> str:
        ok = f"{metric} IS NOT NULL AND notional > 0"
        return (
            f"sum(CASE WHEN {ok} THEN {metric} * notional END) / "
            f"sum(CASE WHEN {ok} THEN notional END) AS {metric}"
        )

    return f"""SELECT venue, count(*) AS orders, sum(notional) AS notional,
        {weighted("quote_slippage_bp")}, {weighted("best_quote_slippage_bp")}
    FROM {per_order} WHERE executed GROUP BY venue ORDER BY venue"""


def to_spark(sql: str) -> str:
    """``sql`` (DuckDB's dialect) in Spark's: SQLGlot's transpilation, and nanoseconds of
    a timestamp as Spark counts them (microseconds times 1000)."""
    import sqlglot
    from sqlglot import exp

    def rewrite(node: exp.Expression) -> exp.Expression:
        name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
        if name == "epoch_ns" or (isinstance(node, exp.Func) and node.sql_name() == "EPOCH_NS"):
            arg = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
            micros = exp.Anonymous(this="unix_micros", expressions=[arg.copy()])
            return exp.Mul(this=exp.cast(micros, "BIGINT"), expression=exp.Literal.number(1000))
        return node

    tree = sqlglot.parse_one(sql, read="duckdb").transform(rewrite)
    return tree.sql(dialect="spark")
