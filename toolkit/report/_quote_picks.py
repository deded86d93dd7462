"""The per-order picks among the quotes of ``evaluatedTickers``, on the report's engine
(DuckDB): how many quotes and contingencies, the executing venue's own quote (its first by
rank), the best clean quote and the best of all (buy: the lowest, sell: the highest; ties by
rank, then by the quotes' order), and the executing venue's best clean quote."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

#: the quotes' order in the list breaks every remaining tie (as a stable sort would); a
#: missing rank or price key sorts last
_BEST = "struct_pack(k := key, r := rank, i := idx)"
_FIRST = "struct_pack(r := rank, i := idx)"
_OWN_KEY = "struct_pack(k := key, i := idx)"

# each pick is the position of a quote (fixed-size states: the grouping can spill to disk);
# its price, venue, reason and time are read from the quotes by that position
_PICKS = f"""
WITH q AS (
    SELECT o.row, q.idx, q.rank, o.sign * q.price AS key, q.reason <> '' AS has_reason,
           o.executed, o.executed AND q.exchange = o.venue AS own
    FROM quotes q JOIN orders o ON o.orderId = q.orderId
    WHERE q.price > 0
)
SELECT row,
    count(*) AS seen,
    count(*) FILTER (WHERE has_reason) AS contingencies,
    arg_min_null(idx, {_FIRST}) FILTER (WHERE own) AS own,
    arg_min_null(idx, {_BEST}) FILTER (WHERE executed AND NOT has_reason) AS best,
    arg_min_null(idx, {_BEST}) FILTER (WHERE executed) AS overall,
    arg_min_null(idx, {_OWN_KEY}) FILTER (WHERE own AND NOT has_reason) AS own_clean
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

    def counts(name: str) -> np.ndarray:
        out = np.full(n, np.nan)
        out[row] = got.column(name).to_numpy(zero_copy_only=False)
        return out

    def pick(name: str) -> tuple[np.ndarray, np.ndarray]:
        """(positions in po, quote positions) of the orders with that pick."""
        col = got.column(name)
        has = ~col.is_null().to_numpy(zero_copy_only=False)
        return row[has], col.fill_null(0).to_numpy().astype("int64")[has]

    def floats(at: tuple[np.ndarray, np.ndarray], values: np.ndarray) -> np.ndarray:
        out = np.full(n, np.nan)
        out[at[0]] = values[at[1]]
        return out

    def texts(at: tuple[np.ndarray, np.ndarray], values: np.ndarray, fill: object) -> np.ndarray:
        out = np.full(n, fill, dtype=object)
        out[at[0]] = values[at[1]]
        return out

    price = quotes["price"].to_numpy(dtype="float64")
    exchange = quotes["exchange"].to_numpy(dtype=object)
    reason = quotes["reason"].to_numpy(dtype=object)
    own, best, overall, own_clean = (pick(c) for c in ("own", "best", "overall", "own_clean"))
    at = np.full(n, np.datetime64("NaT"), dtype="datetime64[ns]")
    at[own[0]] = quotes["quoted_at"].to_numpy(dtype="datetime64[ns]")[own[1]]
    sign = po["sign"].to_numpy(dtype="float64")
    own_key = np.full(n, np.nan)
    own_key[own_clean[0]] = sign[own_clean[0]] * price[own_clean[1]]
    return Picks(
        seen=counts("seen"),
        contingencies=counts("contingencies"),
        own_price=floats(own, price),
        own_reason=texts(own, reason, ""),
        own_at=at,
        best_price=floats(best, price),
        best_venue=texts(best, exchange, None),
        all_price=floats(overall, price),
        all_venue=texts(overall, exchange, None),
        all_reason=texts(overall, reason, ""),
        own_key=own_key,
    )
