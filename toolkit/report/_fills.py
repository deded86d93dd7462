"""Fill tables: fill rate, outcome shares, the limit-order funnel, maker share of trades and
rejection reasons."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from toolkit.report._columns import NONE_LABEL, _conform, _num, _text, empty


def fill_rate(po: pd.DataFrame) -> pd.DataFrame:
    """Per order type: fill rate by requested notional and by count, share fully filled."""
    cols = {
        "type": "str",
        "orders": "int64",
        "weighted_fill_rate": "float64",
        "mean_fill_rate": "float64",
        "fully_filled_share": "float64",
    }
    f = po.dropna(subset=["fill_rate"])
    if f.empty:
        return empty(cols)
    w = f["requested_notional"].where(f["requested_notional"] > 0)
    work = f.assign(_wx=f["fill_rate"] * w, _w=w, _full=f["fully_filled"])
    g = work.groupby("type", sort=True)
    out = pd.DataFrame(
        {
            "orders": g.size(),
            "weighted_fill_rate": g["_wx"].sum(min_count=1) / g["_w"].sum(min_count=1),
            "mean_fill_rate": g["fill_rate"].mean(),
            "fully_filled_share": g["_full"].mean(),
        }
    )
    return _conform(out.reset_index(), cols)


def outcomes(po: pd.DataFrame) -> pd.DataFrame:
    """Per order type: orders and share of each outcome."""
    cols = {"type": "str", "outcome": "str", "orders": "int64", "share": "float64"}
    if po.empty:
        return empty(cols)
    out = po.groupby(["type", "outcome"], sort=True).size().rename("orders").reset_index()
    out["share"] = out["orders"] / out.groupby("type")["orders"].transform("sum")
    return _conform(out, cols)


def funnel(po: pd.DataFrame) -> pd.DataFrame:
    """Limit orders: created, then how many triggered/executed/expired/cancelled/rejected."""
    cols = {"stage": "str", "orders": "int64", "share": "float64"}
    lim = po[po["type"] == "limit"]
    if lim.empty:
        return empty(cols)
    n = len(lim)
    counts = lim["outcome"].value_counts()
    triggered = lim["triggeredAt"].notna() | (lim["outcome"] == "executed")
    rows = [
        ("created", n),
        ("triggered (known)", int(triggered.sum())),
        ("executed", int(counts.get("executed", 0))),
        ("expired", int(counts.get("expired", 0))),
        ("cancelled", int(counts.get("cancelled", 0))),
        ("rejected", int(counts.get("rejected", 0))),
        ("active", int(counts.get("active", 0))),
    ]
    out = pd.DataFrame(rows, columns=["stage", "orders"])
    out["share"] = out["orders"] / n
    return _conform(out, cols)


MAKER_COLUMNS = {
    "venue": "str",
    "trades": "int64",
    "maker_trades": "int64",
    "maker_share": "float64",
    "maker_cost_share": "float64",
}


#: the sums per order of maker_by_order
MAKER_SUMS = ("trades", "maker_trades", "cost", "maker_cost")


def maker_by_order(trades: pd.DataFrame | None) -> pd.DataFrame:
    """Per orderId: trades, maker trades, their cost and the makers' cost."""
    cols = ["trades", "maker_trades", "cost", "maker_cost"]
    if trades is None or len(trades) == 0 or "orderId" not in trades.columns:
        return pd.DataFrame(columns=cols, dtype="float64")
    maker = (_text(trades, "takerOrMaker").str.lower() == "maker").to_numpy()
    cost = _num(trades, "cost").to_numpy()
    t = pd.DataFrame(
        {
            "orderId": _text(trades, "orderId").to_numpy(),
            "trades": 1,
            "maker_trades": maker.astype("int64"),
            "cost": cost,
            "maker_cost": np.where(maker, cost, 0.0),
        }
    )
    return t.groupby("orderId", sort=False)[cols].sum(min_count=1)


def positions(needles: pd.Series, haystack: pd.Series) -> np.ndarray:
    """Where each text of ``needles`` first occurs in ``haystack`` (-1: nowhere), hashed by
    Arrow over the texts as they are, without a Python object per row."""
    import pyarrow.compute as pc

    from toolkit.report._engine import arrow_text

    found = pc.index_in(arrow_text(needles), value_set=arrow_text(haystack))
    return np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype="int64")


def text_codes(values: pd.Series, at: np.ndarray, missing: str) -> tuple[np.ndarray, np.ndarray]:
    """The texts of ``values`` at positions ``at`` (``missing`` at -1 or a missing value)
    as numbers into their distinct texts: (numbers, texts), never a text per row."""
    codes, uniques = pd.factorize(values)
    names = np.append(np.asarray(uniques, dtype=object).astype(str), missing)
    # a value spelled like ``missing`` is the same label: one number for both
    merged, labels = pd.factorize(names)
    picked = np.where(at >= 0, codes[np.maximum(at, 0)], -1) if len(codes) else np.full(len(at), -1)
    picked = np.where(picked >= 0, picked, len(names) - 1)
    return merged[picked], np.asarray(labels, dtype=object)


class MakerSums(NamedTuple):
    """The makers' sums (:data:`MAKER_SUMS`) per order type and venue of their order:
    ``frame`` has ``type`` (``""``: none, or no order of the set), ``venue``
    (:data:`NONE_LABEL`: none, or no order) and the sums; a few rows, whatever the set."""

    frame: pd.DataFrame


