"""Per-order routing metrics from ``evaluatedTickers`` (the executing venue's quote, the best
clean quote, the hit or miss of the best venue, ties at the best price being hits), and the
per-order fill rate and time to execution."""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.report._columns import _num, _text
from toolkit.report._definitions import AT_QUOTE_TOLERANCE_BP, FULL_FILL
from toolkit.report._quote_picks import quote_picks


def add_quotes(po: pd.DataFrame, quotes: pd.DataFrame | None) -> pd.DataFrame:
    """Quote metrics from ``quotes`` (``canonical_quotes``: the report's own column names):
    the executing venue's own quote (its first by rank), the best clean quote (buy: the
    lowest, sell: the highest; ties by rank), the overall best (any reason), the hit. The
    picks among the quotes run on the report's engine (``_quote_picks``). None: no usable
    quotes in the set (no quote column); an empty table: none for these orders."""
    if quotes is None:
        return po
    k = quote_picks(po, quotes)
    po["quotes_seen"] = k.seen
    po["contingencies"] = k.contingencies
    po["quote"] = k.own_price
    po["quote_reason"] = k.own_reason
    po["quote_slippage_bp"] = po["sign"] * (po["average"] - po["quote"]) / po["quote"] * 1e4
    if "quoted_at" in quotes.columns:
        age = po["executedAt"].to_numpy(dtype="datetime64[ns]") - k.own_at
        po["quote_age_s"] = age / np.timedelta64(1, "s")
    po["best_quote"] = k.best_price
    po["best_venue"] = k.best_venue
    po["overall_best_quote"] = k.all_price
    po["overall_best_venue"] = k.all_venue
    po["overall_best_reason"] = k.all_reason

    bq = po["sign"] * (po["average"] - po["best_quote"]) / po["best_quote"] * 1e4
    po["best_quote_slippage_bp"] = bq
    po["routing_outcome"] = np.select(
        [bq < -AT_QUOTE_TOLERANCE_BP, bq <= AT_QUOTE_TOLERANCE_BP, bq > AT_QUOTE_TOLERANCE_BP],
        ["improved", "at", "worse"],
        default="",
    )
    po["routing_outcome"] = po["routing_outcome"].astype(object).replace("", np.nan)
    # a hit: the executing venue offered a clean quote at the best price (a tie is a hit,
    # whichever of the tied venues the list names first)
    own_key = pd.Series(k.own_key, index=po.index)
    best_key = po["sign"] * po["best_quote"]
    tie = (own_key - best_key).abs() <= AT_QUOTE_TOLERANCE_BP * 1e-4 * po["best_quote"]
    hit = ((po["venue"] == po["best_venue"]) | tie).astype("float64")
    po["best_venue_hit"] = hit.where(po["best_venue"].notna() & po["executed"])
    return po


#: (upper bound s, label) of the buckets of the quote's age at execution
QUOTE_AGE_BUCKETS: tuple[tuple[float, str], ...] = (
    (1.0, "< 1 s"),
    (5.0, "1-5 s"),
    (30.0, "5-30 s"),
    (60.0, "30-60 s"),
    (np.inf, ">= 60 s"),
)


def quote_age(po: pd.DataFrame) -> pd.DataFrame:
    """Executed orders by the age of their venue's quote at execution (executedAt - the
    quote's time): orders, notional-weighted and median execution slippage."""
    from toolkit.report._columns import _conform, empty

    cols = {
        "type": "str",
        "quote_age": "str",
        "orders": "int64",
        "execution_bp": "float64",
        "median_bp": "float64",
    }
    d = po[po["executed"] & po["quote_slippage_bp"].notna()]
    if d.empty or "quote_age_s" not in d.columns or d["quote_age_s"].isna().all():
        return empty(cols)
    edges = [-np.inf] + [b for b, _ in QUOTE_AGE_BUCKETS]
    labels = [lbl for _, lbl in QUOTE_AGE_BUCKETS]
    bucket = pd.cut(d["quote_age_s"], bins=edges, labels=labels, right=False).astype(object)
    w = d["notional"].where(d["notional"] > 0)
    work = pd.DataFrame(
        {
            "type": d["type"],
            "quote_age": bucket.fillna("(unknown)"),
            "v": d["quote_slippage_bp"],
            "wx": d["quote_slippage_bp"] * w,
            "w": w,
        }
    )
    g = work.groupby(["type", "quote_age"], sort=False)
    out = pd.DataFrame(
        {
            "orders": g.size(),
            "execution_bp": g["wx"].sum(min_count=1) / g["w"].sum(min_count=1),
            "median_bp": g["v"].median(),
        }
    ).reset_index()
    order = {lbl: i for i, lbl in enumerate([*labels, "(unknown)"])}
    out = out.assign(_o=out["quote_age"].map(order)).sort_values(["type", "_o"])
    return _conform(out.drop(columns="_o"), cols)


def add_fills(
    po: pd.DataFrame, o: pd.DataFrame, filled: pd.Series, amount_original: pd.Series
) -> pd.DataFrame:
    """Fill rate of closed orders in the unit the order was denominated in, requested
    notional, and time to execution."""
    closed = po["status"] == "CLOSED"
    average = po["average"]
    by_amount = filled / amount_original.where(amount_original > 0)
    quote_original = _num(o, "quoteAmountOriginal")
    remaining_quote = _num(o, "remainingQuoteAmount")
    spent = (quote_original - remaining_quote).where(remaining_quote.notna(), po["notional"])
    by_quote = spent / quote_original.where(quote_original > 0)
    # an order requested in fiat has an estimated amountOriginal: its own unit is the fiat
    # one, so whichever ratio is the higher is the fill in the order's own unit
    rate = pd.concat([by_amount, by_quote], axis=1).max(axis=1, skipna=True).clip(upper=1.0)
    in_fiat = by_quote > by_amount.fillna(-1.0)
    basis = np.where(in_fiat, "quote amount", "amount")
    stated = _text(o, "filledStatus").str.lower() == "filled"
    rate = rate.where(~stated, 1.0)
    basis = np.where(stated, "filledStatus", basis)
    po["fill_rate"] = rate.where(closed & rate.notna())
    po["fill_basis"] = pd.Series(basis, index=po.index).where(po["fill_rate"].notna())
    by_amount_requested = (amount_original * average).where(lambda s: s > 0, quote_original)
    po["requested_notional"] = by_amount_requested.where(~in_fiat, quote_original)
    po["fully_filled"] = (
        (po["fill_rate"] >= FULL_FILL).astype("float64").where(po["fill_rate"].notna())
    )

    triggered_known = (po["type"] == "limit") & po["triggeredAt"].notna()
    start = po["triggeredAt"].where(triggered_known, po["createdAt"])
    tte = (po["executedAt"] - start).dt.total_seconds()
    po["tte_s"] = tte.where(po["executed"])
    po["tte_basis"] = np.where(triggered_known, "triggeredAt", "createdAt")
    po.loc[po["tte_s"].isna(), "tte_basis"] = np.nan
    return po
