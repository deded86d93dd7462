"""The per-order table: one row per order with every per-order metric (quotes, fees, fills,
latency, arrival mid and markouts), the base every other table of the report reads."""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

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
from toolkit.report._decomposition import add_decomposition
from toolkit.report._limits import add_limit_columns, add_limit_mids
from toolkit.report._market import MarketLike, add_market
from toolkit.report._quotes import canonical_quotes
from toolkit.report._routing import add_fills, add_quotes


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


#: the order columns the per-order code and its data checks read (an engine reads no other)
ORDER_FIELDS = (
    *("id", "side", "status", "type", "exchange", "executedExchange", "symbol", "rule"),
    *("channel", "createdAt", "updatedAt", "executedAt", "triggeredAt", "expiresAt"),
    *("cancelRequestedAt", "filled", "average", "cost", "amount", "amountOriginal"),
    *("quoteAmount", "quoteAmountOriginal", "remainingQuoteAmount", "filledStatus"),
    *("limitPrice", "fee.cost", "fee.cripto", "fee.rate", "fee.tierService.currentTierFeeRate"),
    *("operationalFees", "errorMessage", "statusReason"),
)
#: the trade columns they read (``id`` tells a trade loaded twice)
TRADE_FIELDS = ("orderId", "id", "amount", "cost", "timestamp", "fee.cost", "fee.cripto")
#: and those the makers read
MAKER_FIELDS = ("takerOrMaker",)


