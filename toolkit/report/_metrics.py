"""The metrics of the execution-quality report, as pandas tables computed from the order
frames (and an optional ticker recording); vectorised, tolerant of missing columns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import pandas as pd

from toolkit.report._definitions import (
    AT_QUOTE_TOLERANCE_BP,
    CHECK_TOLERANCE_BP,
    LATENCY_BUCKETS,
    MARKOUT_HORIZONS_S,
    OUTLIER_ABS_BP,
    OUTLIER_SIGMAS,
)


class FramesLike(Protocol):
    """What the report reads from ``OrderFrames`` (fees and fills are not needed)."""

    @property
    def orders(self) -> pd.DataFrame: ...

    @property
    def trades(self) -> pd.DataFrame: ...

    @property
    def evaluated_tickers(self) -> pd.DataFrame: ...


UTC_NS = "datetime64[ns, UTC]"
NONE_LABEL = "(none)"

EXECUTED_STATUSES = ("CLOSED", "EXECUTED")
MARKET_OUTCOMES = {
    "CLOSED": "closed",
    "REJECTED": "rejected",
    "EXPIRED": "expired",
    "PENDING": "in flight",
    "EXECUTED": "in flight",
}
LIMIT_OUTCOMES = {
    "EXECUTED": "executed",
    "CLOSED": "executed",
    "EXPIRED": "expired",
    "CANCELLED": "cancelled",
    "CANCELLING": "cancelled",
    "REJECTED": "rejected",
    "OPEN": "active",
    "TRIGGERED": "active",
    "PROCESSING": "active",
}

PER_ORDER_COLUMNS: dict[str, str] = {
    "orderId": "str",
    "symbol": "str",
    "side": "str",
    "sign": "float64",
    "type": "str",
    "status": "str",
    "outcome": "str",
    "exchange": "str",
    "venue": "str",
    "rule": "str",
    "channel": "str",
    "month": "str",
    "createdAt": UTC_NS,
    "executedAt": UTC_NS,
    "triggeredAt": UTC_NS,
    "executed": "bool",
    "average": "float64",
    "notional": "float64",
    "requested_notional": "float64",
    "quote": "float64",
    "quote_reason": "str",
    "quote_slippage_bp": "float64",
    "best_quote": "float64",
    "best_venue": "str",
    "best_quote_slippage_bp": "float64",
    "routing_outcome": "str",
    "best_venue_hit": "float64",
    "quotes_seen": "float64",
    "contingencies": "float64",
    "arrival_mid": "float64",
    "arrival_slippage_bp": "float64",
    **{f"markout_{h}s_bp": "float64" for h in MARKOUT_HORIZONS_S},
    "fee_cost": "float64",
    "fee_cripto": "float64",
    "fee_cripto_fiat": "float64",
    "venue_fee": "float64",
    "operational_fees": "float64",
    "fee_cost_bp": "float64",
    "fee_cripto_bp": "float64",
    "venue_fee_bp": "float64",
    "operational_bp": "float64",
    "fee_total_bp": "float64",
    "fee_rate": "float64",
    "tier_rate": "float64",
    "fee_rate_vs_tier_bp": "float64",
    "fill_rate": "float64",
    "tte_s": "float64",
    "tte_basis": "str",
    "reject_reason": "str",
}

# metric -> weight column of its aggregates (notional unless the definition says otherwise)
WEIGHTS: dict[str, str] = {
    "quote_slippage_bp": "notional",
    "best_quote_slippage_bp": "notional",
    "arrival_slippage_bp": "notional",
    "fee_total_bp": "notional",
    "fill_rate": "requested_notional",
    "best_venue_hit": "_one",
}


# ---------------------------------------------------------------- column helpers


def empty(columns: Mapping[str, str]) -> pd.DataFrame:
    """An empty table with the given typed columns."""
    return pd.DataFrame({c: pd.Series(dtype=_pandas_dtype(t)) for c, t in columns.items()})


def _pandas_dtype(name: str) -> Any:
    return name


def _num(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype="float64")
    col = df[name]
    try:
        # exact frames hold pyarrow decimals: float64 is what the metrics need
        return col.astype("float64")
    except (TypeError, ValueError):
        return pd.to_numeric(col.astype(object), errors="coerce").astype("float64")


def _text(df: pd.DataFrame, name: str, default: str = "") -> pd.Series:
    if name not in df.columns:
        return pd.Series(default, index=df.index, dtype="str")
    return df[name].astype("str").fillna(default)


def _time(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df.columns:
        return pd.Series(pd.NaT, index=df.index, dtype=UTC_NS)
    col = df[name]
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        col = pd.to_datetime(col, unit="ms", utc=True, errors="coerce")
    else:
        col = pd.to_datetime(col, utc=True, errors="coerce")
    return col.astype(_pandas_dtype(UTC_NS))


def _conform(df: pd.DataFrame, columns: Mapping[str, str]) -> pd.DataFrame:
    out = pd.DataFrame(index=df.index)
    for name, dtype in columns.items():
        if name in df.columns:
            out[name] = df[name].astype(_pandas_dtype(dtype))
        else:
            out[name] = pd.Series(np.nan, index=df.index).astype(_pandas_dtype(dtype))
    return out.reset_index(drop=True)


def _month(t: pd.Series) -> pd.Series:
    # strftime formats row by row; year and month as numbers stay vectorised
    ym = t.dt.year * 100 + t.dt.month
    text = (
        (ym // 100).astype("Int64").astype(str)
        + "-"
        + (ym % 100).astype("Int64").astype(str).str.zfill(2)
    )
    return text.where(t.notna(), NONE_LABEL)


def _naive_ns(t: pd.Series) -> Any:
    return t.to_numpy(dtype="datetime64[ns]")


def _symbol_key(s: pd.Series) -> pd.Series:
    return s.astype(str).str.upper().str.replace(r"[^A-Z0-9]", "", regex=True)


# ---------------------------------------------------------------- per order


def per_order(
    frames: FramesLike,
    market: pd.DataFrame | None = None,
    *,
    max_quote_age: float | None = 60.0,
) -> pd.DataFrame:
    """One row per order with every per-order metric (columns ``PER_ORDER_COLUMNS``)."""
    o = frames.orders
    if o is None or len(o) == 0:
        return empty(PER_ORDER_COLUMNS)
    o = o.reset_index(drop=True)
    side = _text(o, "side").str.lower()
    status = _text(o, "status").str.upper()
    otype = _text(o, "type", "market").str.lower().replace("", "market")
    exchange = _text(o, "exchange")
    executed_exchange = _text(o, "executedExchange")
    venue = executed_exchange.where(executed_exchange != "", exchange)
    created = _time(o, "createdAt")
    average = _num(o, "average")
    filled = _num(o, "filled")
    amount_original = _num(o, "amountOriginal")

    notional = _num(o, "cost")
    for fallback in (_num(o, "quoteAmount"), filled * average, _num(o, "amount") * average):
        notional = notional.where(notional > 0, fallback)
    executed = status.isin(EXECUTED_STATUSES) & (average > 0)
    notional = notional.where(executed & (notional > 0))
    requested = (amount_original * average).where(lambda s: s > 0, _num(o, "quoteAmountOriginal"))

    is_limit = otype == "limit"
    outcome = pd.Series(
        np.where(is_limit, status.map(LIMIT_OUTCOMES), status.map(MARKET_OUTCOMES)),
        index=o.index,
        dtype=object,
    )
    po = pd.DataFrame(
        {
            "orderId": _text(o, "id"),
            "symbol": _text(o, "symbol", NONE_LABEL),
            "side": side,
            "sign": side.map({"buy": 1.0, "sell": -1.0}).astype("float64"),
            "type": otype,
            "status": status,
            "outcome": outcome.where(outcome.notna(), "other"),
            "exchange": exchange,
            "venue": venue.replace("", NONE_LABEL),
            "rule": _text(o, "rule", NONE_LABEL).replace("", NONE_LABEL),
            "channel": _text(o, "channel", NONE_LABEL).replace("", NONE_LABEL),
            "month": _month(created),
            "createdAt": created,
            "executedAt": _time(o, "executedAt"),
            "triggeredAt": _time(o, "triggeredAt"),
            "executed": executed.astype(bool),
            "average": average.where(average > 0),
            "notional": notional,
            "requested_notional": requested,
        }
    )
    po = _add_quotes(po, frames.evaluated_tickers)
    po = _add_fees(po, o)
    po = _add_fills_and_latency(po, o, filled, amount_original)
    po = _add_market(po, market, max_quote_age)
    error = _text(o, "errorMessage")
    reason = _text(o, "statusReason")
    po["reject_reason"] = error.where(error != "", reason).replace("", NONE_LABEL)
    return _conform(po, PER_ORDER_COLUMNS)


def _add_quotes(po: pd.DataFrame, et: pd.DataFrame | None) -> pd.DataFrame:
    if et is None or len(et) == 0 or "orderId" not in et.columns:
        return po
    q = pd.DataFrame(
        {
            "orderId": _text(et, "orderId"),
            "rank": _num(et, "rank"),
            "exchange": _text(et, "exchange"),
            "price": _num(et, "price"),
            "reason": _text(et, "reason"),
        }
    )
    q = q[q["price"] > 0]
    g = q.assign(_has=(q["reason"] != "").astype("int64")).groupby("orderId")
    counts = pd.DataFrame({"quotes_seen": g.size(), "contingencies": g["_has"].sum()})
    po = po.merge(counts, how="left", left_on="orderId", right_index=True)

    ctx = po.loc[po["executed"], ["orderId", "venue", "sign", "average"]]
    own = q.merge(ctx, left_on=["orderId", "exchange"], right_on=["orderId", "venue"])
    own = own.sort_values(["orderId", "rank"], kind="stable").drop_duplicates("orderId")
    own = own.set_index("orderId")
    po["quote"] = po["orderId"].map(own["price"]).astype("float64")
    po["quote_reason"] = po["orderId"].map(own["reason"]).fillna("")
    po["quote_slippage_bp"] = po["sign"] * (po["average"] - po["quote"]) / po["quote"] * 1e4

    clean = q[q["reason"] == ""].merge(ctx[["orderId", "sign"]], on="orderId")
    # sign x price is smallest for the lowest buy quote and for the highest sell quote
    clean = clean.assign(_key=clean["sign"] * clean["price"])
    best = clean.sort_values(["orderId", "_key", "rank"], kind="stable").drop_duplicates("orderId")
    best = best.set_index("orderId")
    po["best_quote"] = po["orderId"].map(best["price"]).astype("float64")
    po["best_venue"] = po["orderId"].map(best["exchange"])
    bq = po["sign"] * (po["average"] - po["best_quote"]) / po["best_quote"] * 1e4
    po["best_quote_slippage_bp"] = bq
    po["routing_outcome"] = np.select(
        [bq < -AT_QUOTE_TOLERANCE_BP, bq <= AT_QUOTE_TOLERANCE_BP, bq > AT_QUOTE_TOLERANCE_BP],
        ["improved", "at", "worse"],
        default="",
    )
    po["routing_outcome"] = po["routing_outcome"].astype(object).replace("", np.nan)
    hit = (po["venue"] == po["best_venue"]).astype("float64")
    po["best_venue_hit"] = hit.where(po["best_venue"].notna() & po["executed"])
    return po


def _add_fees(po: pd.DataFrame, o: pd.DataFrame) -> pd.DataFrame:
    notional = po["notional"]
    po["fee_cost"] = _num(o, "fee.cost")
    po["fee_cripto"] = _num(o, "fee.cripto")
    # a crypto amount only meets fiat once priced at the order's own fill price
    po["fee_cripto_fiat"] = po["fee_cripto"] * po["average"]
    # fee.cost and fee.cripto are one fee in two units (cripto = cost / average in the
    # simulator): count fee.cost, and the converted crypto figure only in its absence
    po["venue_fee"] = po["fee_cost"].where(po["fee_cost"].notna(), po["fee_cripto_fiat"])
    po["operational_fees"] = _num(o, "operationalFees")
    po["fee_cost_bp"] = po["fee_cost"] / notional * 1e4
    po["fee_cripto_bp"] = po["fee_cripto_fiat"] / notional * 1e4
    po["venue_fee_bp"] = po["venue_fee"] / notional * 1e4
    po["operational_bp"] = po["operational_fees"] / notional * 1e4
    parts = po[["venue_fee_bp", "operational_bp"]]
    po["fee_total_bp"] = parts.sum(axis=1, min_count=1).where(notional > 0)
    po["fee_rate"] = _num(o, "fee.rate")
    po["tier_rate"] = _num(o, "fee.tierService.currentTierFeeRate")
    po["fee_rate_vs_tier_bp"] = (po["fee_rate"] - po["tier_rate"]) * 1e4
    return po


def _add_fills_and_latency(
    po: pd.DataFrame, o: pd.DataFrame, filled: pd.Series, amount_original: pd.Series
) -> pd.DataFrame:
    closed = po["status"] == "CLOSED"
    po["fill_rate"] = (filled / amount_original).where(closed & (amount_original > 0))
    triggered_known = (po["type"] == "limit") & po["triggeredAt"].notna()
    start = po["triggeredAt"].where(triggered_known, po["createdAt"])
    tte = (po["executedAt"] - start).dt.total_seconds()
    po["tte_s"] = tte.where(po["executed"])
    po["tte_basis"] = np.where(triggered_known, "triggeredAt", "createdAt")
    po.loc[po["tte_s"].isna(), "tte_basis"] = np.nan
    return po


def _mid_table(market: pd.DataFrame) -> pd.DataFrame:
    bid, ask, last = _num(market, "bid"), _num(market, "ask"), _num(market, "last")
    mid = ((bid + ask) / 2).where((bid > 0) & (ask > 0), last)
    # the ticker's service time (a recording keeps it as updated_at), else when it arrived
    t = _time(market, "timestamp")
    for fallback in ("updated_at", "received_at"):
        if fallback in market.columns:
            t = t.where(t.notna(), _time(market, fallback))
    # naive UTC nanoseconds: tz-aware values would leave numpy as slow Timestamp objects
    mk = pd.DataFrame(
        {"_sym": _symbol_key(_text(market, "symbol")), "_t": _naive_ns(t), "mid": mid}
    )
    mk = mk[mk["mid"] > 0].dropna(subset=["_t"])
    return mk.sort_values("_t", kind="stable").reset_index(drop=True)


def _add_market(
    po: pd.DataFrame, market: pd.DataFrame | None, max_quote_age: float | None
) -> pd.DataFrame:
    if market is None or len(market) == 0 or len(po) == 0:
        return po
    mk = _mid_table(market)
    if mk.empty:
        return po
    tolerance = None if max_quote_age is None else pd.Timedelta(seconds=max_quote_age)
    limit_anchor = po["triggeredAt"].where(po["triggeredAt"].notna(), po["executedAt"])
    anchor = po["createdAt"].where(po["type"] != "limit", limit_anchor)
    base = pd.DataFrame({"_row": po.index, "_sym": _symbol_key(po["symbol"])})
    targets = [base.assign(_h="arrival", _t=_naive_ns(po["createdAt"]))]
    targets += [
        base.assign(_h=str(h), _t=_naive_ns(anchor + pd.Timedelta(seconds=h)))
        for h in MARKOUT_HORIZONS_S
    ]
    left = pd.concat(targets, ignore_index=True)
    left = left[po["executed"].to_numpy()[left["_row"].to_numpy()]].dropna(subset=["_t"])
    left = left.sort_values("_t", kind="stable")
    if left.empty:
        return po
    # backward: the last ticker at or before the target time, never a later one
    got = pd.merge_asof(
        left, mk, on="_t", by="_sym", direction="backward", tolerance=tolerance
    ).dropna(subset=["mid"])
    mids = got.pivot_table(index="_row", columns="_h", values="mid", aggfunc="first")
    sign, avg = po["sign"], po["average"]

    def at(h: str) -> pd.Series:
        col = mids[h] if h in mids.columns else pd.Series(dtype="float64")
        return po.index.to_series().map(col).astype("float64")

    po["arrival_mid"] = at("arrival")
    po["arrival_slippage_bp"] = sign * (avg - po["arrival_mid"]) / po["arrival_mid"] * 1e4
    for h in MARKOUT_HORIZONS_S:
        m = at(str(h))
        po[f"markout_{h}s_bp"] = sign * (avg - m) / m * 1e4
    return po


# ---------------------------------------------------------------- aggregates

AGG_COLUMNS: dict[str, str] = {
    "orders": "int64",
    "executed": "int64",
    "notional": "float64",
    "quote_slippage_bp": "float64",
    "best_quote_slippage_bp": "float64",
    "best_venue_hit_rate": "float64",
    "arrival_slippage_bp": "float64",
    "fee_total_bp": "float64",
    "fill_rate": "float64",
    "median_tte_s": "float64",
}


def aggregate(po: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """The main metrics per group of ``by`` (all orders when empty), weighted per ``WEIGHTS``."""
    keys = list(by) or ["_all"]
    cols = {k: "str" for k in keys} | AGG_COLUMNS
    if po.empty:
        return empty(cols if by else AGG_COLUMNS)
    work = po.assign(_all="all", _one=1.0, _exec=po["executed"].astype("int64"))
    sums: dict[str, pd.Series] = {}
    for metric, weight in WEIGHTS.items():
        w = work[weight]
        ok = work[metric].notna() & (w > 0)
        work[f"_wx_{metric}"] = (work[metric] * w).where(ok)
        work[f"_w_{metric}"] = w.where(ok)
    g = work.groupby(keys, sort=True, dropna=False)
    sums["orders"] = g.size()
    sums["executed"] = g["_exec"].sum()
    sums["notional"] = g["notional"].sum(min_count=1)
    for metric in WEIGHTS:
        wx = g[f"_wx_{metric}"].sum(min_count=1)
        w = g[f"_w_{metric}"].sum(min_count=1)
        name = "best_venue_hit_rate" if metric == "best_venue_hit" else metric
        sums[name] = wx / w
    sums["median_tte_s"] = g["tte_s"].median()
    out = pd.DataFrame(sums).reset_index()
    if not by:
        out = out.drop(columns="_all")
    return _conform(out, cols if by else AGG_COLUMNS)


def summary(po: pd.DataFrame, trades: pd.DataFrame | None) -> pd.DataFrame:
    """Headline numbers: metric, value, unit, orders (how many orders the value rests on)."""
    cols = {"metric": "str", "value": "float64", "unit": "str", "orders": "int64"}
    a = aggregate(po)
    if a.empty:
        return empty(cols)
    row = a.iloc[0]
    ex = po[po["executed"]]
    tte = ex["tte_s"].dropna()
    maker = maker_share(trades, po)
    maker_all = maker[maker["venue"] == "(all)"]
    rows: list[tuple[str, float, str, int]] = [
        ("orders", float(row["orders"]), "count", int(row["orders"])),
        ("executed orders", float(row["executed"]), "count", int(row["executed"])),
        ("executed notional", float(row["notional"]), "fiat", int(row["executed"])),
        (
            "quote slippage",
            row["quote_slippage_bp"],
            "bp",
            int(ex["quote_slippage_bp"].notna().sum()),
        ),
        (
            "slippage vs best clean quote",
            row["best_quote_slippage_bp"],
            "bp",
            int(ex["best_quote_slippage_bp"].notna().sum()),
        ),
        (
            "best-venue hit rate",
            row["best_venue_hit_rate"],
            "share",
            int(ex["best_venue_hit"].notna().sum()),
        ),
        (
            "arrival slippage",
            row["arrival_slippage_bp"],
            "bp",
            int(ex["arrival_slippage_bp"].notna().sum()),
        ),
        (
            "fees (venue + operational)",
            row["fee_total_bp"],
            "bp",
            int(ex["fee_total_bp"].notna().sum()),
        ),
        ("fill rate", row["fill_rate"], "share", int(po["fill_rate"].notna().sum())),
        ("median time to execution", row["median_tte_s"], "s", int(tte.size)),
        (
            "p90 time to execution",
            float(tte.quantile(0.9)) if tte.size else np.nan,
            "s",
            int(tte.size),
        ),
        (
            "maker share (trades)",
            float(maker_all["maker_share"].iloc[0]) if len(maker_all) else np.nan,
            "share",
            int(maker_all["trades"].iloc[0]) if len(maker_all) else 0,
        ),
    ]
    return _conform(pd.DataFrame(rows, columns=list(cols)), cols)


def _stats(values: pd.Series, weights: pd.Series) -> dict[str, float]:
    ok = values.notna()
    v, w = values[ok], weights[ok]
    wok = w > 0
    return {
        "orders": float(ok.sum()),
        "notional": float(w[wok].sum()) if wok.any() else np.nan,
        "weighted_mean_bp": float((v[wok] * w[wok]).sum() / w[wok].sum()) if wok.any() else np.nan,
        "mean_bp": float(v.mean()) if len(v) else np.nan,
        "median_bp": float(v.median()) if len(v) else np.nan,
        "p10_bp": float(v.quantile(0.1)) if len(v) else np.nan,
        "p90_bp": float(v.quantile(0.9)) if len(v) else np.nan,
    }


SLIPPAGE_COLUMNS = {
    "metric": "str",
    "orders": "int64",
    "notional": "float64",
    "weighted_mean_bp": "float64",
    "mean_bp": "float64",
    "median_bp": "float64",
    "p10_bp": "float64",
    "p90_bp": "float64",
}


def slippage(po: pd.DataFrame) -> pd.DataFrame:
    """Distribution of each slippage measure: one row per measure that has data."""
    rows = []
    metrics = {
        "quote slippage": "quote_slippage_bp",
        "vs best clean quote": "best_quote_slippage_bp",
        "arrival slippage": "arrival_slippage_bp",
    }
    for label, col in metrics.items():
        if po[col].notna().any():
            rows.append({"metric": label, **_stats(po[col], po["notional"])})
    return _conform(pd.DataFrame(rows), SLIPPAGE_COLUMNS) if rows else empty(SLIPPAGE_COLUMNS)


def routing(po: pd.DataFrame) -> pd.DataFrame:
    """Shares of orders improved / at / worse than the best clean quote."""
    cols = {"outcome": "str", "orders": "int64", "share": "float64", "notional_share": "float64"}
    r = po.dropna(subset=["routing_outcome"])
    if r.empty:
        return empty(cols)
    g = r.groupby("routing_outcome")
    out = pd.DataFrame({"orders": g.size(), "notional": g["notional"].sum(min_count=1)})
    out = out.reindex(["improved", "at", "worse"], fill_value=0)
    out["share"] = out["orders"] / out["orders"].sum()
    out["notional_share"] = out["notional"] / out["notional"].sum()
    return _conform(out.rename_axis("outcome").reset_index(), cols)


def _shares(po: pd.DataFrame, key: str) -> pd.DataFrame:
    ex = po[po["executed"]]
    g = ex.groupby(key, sort=True)
    out = pd.DataFrame({"orders": g.size(), "notional": g["notional"].sum(min_count=1)})
    out["order_share"] = out["orders"] / out["orders"].sum()
    out["notional_share"] = out["notional"] / out["notional"].sum()
    return out.reset_index()


def venues(po: pd.DataFrame, trades: pd.DataFrame | None) -> pd.DataFrame:
    """Per venue: order and notional shares, best-venue hit rate, quote slippage, maker share."""
    cols = {
        "venue": "str",
        "orders": "int64",
        "order_share": "float64",
        "notional": "float64",
        "notional_share": "float64",
        "best_venue_hit_rate": "float64",
        "quote_slippage_bp": "float64",
        "maker_share": "float64",
    }
    if not po["executed"].any():
        return empty(cols)
    out = _shares(po, "venue")
    agg = aggregate(po[po["executed"]], ["venue"]).set_index("venue")
    out["best_venue_hit_rate"] = out["venue"].map(agg["best_venue_hit_rate"]).astype("float64")
    out["quote_slippage_bp"] = out["venue"].map(agg["quote_slippage_bp"]).astype("float64")
    maker = maker_share(trades, po).set_index("venue")
    out["maker_share"] = out["venue"].map(maker["maker_share"]).astype("float64")
    return _conform(out, cols)


def rules(po: pd.DataFrame) -> pd.DataFrame:
    """Per routing rule: order and notional shares of the executed orders."""
    cols = {
        "rule": "str",
        "orders": "int64",
        "order_share": "float64",
        "notional": "float64",
        "notional_share": "float64",
    }
    if not po["executed"].any():
        return empty(cols)
    return _conform(_shares(po, "rule"), cols)


def contingencies(et: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per venue contingency rate of its quotes, and the count of each reason."""
    cols = {"exchange": "str", "quotes": "int64", "contingencies": "int64", "rate": "float64"}
    rcols = {"exchange": "str", "reason": "str", "quotes": "int64", "share_of_venue": "float64"}
    if et is None or len(et) == 0:
        return empty(cols), empty(rcols)
    q = pd.DataFrame({"exchange": _text(et, "exchange", NONE_LABEL), "reason": _text(et, "reason")})
    q["has"] = (q["reason"] != "").astype("int64")
    g = q.groupby("exchange", sort=True)
    per = pd.DataFrame({"quotes": g.size(), "contingencies": g["has"].sum()})
    per["rate"] = per["contingencies"] / per["quotes"]
    counted = q[q["reason"] != ""].groupby(["exchange", "reason"], sort=True).size()
    r = counted.rename("quotes").reset_index()
    r["share_of_venue"] = r["quotes"] / r["exchange"].map(per["quotes"]).astype("float64")
    return _conform(per.reset_index(), cols), _conform(r, rcols)


