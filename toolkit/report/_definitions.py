"""Definitions of every metric of the execution-quality report, in words, and the layout of
its sections; the HTML report and the notebook view print them next to the numbers."""

from __future__ import annotations

from typing import NamedTuple

#: horizons of the markouts, in seconds from the anchor time
MARKOUT_HORIZONS_S: tuple[int, ...] = (-60, -20, 0, 20, 60, 120)

#: (lower bound s, upper bound s, label) of the time-to-execution buckets; lower inclusive
LATENCY_BUCKETS: tuple[tuple[float, float, str], ...] = (
    (0.0, 1.0, "0-1 s"),
    (1.0, 10.0, "1-10 s"),
    (10.0, 30.0, "10-30 s"),
    (30.0, 60.0, "30-60 s"),
    (60.0, 300.0, "1-5 min"),
    (300.0, float("inf"), "> 5 min"),
)

#: an order priced within this many bp of the best clean quote counts as "at" the quote
AT_QUOTE_TOLERANCE_BP = 0.01
#: |slippage| above this is an outlier whatever the spread of the sample
OUTLIER_ABS_BP = 500.0
#: |slippage - median| above this many robust sigmas (1.4826 x MAD) is an outlier
OUTLIER_SIGMAS = 5.0
#: data checks tolerate this much relative difference (bp) before flagging an order
CHECK_TOLERANCE_BP = 1.0

CONVENTIONS = (
    "All price effects are in basis points (bp, 1/10,000) with positive = cost to the "
    "client. side = +1 for a buy and -1 for a sell. Aggregates are weighted by the executed "
    "notional (the order's cost, else quoteAmount, else filled x average) unless a "
    "definition says otherwise. Executed orders are those with status CLOSED or EXECUTED "
    "and a positive average price. The venue of an order is executedExchange when present, "
    "else exchange."
)


class Definition(NamedTuple):
    title: str
    text: str