def _month(t: pd.Series) -> pd.Series:
    # strftime formats row by row; year and month as numbers stay vectorised
    ym = t.dt.year * 100 + t.dt.month
    text = (
        (ym // 100).astype("Int64").astype(str)
        + "-"
        + (ym % 100).astype("Int64").astype(str).str.zfill(2)
    )
    return text.where(t.notna(), NONE_LABEL)


def quote_currency(symbol: pd.Series) -> pd.Series:
    """The quote currency of ``BASE/QUOTE`` symbols (``BRL`` of ``BTC/BRL``); empty if none."""
    # a few symbols over many orders: split each distinct one once
    names = symbol.astype(object)
    quote = {v: [*str(v).upper().split("/", 1), ""][1] for v in pd.unique(names)}
    return names.map(quote).astype(object)


class Deduplicated(NamedTuple):
    """The frames with one row per order id (the latest ``updatedAt``, else the last row),
    each trade and each quote once, and how many order rows were dropped."""

    orders: pd.DataFrame
    trades: pd.DataFrame | None
    evaluated_tickers: pd.DataFrame | None
    quote_fields: Any
    duplicate_orders: pd.Series  # orderId -> rows dropped


def deduplicate(frames: FramesLike | Deduplicated) -> Deduplicated:
    """Overlapping loads concatenated give the same order twice: keep its latest state."""
    if isinstance(frames, Deduplicated):
        return frames
    o = frames.orders if frames.orders is not None else pd.DataFrame()
    trades = getattr(frames, "trades", None)
    et = getattr(frames, "evaluated_tickers", None)
    fields = getattr(frames, "quote_fields", None)
    dropped = pd.Series(dtype="int64")
    if len(o) and "id" in o.columns:
        ids = _text(o, "id")
        dup = ids.duplicated(keep=False)
        if dup.any():
            dropped = ids[dup].value_counts().sub(1).astype("int64")
            order = pd.DataFrame({"id": ids, "u": _time(o, "updatedAt"), "n": np.arange(len(o))})
            order = order.sort_values(["id", "u", "n"], kind="stable", na_position="first")
            keep = order.drop_duplicates("id", keep="last")["n"].sort_values().to_numpy()
            o = o.iloc[keep]
    o = o.reset_index(drop=True)
    if trades is not None and len(trades):
        key = [c for c in ("orderId", "id") if c in trades.columns]
        if len(key) == 2:
            trades = trades.drop_duplicates(key, keep="last").reset_index(drop=True)
    if et is not None and len(et) and len(dropped):
        # the quotes of an order loaded twice are there twice
        et = et.drop_duplicates(keep="last").reset_index(drop=True)
    return Deduplicated(o, trades, et, fields, dropped)


def trade_totals(trades: pd.DataFrame | None) -> pd.DataFrame:
    """Per orderId: trade count, sum of amounts and costs, VWAP, last trade time, and the
    sums of the trade fees (``fee.cost``, ``fee.cripto``)."""
    cols = ["n", "amount", "cost", "vwap", "last_at", "fee_cost", "fee_cripto"]
    if trades is None or len(trades) == 0 or "orderId" not in trades.columns:
        return pd.DataFrame(columns=cols)
    t = pd.DataFrame(
        {
            "orderId": _text(trades, "orderId"),
            "amount": _num(trades, "amount"),
            "cost": _num(trades, "cost"),
            "at": _time(trades, "timestamp"),
            "fee_cost": _num(trades, "fee.cost"),
            "fee_cripto": _num(trades, "fee.cripto"),
        }
    )
    g = t.groupby("orderId", sort=False)
    out = pd.DataFrame(
        {
            "n": g.size(),
            "amount": g["amount"].sum(min_count=1),
            "cost": g["cost"].sum(min_count=1),
            "last_at": g["at"].max(),
            "fee_cost": g["fee_cost"].sum(min_count=1),
            "fee_cripto": g["fee_cripto"].sum(min_count=1),
        }
    )
    out["vwap"] = out["cost"] / out["amount"].where(out["amount"] > 0)
    return out[cols]


def per_order(
    frames: FramesLike | Deduplicated,
    market: MarketLike | None = None,
    *,
    max_quote_age: float | None = 60.0,
) -> pd.DataFrame:
    """One row per order id with every per-order metric (columns ``PER_ORDER_COLUMNS``).

    Parameters
    ----------
    frames : OrderFrames or alike
        ``orders`` (required), ``trades`` and ``evaluated_tickers``; an order id present
        twice counts once, at its latest ``updatedAt``.
    market : DataFrame, optional
        Ticker rows (and ``_session`` rows) of a recording, for arrival and markouts.
    max_quote_age : float or None
        Seconds; an older ticker is no price at that moment (None: no limit).

    Returns
    -------
    DataFrame
        Typed as ``PER_ORDER_COLUMNS``, one row per order.
    """
    d = deduplicate(frames)
    return order_metrics(d, canonical_quotes(d), market, max_quote_age=max_quote_age)


def order_metrics(
    d: Deduplicated,
    quotes: pd.DataFrame | None,
    market: MarketLike | None = None,
    *,
    max_quote_age: float | None = 60.0,
) -> pd.DataFrame:
    """:func:`per_order` of deduplicated frames whose quotes (``canonical_quotes``) are
    given: a chunk of a larger set has them as the set decides (quotes usable or not)."""
    o = d.orders
    if len(o) == 0:
        return empty(PER_ORDER_COLUMNS)
    side = _text(o, "side").str.lower()
    status = _text(o, "status").str.upper()
    otype = _text(o, "type", "market").str.lower().replace("", "market")
    exchange = _text(o, "exchange")
    executed_exchange = _text(o, "executedExchange")
    venue = executed_exchange.where(executed_exchange != "", exchange)
    created = _time(o, "createdAt")
    ids = _text(o, "id")
    tt = trade_totals(d.trades)
    filled = _num(o, "filled")
    # an order without an average price is priced from its trades, else cost / filled
    stated = _num(o, "average")
    from_trades = ids.map(tt["vwap"]).astype("float64")
    from_cost = _num(o, "cost") / filled.where(filled > 0)
    average = stated.where(stated > 0, from_trades.where(from_trades > 0, from_cost))
    average_source = np.select(
        [stated > 0, from_trades > 0, from_cost > 0], ["order", "trades VWAP", "cost / filled"], ""
    )
    amount_original = _num(o, "amountOriginal")

    notional = _num(o, "cost")
    for fallback in (_num(o, "quoteAmount"), filled * average, _num(o, "amount") * average):
        notional = notional.where(notional > 0, fallback)
    executed = status.isin(EXECUTED_STATUSES) & (average > 0)
    notional = notional.where(executed & (notional > 0))

    is_limit = otype == "limit"
    outcome = pd.Series(
        np.where(is_limit, status.map(LIMIT_OUTCOMES), status.map(MARKET_OUTCOMES)),
        index=o.index,
        dtype=object,
    )
    symbol = _text(o, "symbol", NONE_LABEL)
    po = pd.DataFrame(
        {
            "orderId": ids,
            "symbol": symbol,
            "currency": quote_currency(symbol),
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
            "hour": (created.dt.hour.astype("Int64").astype(str).str.zfill(2) + "h").where(
                created.notna(), NONE_LABEL
            ),
            "createdAt": created,
            "executedAt": _time(o, "executedAt"),
            "triggeredAt": _time(o, "triggeredAt"),
            "executed": executed.astype(bool),
            "average": average.where(average > 0),
            "average_source": pd.Series(average_source, index=o.index).where(executed, ""),
            "notional": notional,
        }
    )
    po = add_quotes(po, quotes)
    po = _add_fees(po, o)
    po = add_fills(po, o, filled, amount_original)
    po = add_limit_columns(po, o)
    trade_time = tt["last_at"] if len(tt) else None
    po = add_market(po, market, max_quote_age, trade_time)
    po = add_limit_mids(po)
    po = add_decomposition(po)
    error = _text(o, "errorMessage")
    reason = _text(o, "statusReason")
    po["reject_reason"] = error.where(error != "", reason).replace("", NONE_LABEL)
    return _conform(po, PER_ORDER_COLUMNS)


def _add_fees(po: pd.DataFrame, o: pd.DataFrame) -> pd.DataFrame:
    notional = po["notional"]
    po["fee_cost"] = _num(o, "fee.cost")
    po["fee_cripto"] = _num(o, "fee.cripto")
    # a crypto amount only meets fiat once priced at the order's own fill price
    po["fee_cripto_fiat"] = po["fee_cripto"] * po["average"]
    # fee.cost and fee.cripto are one fee in two units (cripto = cost / average in the
    # simulator): count fee.cost, and the converted crypto figure only when fee.cost is
    # missing or zero ("0.00" beside a crypto fee says the fee was charged in crypto)
    cost_fee, cripto_fee = po["fee_cost"], po["fee_cripto_fiat"]
    po["venue_fee"] = cost_fee.where(
        (cost_fee > 0) | ~(cripto_fee > 0), cripto_fee.where(cripto_fee > 0)
    )
    po["venue_fee_source"] = np.select(
        [cost_fee > 0, cripto_fee > 0, cost_fee.notna()],
        ["fee.cost", "fee.cripto x average", "fee.cost"],
        "",
    )
    po["operational_fees"] = _num(o, "operationalFees")
    po["venue_fee_bp"] = po["venue_fee"] / notional * 1e4
    po["operational_bp"] = po["operational_fees"] / notional * 1e4
    parts = po[["venue_fee_bp", "operational_bp"]]
    po["fee_total_bp"] = parts.sum(axis=1, min_count=1).where(notional > 0)
    amounts = po[["venue_fee", "operational_fees"]]
    po["fee_amount"] = amounts.sum(axis=1, min_count=1).where(notional > 0)
    po["fee_rate"] = _num(o, "fee.rate")
    po["tier_rate"] = _num(o, "fee.tierService.currentTierFeeRate")
    po["fee_rate_vs_tier_bp"] = (po["fee_rate"] - po["tier_rate"]) * 1e4
    return po