def markouts(po: pd.DataFrame) -> pd.DataFrame:
    """Per horizon: orders with a mid, notional-weighted and median markout."""
    cols = {
        "horizon_s": "int64",
        "orders": "int64",
        "weighted_mean_bp": "float64",
        "median_bp": "float64",
    }
    rows = []
    for h in MARKOUT_HORIZONS_S:
        s = _stats(po[f"markout_{h}s_bp"], po["notional"])
        if s["orders"]:
            rows.append({"horizon_s": h, **s})
    return _conform(pd.DataFrame(rows), cols) if rows else empty(cols)


FEE_AMOUNTS = ("fee_cost", "fee_cripto_fiat", "venue_fee", "operational_fees")


def fees(po: pd.DataFrame) -> pd.DataFrame:
    """Per symbol: venue fee (fiat, and crypto at fill price, apart), operational fees, each
    in bp of the notional of the orders that carry it; fee rate against the tier rate."""
    cols = {
        "symbol": "str",
        "orders": "int64",
        "notional": "float64",
        "fee_cost": "float64",
        "fee_cost_bp": "float64",
        "fee_cripto": "float64",
        "fee_cripto_fiat": "float64",
        "fee_cripto_bp": "float64",
        "venue_fee": "float64",
        "venue_fee_bp": "float64",
        "operational_fees": "float64",
        "operational_bp": "float64",
        "fee_total_bp": "float64",
        "fee_rate": "float64",
        "tier_rate": "float64",
        "rate_vs_tier_bp": "float64",
        "orders_above_tier": "int64",
    }
    ex = po[po["executed"] & (po["notional"] > 0)]
    has_fee = ex[["fee_cost", "fee_cripto", "operational_fees", "fee_rate"]].notna().any(axis=1)
    ex = ex[has_fee]
    if ex.empty:
        return empty(cols)
    w = ex["notional"]
    extra: dict[str, pd.Series] = {
        "_above": (ex["fee_rate_vs_tier_bp"] > 1e-6).astype("int64"),
        "_wt": ex["fee_total_bp"] * w,
        "_wtw": w.where(ex["fee_total_bp"].notna()),
    }
    for col in (*FEE_AMOUNTS, "fee_rate", "tier_rate"):
        extra[f"_w_{col}"] = w.where(ex[col].notna())
        extra[f"_wx_{col}"] = ex[col] * w
    work = ex.assign(**extra)
    g = work.groupby("symbol", sort=True)
    out = pd.DataFrame(
        {
            "orders": g.size(),
            "notional": g["notional"].sum(min_count=1),
            "fee_cripto": g["fee_cripto"].sum(min_count=1),
            "orders_above_tier": g["_above"].sum(),
            "fee_total_bp": g["_wt"].sum(min_count=1) / g["_wtw"].sum(min_count=1),
        }
    )
    for col in FEE_AMOUNTS:
        out[col] = g[col].sum(min_count=1)
        bp = "operational_bp" if col == "operational_fees" else f"{col.removesuffix('_fiat')}_bp"
        out[bp] = out[col] / g[f"_w_{col}"].sum(min_count=1) * 1e4
    for col in ("fee_rate", "tier_rate"):
        out[col] = g[f"_wx_{col}"].sum(min_count=1) / g[f"_w_{col}"].sum(min_count=1)
    out["rate_vs_tier_bp"] = (out["fee_rate"] - out["tier_rate"]) * 1e4
    return _conform(out.reset_index(), cols)


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
    work = f.assign(_wx=f["fill_rate"] * w, _w=w, _full=(f["fill_rate"] >= 0.9999).astype(float))
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