DEFINITIONS: dict[str, Definition] = {
    "quote_slippage": Definition(
        "Quote slippage",
        "side x (average - quote) / quote x 1e4, where quote is the price the executing "
        "venue offered in evaluatedTickers (its first entry in the list). Orders without "
        "a quote from their venue are left out.",
    ),
    "best_quote_slippage": Definition(
        "Routing price improvement",
        "side x (average - best) / best x 1e4, where best is the best quote without a "
        "contingency reason in evaluatedTickers (buy: the lowest price; sell: the highest). "
        "Negative = the order was priced better than the best clean quote (improved); within "
        f"{AT_QUOTE_TOLERANCE_BP} bp of it = at the quote; positive = worse.",
    ),
    "best_venue_hit_rate": Definition(
        "Best-venue hit rate",
        "Share of executed orders (by order count) whose venue is the venue of the best "
        "clean quote. Per venue: the share of the orders executed there for which that "
        "venue had the best clean quote.",
    ),
    "contingency_rate": Definition(
        "Contingency rate",
        "Per venue, the share of its quotes in evaluatedTickers that carry a contingency "
        "reason (e.g. venue timeout, insufficient liquidity, price deviation), by quote "
        "count, with the count of each reason.",
    ),
    "arrival_slippage": Definition(
        "Arrival slippage",
        "side x (average - mid) / mid x 1e4, where mid = (bid + ask) / 2 (last when bid or "
        "ask is missing) of the last ticker of the symbol at or before createdAt in the "
        "market recording, never a later one (ticker time: its service timestamp, which a "
        "recording keeps as updated_at, else the time it was received). Tickers older than "
        "max_quote_age (60 s by default) are not used.",
    ),
    "markouts": Definition(
        "Markouts",
        "For each horizon h in "
        + ", ".join(f"{h:+d}" for h in MARKOUT_HORIZONS_S)
        + " s: side x (average - mid(t0 + h)) / mid(t0 + h) x 1e4, with mid(t) the last mid "
        "at or before t. Positive = the price went against the client's new position (after "
        "a buy it fell, after a sell it rose); markout 0 equals arrival slippage for market "
        "orders. t0 is createdAt for market orders and, for limit orders, the trigger time "
        "(triggeredAt, else executedAt) since createdAt only says when the order was placed.",
    ),
    "fees": Definition(
        "Fee cost",
        "Venue fee and operational fees apart, each in bp of the executed notional of the "
        "orders that carry it. fee.cost is the venue fee in fiat; fee.cripto is the same fee "
        "in crypto, shown converted at the order's fill price (fee.cripto x average) and "
        "never added to a fiat amount unconverted. Venue fee = fee.cost, else fee.cripto x "
        "average when fee.cost is missing (the two are one fee in two units, so they are "
        "not summed). operationalFees are fiat. Total = venue fee + operational fees. The "
        "actual rate fee.rate is compared to the tier rate fee.tierService.currentTierFeeRate"
        ": (fee.rate - tier rate) x 1e4 bp, positive = charged above the tier.",
    ),
    "fill_rate": Definition(
        "Fill rate",
        "filled / amountOriginal per closed order; aggregated weighted by the requested "
        "notional (amountOriginal x average), and by order count. Fully filled = fill rate "
        "of at least 99.99 %.",
    ),
    "outcomes": Definition(
        "Outcome shares",
        "Share of orders by final outcome, by order count. Market: closed, rejected, "
        "expired (pending/executed = in flight). Limit: executed (EXECUTED or CLOSED), "
        "expired, cancelled (CANCELLED or CANCELLING), rejected, active (OPEN, TRIGGERED, "
        "PROCESSING).",
    ),
    "time_to_execution": Definition(
        "Time to execution",
        "Market orders: executedAt - createdAt. Limit orders: executedAt - triggeredAt when "
        "the trigger time is known, else executedAt - createdAt (which includes the time "
        "waiting for the price); the column basis says which. Median, 90th and 99th "
        "percentiles by order count, and counts per bucket (lower bound inclusive).",
    ),
    "maker_share": Definition(
        "Maker share",
        "Share of trades with takerOrMaker = maker, by trade count and by trade cost.",
    ),
    "venue_rule_shares": Definition(
        "Venue and rule shares",
        "Share of executed orders by order count and by executed notional, per venue and "
        "per routing rule.",
    ),
    "rejections": Definition(
        "Rejection reasons",
        "Orders with status REJECTED counted by reason: errorMessage, else statusReason; "
        "(none) when both are empty.",
    ),
    "data_checks": Definition(
        "Data checks",
        "Per order: average against the VWAP of its trades (sum cost / sum amount), "
        "quoteAmount against the sum of its trade costs, both flagged beyond "
        f"{CHECK_TOLERANCE_BP:g} bp unless the difference in fiat is within the rounding of "
        "the trade costs to cents (half a cent per trade); negative time to execution; "
        "slippage outliers: |value| "
        f"> {OUTLIER_ABS_BP:g} bp or more than {OUTLIER_SIGMAS:g} robust sigmas (1.4826 x "
        "median absolute deviation) from the median of its metric.",
    ),
    "breakdown": Definition(
        "Breakdowns",
        "The main metrics by symbol, side, venue, rule, order type and month of createdAt "
        "(UTC). Weighted as their definitions say; median time to execution by order count.",
    ),
}


class Section(NamedTuple):
    key: str
    title: str
    tables: tuple[str, ...]
    figures: tuple[str, ...]
    definitions: tuple[str, ...]


SECTIONS: tuple[Section, ...] = (
    Section("summary", "Summary", ("summary",), (), ()),
    Section(
        "slippage",
        "Slippage against the quotes",
        ("slippage", "routing"),
        ("slippage_distribution", "slippage_over_time"),
        ("quote_slippage", "best_quote_slippage"),
    ),
    Section(
        "venues",
        "Venues and rules",
        ("venues", "rules", "contingencies", "contingency_reasons"),
        ("venue_shares",),
        ("best_venue_hit_rate", "venue_rule_shares", "contingency_rate"),
    ),
    Section(
        "market",
        "Arrival and markouts (market recording)",
        ("markouts",),
        (),
        ("arrival_slippage", "markouts"),
    ),
    Section("fees", "Fees", ("fees",), ("fee_rate_over_time",), ("fees",)),
    Section(
        "fills",
        "Fills and outcomes",
        ("fill_rate", "outcomes", "funnel", "rejections"),
        ("limit_funnel",),
        ("fill_rate", "outcomes", "rejections"),
    ),
    Section(
        "latency",
        "Time to execution",
        ("time_to_execution", "latency_buckets", "maker_share"),
        ("latency_cdf",),
        ("time_to_execution", "maker_share"),
    ),
    Section("breakdown", "Breakdowns", ("breakdown",), (), ("breakdown",)),
    Section("checks", "Data checks", ("data_checks",), (), ("data_checks",)),
)
