"""The per-order table: one row per order with every per-order metric (quotes, fees, fills,
latency, arrival mid and markouts), the base every other table of the report reads."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pandas as pd

from toolkit.report._columns import (
    NONE_LABEL,
    PER_ORDER_COLUMNS,
    _conform,
    _num,
    _text,
    _time,
    empty,
)
from toolkit.report._definitions import AT_QUOTE_TOLERANCE_BP, MARKOUT_HORIZONS_S
from toolkit.report._quotes import canonical_quotes


class FramesLike(Protocol):
    """What the report reads from ``OrderFrames`` (fees and fills are not needed)."""

    @property
    def orders(self) -> pd.DataFrame: ...

    @property
    def trades(self) -> pd.DataFrame: ...

    @property
    def evaluated_tickers(self) -> pd.DataFrame: ...


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
    po = _add_quotes(po, canonical_quotes(frames))
    po = _add_fees(po, o)
    po = _add_fills_and_latency(po, o, filled, amount_original)
    po = _add_market(po, market, max_quote_age)
    error = _text(o, "errorMessage")
    reason = _text(o, "statusReason")
    po["reject_reason"] = error.where(error != "", reason).replace("", NONE_LABEL)
    return _conform(po, PER_ORDER_COLUMNS)


def _add_quotes(po: pd.DataFrame, quotes: pd.DataFrame | None) -> pd.DataFrame:
    """Quote metrics from ``quotes`` (``canonical_quotes``: the report's own column names)."""
    if quotes is None or len(quotes) == 0:
        return po
    q = quotes[quotes["price"] > 0]
    g = q.assign(_has=(q["reason"] != "").astype("int64")).groupby("orderId")
    counts = pd.DataFrame({"quotes_seen": g.size(), "contingencies": g["_has"].sum()})
    po = po.merge(counts, how="left", left_on="orderId", right_index=True)

    ctx = po.loc[po["executed"], ["orderId", "venue", "sign", "average"]]
    own = q.merge(ctx, left_on=["orderId", "exchange"], right_on=["orderId", "venue"])
    own = own.sort_values(["orderId", "rank"], kind="stable").drop_duplicates("orderId")
    own = own.set_index("orderId")
    po["quote"] = po["orderId"].map(own["price"]).astype("float64")
    po["quote_reason"] = po["orderId"].map(own["reason"]).astype(object).fillna("")
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
