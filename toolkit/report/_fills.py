"""Fill tables: fill rate, outcome shares, the limit-order funnel, maker share of trades and
rejection reasons."""

from __future__ import annotations

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


def maker_share(
    trades: pd.DataFrame | None, po: pd.DataFrame, by_order: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Maker share of trades, by count and by cost, per venue of the order and overall
    (``by_order``: :func:`maker_by_order` of ``trades``, when already computed)."""
    m = maker_by_order(trades) if by_order is None else by_order
    if m.empty:
        return empty(MAKER_COLUMNS)
    # each order's venue (its first row's), by position: a hash of the ids, not a join;
    # grouped by the venue's number, then named and sorted (the same groups, same order)
    at = positions(m.index.to_series(), po["orderId"])
    codes, labels = text_codes(po["venue"], at, NONE_LABEL)
    per = m[list(MAKER_SUMS)].groupby(codes, sort=True).sum(min_count=1)
    per.index = pd.Index(labels[per.index.to_numpy()], dtype="str")
    per = per.sort_index()
    per.loc["(all)"] = per.sum(min_count=1)
    per = per.sort_index()
    out = per.assign(
        maker_share=per["maker_trades"] / per["trades"],
        maker_cost_share=per["maker_cost"] / per["cost"],
    )
    return _conform(out.rename_axis("venue").reset_index(), MAKER_COLUMNS)


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
