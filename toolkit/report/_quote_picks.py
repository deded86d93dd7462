"""The per-order picks among the quotes of ``evaluatedTickers``, on the report's engine
(DuckDB): how many quotes and contingencies, the executing venue's own quote (its first by
rank), the best clean quote and the best of all (buy: the lowest, sell: the highest; ties by
rank, then by the quotes' order), and the executing venue's best clean quote."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

#: the quotes' order in the list breaks every remaining tie (as a stable sort would)
_BEST = "key NULLS LAST, rank NULLS LAST, idx"
_FIRST = "rank NULLS LAST, idx"

_PICKS = f"""
WITH q AS (
    SELECT o.row, q.idx, q.price, q.rank, q.exchange, q.reason, q.quoted_at,
           o.sign * q.price AS key, q.reason <> '' AS has_reason,
           o.executed, o.executed AND q.exchange = o.venue AS own
    FROM quotes q JOIN orders o ON o.orderId = q.orderId
    WHERE q.price > 0
)
SELECT row,
    count(*) AS seen,
    count(*) FILTER (WHERE has_reason) AS contingencies,
    first(price ORDER BY {_FIRST}) FILTER (WHERE own) AS own_price,
    first(reason ORDER BY {_FIRST}) FILTER (WHERE own) AS own_reason,
    first(quoted_at ORDER BY {_FIRST}) FILTER (WHERE own) AS own_at,
    first(price ORDER BY {_BEST}) FILTER (WHERE executed AND NOT has_reason) AS best_price,
    first(exchange ORDER BY {_BEST}) FILTER (WHERE executed AND NOT has_reason) AS best_venue,
    first(price ORDER BY {_BEST}) FILTER (WHERE executed) AS all_price,
    first(exchange ORDER BY {_BEST}) FILTER (WHERE executed) AS all_venue,
    first(reason ORDER BY {_BEST}) FILTER (WHERE executed) AS all_reason,
    first(key ORDER BY key NULLS LAST, idx) FILTER (WHERE own AND NOT has_reason) AS own_key
FROM q
GROUP BY row
"""


class Picks(NamedTuple):
    """Per order, in the order of ``po`` (NaN, NaT, "" or None where none)."""

    seen: np.ndarray  # quotes with a positive price
    contingencies: np.ndarray
    own_price: np.ndarray
    own_reason: np.ndarray  # object, "" where none
    own_at: np.ndarray  # datetime64[ns]
    best_price: np.ndarray
    best_venue: np.ndarray  # object, None where none
    all_price: np.ndarray
    all_venue: np.ndarray
    all_reason: np.ndarray  # object, "" where none
    own_key: np.ndarray


def quote_picks(po: pd.DataFrame, quotes: pd.DataFrame) -> Picks:
    """The picks of ``po``'s orders among ``quotes`` (``canonical_quotes``)."""
    import pyarrow as pa

    from toolkit.report._engine import arrow_text, connection
    from toolkit.report._market_join import _ns

    n = len(po)

    text = arrow_text

    def num(s: pd.Series) -> pa.Array:
        return pa.array(s.to_numpy(dtype="float64"), from_pandas=True)

    orders = pa.table(
        {
            "row": pa.array(np.arange(n, dtype="int64")),
            "orderId": text(po["orderId"]),
            "executed": pa.array(po["executed"].to_numpy(dtype=bool)),
            "sign": num(po["sign"]),
            "venue": text(po["venue"]),
        }
    )
    table = pa.table(
        {
            "idx": pa.array(np.arange(len(quotes), dtype="int64")),
            "orderId": text(quotes["orderId"]),
            "rank": num(quotes["rank"]),
            "exchange": text(quotes["exchange"]),
            "price": num(quotes["price"]),
            "reason": text(quotes["reason"]),
            "quoted_at": _ns(quotes["quoted_at"].to_numpy(dtype="datetime64[ns]")),
        }
    )
    with connection() as con:
        con.register("orders", orders)
        con.register("quotes", table)
        got: pa.Table = con.sql(_PICKS).to_arrow_table()
    row = got.column("row").to_numpy()

    def floats(name: str) -> np.ndarray:
        out = np.full(n, np.nan)
        out[row] = got.column(name).to_numpy(zero_copy_only=False)
        return out

    def texts(name: str, fill: str | None) -> np.ndarray:
        out = np.full(n, fill, dtype=object)
        col = got.column(name)
        # a null string leaves Arrow as None
        out[row] = (col if fill is None else col.fill_null(fill)).to_numpy(zero_copy_only=False)
        return out

    at = np.full(n, np.datetime64("NaT"), dtype="datetime64[ns]")
    at_ns = got.column("own_at")
    at[row] = np.where(
        at_ns.is_null().to_numpy(zero_copy_only=False),
        np.datetime64("NaT", "ns"),
        at_ns.fill_null(0).to_numpy().astype("int64").view("datetime64[ns]"),
    )
    return Picks(
        seen=floats("seen"),
        contingencies=floats("contingencies"),
        own_price=floats("own_price"),
        own_reason=texts("own_reason", ""),
        own_at=at,
        best_price=floats("best_price"),
        best_venue=texts("best_venue", None),
        all_price=floats("all_price"),
        all_venue=texts("all_venue", None),
        all_reason=texts("all_reason", ""),
        own_key=floats("own_key"),
    )