def time_to_execution(po: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per order type and basis: median/p90/p99 seconds; and counts per latency bucket."""
    cols = {
        "type": "str",
        "basis": "str",
        "orders": "int64",
        "median_s": "float64",
        "p90_s": "float64",
        "p99_s": "float64",
        "mean_s": "float64",
    }
    bcols = {"type": "str", "bucket": "str", "orders": "int64", "share": "float64"}
    t = po[po["tte_s"] >= 0]
    if t.empty:
        return empty(cols), empty(bcols)
    g = t.groupby(["type", "tte_basis"], sort=True)["tte_s"]
    out = pd.DataFrame(
        {
            "orders": g.size(),
            "median_s": g.median(),
            "p90_s": g.quantile(0.9),
            "p99_s": g.quantile(0.99),
            "mean_s": g.mean(),
        }
    ).reset_index()
    out = out.rename(columns={"tte_basis": "basis"})
    edges = [b[0] for b in LATENCY_BUCKETS] + [np.inf]
    labels = [b[2] for b in LATENCY_BUCKETS]
    bucket = pd.cut(t["tte_s"], bins=edges, labels=labels, right=False)
    b = (
        pd.DataFrame({"type": t["type"], "bucket": bucket})
        .groupby(["type", "bucket"], observed=False, sort=True)
        .size()
        .rename("orders")
        .reset_index()
    )
    b["bucket"] = b["bucket"].astype(str).astype(object)
    b["share"] = b["orders"] / b.groupby("type")["orders"].transform("sum")
    return _conform(out, cols), _conform(b, bcols)


def maker_share(trades: pd.DataFrame | None, po: pd.DataFrame) -> pd.DataFrame:
    """Maker share of trades, by count and by cost, per venue of the order and overall."""
    cols = {
        "venue": "str",
        "trades": "int64",
        "maker_trades": "int64",
        "maker_share": "float64",
        "maker_cost_share": "float64",
    }
    if trades is None or len(trades) == 0 or "orderId" not in trades.columns:
        return empty(cols)
    t = pd.DataFrame(
        {
            "orderId": _text(trades, "orderId"),
            "maker": (_text(trades, "takerOrMaker").str.lower() == "maker").astype("int64"),
            "cost": _num(trades, "cost"),
        }
    )
    t["venue"] = t["orderId"].map(po.set_index("orderId")["venue"]).fillna(NONE_LABEL)
    t["maker_cost"] = t["cost"].where(t["maker"] == 1, 0.0)
    both = pd.concat([t, t.assign(venue="(all)")], ignore_index=True)
    g = both.groupby("venue", sort=True)
    out = pd.DataFrame(
        {
            "trades": g.size(),
            "maker_trades": g["maker"].sum(),
            "maker_cost": g["maker_cost"].sum(min_count=1),
            "cost": g["cost"].sum(min_count=1),
        }
    )
    out["maker_share"] = out["maker_trades"] / out["trades"]
    out["maker_cost_share"] = out["maker_cost"] / out["cost"]
    return _conform(out.reset_index(), cols)


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


CHECK_COLUMNS = {
    "orderId": "str",
    "check": "str",
    "value": "float64",
    "expected": "float64",
    "diff_bp": "float64",
    "detail": "str",
}


def data_checks(
    po: pd.DataFrame, orders: pd.DataFrame, trades: pd.DataFrame | None
) -> pd.DataFrame:
    """Orders whose numbers disagree with their trades, or whose slippage is an outlier."""
    found: list[pd.DataFrame] = []
    if trades is not None and len(trades) and "orderId" in trades.columns and len(orders):
        t = pd.DataFrame(
            {
                "orderId": _text(trades, "orderId"),
                "amount": _num(trades, "amount"),
                "cost": _num(trades, "cost"),
            }
        )
        g = t.groupby("orderId")
        agg = pd.DataFrame(
            {
                "amount": g["amount"].sum(min_count=1),
                "cost": g["cost"].sum(min_count=1),
                "n": g.size(),
            }
        )
        agg["vwap"] = agg["cost"] / agg["amount"].where(agg["amount"] > 0)
        # trade costs are rounded to cents: half a cent per trade is not an error
        slack_fiat = 0.005 * agg["n"] + 1e-9
        ids = _text(orders, "id")
        checks = {
            "average vs trades VWAP": (
                pd.Series(_num(orders, "average").to_numpy(), index=ids),
                agg["vwap"],
                slack_fiat / agg["amount"].where(agg["amount"] > 0),
            ),
            "quoteAmount vs sum of trade costs": (
                pd.Series(_num(orders, "quoteAmount").to_numpy(), index=ids),
                agg["cost"],
                slack_fiat,
            ),
        }
        for name, (value, expected, slack) in checks.items():
            v = value[~value.index.duplicated()].reindex(expected.index)
            diff = (v - expected) / expected.where(expected != 0) * 1e4
            bad = (diff.abs() > CHECK_TOLERANCE_BP) & ((v - expected).abs() > slack)
            if bad.any():
                found.append(
                    pd.DataFrame(
                        {
                            "orderId": expected.index[bad],
                            "check": name,
                            "value": v[bad].to_numpy(),
                            "expected": expected[bad].to_numpy(),
                            "diff_bp": diff[bad].to_numpy(),
                            "detail": f"differs by more than {CHECK_TOLERANCE_BP:g} bp",
                        }
                    )
                )
    neg = po[po["tte_s"] < 0]
    if len(neg):
        found.append(
            pd.DataFrame(
                {
                    "orderId": neg["orderId"],
                    "check": "negative time to execution",
                    "value": neg["tte_s"],
                    "detail": "executedAt before " + neg["tte_basis"].astype(str),
                }
            )
        )
    for col in ("quote_slippage_bp", "best_quote_slippage_bp", "arrival_slippage_bp"):
        found.extend(_outliers(po, col))
    if not found:
        return empty(CHECK_COLUMNS)
    return _conform(pd.concat(found, ignore_index=True), CHECK_COLUMNS)


def _outliers(po: pd.DataFrame, col: str) -> list[pd.DataFrame]:
    v = po[col]
    ok = v.dropna()
    if ok.empty:
        return []
    med = float(ok.median())
    sigma = 1.4826 * float((ok - med).abs().median())
    far = (v - med).abs() > OUTLIER_SIGMAS * sigma if sigma > 0 else pd.Series(False, index=v.index)
    bad = (v.abs() > OUTLIER_ABS_BP) | far
    bad = bad & v.notna()
    if not bad.any():
        return []
    detail = np.where(
        v[bad].abs() > OUTLIER_ABS_BP,
        f"|{col}| > {OUTLIER_ABS_BP:g} bp",
        f"beyond {OUTLIER_SIGMAS:g} robust sigmas ({sigma:.2f} bp) of the median {med:.2f} bp",
    )
    return [
        pd.DataFrame(
            {
                "orderId": po.loc[bad, "orderId"],
                "check": f"outlier {col}",
                "value": v[bad],
                "expected": med,
                "diff_bp": v[bad] - med,
                "detail": detail,
            }
        )
    ]


BREAKDOWN_DIMENSIONS: tuple[str, ...] = ("symbol", "side", "venue", "rule", "type", "month")


def breakdown(po: pd.DataFrame) -> pd.DataFrame:
    """The main metrics by each of symbol, side, venue, rule, order type and month."""
    cols = {"dimension": "str", "group": "str"} | AGG_COLUMNS
    if po.empty:
        return empty(cols)
    parts = []
    for dim in BREAKDOWN_DIMENSIONS:
        a = aggregate(po, [dim]).rename(columns={dim: "group"})
        a.insert(0, "dimension", dim)
        a["group"] = a["group"].astype(str).astype(object)
        parts.append(a)
    return _conform(pd.concat(parts, ignore_index=True), cols)


def all_tables(
    frames: FramesLike,
    market: pd.DataFrame | None = None,
    *,
    max_quote_age: float | None = 60.0,
) -> dict[str, pd.DataFrame]:
    """Every table of the report, by name; ``per_order`` holds the per-order metrics."""
    po = per_order(frames, market, max_quote_age=max_quote_age)
    trades = getattr(frames, "trades", None)
    et = getattr(frames, "evaluated_tickers", None)
    orders = frames.orders if frames.orders is not None else pd.DataFrame()
    cont, reasons = contingencies(et)
    tte, buckets = time_to_execution(po)
    return {
        "summary": summary(po, trades),
        "slippage": slippage(po),
        "routing": routing(po),
        "venues": venues(po, trades),
        "rules": rules(po),
        "contingencies": cont,
        "contingency_reasons": reasons,
        "markouts": markouts(po),
        "fees": fees(po),
        "fill_rate": fill_rate(po),
        "outcomes": outcomes(po),
        "funnel": funnel(po),
        "rejections": rejections(po),
        "time_to_execution": tte,
        "latency_buckets": buckets,
        "maker_share": maker_share(trades, po),
        "breakdown": breakdown(po),
        "data_checks": data_checks(po, orders, trades),
        "per_order": po,
    }