def maker_sums(by_order: pd.DataFrame, po: pd.DataFrame) -> MakerSums:
    """:class:`MakerSums` of ``by_order`` (:func:`maker_by_order`), each order's type and
    venue those of its first row of ``po``."""
    if by_order.empty:
        return MakerSums(pd.DataFrame(columns=["type", "venue", *MAKER_SUMS]))
    # each order's venue and type (its first row's), by position: a hash of the ids, not
    # a join; grouped by their numbers, then named (never a text per trade's order)
    at = positions(by_order.index.to_series(), po["orderId"])
    venue, venues = text_codes(po["venue"], at, NONE_LABEL)
    kind, kinds = text_codes(_text(po, "type"), at, "")
    per = by_order[list(MAKER_SUMS)].groupby([kind, venue], sort=True).sum(min_count=1)
    k, v = (per.index.get_level_values(i).to_numpy() for i in (0, 1))
    per.index = pd.MultiIndex.from_arrays(
        [pd.Index(kinds[k], dtype="str"), pd.Index(venues[v], dtype="str")],
        names=["type", "venue"],
    )
    return MakerSums(per.reset_index())


def maker_sums_of_parts(makers: Sequence[Path], per_order: Sequence[Path]) -> MakerSums:
    """:class:`MakerSums` of the makers' parts, each order's type and venue read from the
    per-order parts, summed by the report's engine (a few rows come back, never the
    makers or the orders)."""
    import pyarrow.parquet as pq

    from toolkit.report._engine import connection

    # a part without makers (no trades) may lack the orderId column
    makers = [
        p
        for p in makers
        if (meta := pq.ParquetFile(p).metadata).num_rows and "orderId" in meta.schema.names
    ]
    if not makers:
        return maker_sums(maker_by_order(None), pd.DataFrame())

    def files(paths: Sequence[Path]) -> str:
        return "[" + ", ".join("'" + os.fspath(p).replace("'", "''") + "'" for p in paths) + "]"

    def num(c: str) -> str:
        return f'sum(CASE WHEN isnan(m."{c}") THEN NULL ELSE m."{c}" END) AS "{c}"'

    sql = (
        f"SELECT coalesce(CAST(p.type AS VARCHAR), '') AS type, "
        f"coalesce(CAST(p.venue AS VARCHAR), '{NONE_LABEL}') AS venue, "
        "CAST(sum(m.trades) AS BIGINT) AS trades, "
        "CAST(sum(m.maker_trades) AS BIGINT) AS maker_trades, "
        f"{num('cost')}, {num('maker_cost')} "
        f"FROM read_parquet({files(makers)}, union_by_name = true) AS m "
        f'LEFT JOIN (SELECT "orderId", type, venue FROM read_parquet({files(per_order)}, '
        'union_by_name = true)) AS p ON m."orderId" = p."orderId" GROUP BY ALL'
    )
    with connection() as con:
        got = con.sql(sql).to_arrow_table().to_pandas()
    return MakerSums(got)


def _shares(sums: pd.DataFrame) -> pd.DataFrame:
    """:data:`MAKER_COLUMNS` of makers' sums per venue (``venue`` and :data:`MAKER_SUMS`)."""
    if sums.empty:
        return empty(MAKER_COLUMNS)
    per = sums.groupby("venue", sort=True)[list(MAKER_SUMS)].sum(min_count=1)
    per.index = pd.Index(per.index, dtype="str")
    per.loc["(all)"] = per.sum(min_count=1)
    per = per.sort_index()
    out = per.assign(
        maker_share=per["maker_trades"] / per["trades"],
        maker_cost_share=per["maker_cost"] / per["cost"],
    )
    return _conform(out.rename_axis("venue").reset_index(), MAKER_COLUMNS)


def maker_share(
    trades: pd.DataFrame | None,
    po: pd.DataFrame,
    by_order: pd.DataFrame | MakerSums | None = None,
    *,
    order_type: str | None = None,
) -> pd.DataFrame:
    """Maker share of trades, by count and by cost, per venue of the order and overall
    (``by_order``: :func:`maker_by_order` of ``trades``, or their :class:`MakerSums`,
    when already computed); ``order_type``: of that type's orders only."""
    if isinstance(by_order, MakerSums):
        sums = by_order.frame
    else:
        m = maker_by_order(trades) if by_order is None else by_order
        sums = maker_sums(m, po).frame
    if order_type is not None:
        sums = sums[sums["type"] == order_type]
    return _shares(sums)


def rejections(po: pd.DataFrame) -> pd.DataFrame:
    """Rejected orders per type and reason (errorMessage, else statusReason)."""
    cols = {"type": "str", "reason": "str", "orders": "int64", "share": "float64"}
    r = po[po["status"] == "REJECTED"]
    if r.empty:
        return empty(cols)
    out = r.groupby(["type", "reject_reason"], sort=True).size().rename("orders").reset_index()
    out = out.rename(columns={"reject_reason": "reason"})
    out["share"] = out["orders"] / out.groupby("type")["orders"].transform("sum")
    return _conform(out.sort_values(["type", "orders"], ascending=[True, False]), cols)
