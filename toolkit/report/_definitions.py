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
#: resamples of the bootstrap confidence intervals
BOOTSTRAP_RESAMPLES = 200
#: a fill rate of at least this counts as fully filled
FULL_FILL = 0.9999
#: |slippage| above this is an outlier whatever the spread of the sample
OUTLIER_ABS_BP = 500.0
#: |slippage - median| above this many robust sigmas (1.4826 x MAD) is an outlier
OUTLIER_SIGMAS = 5.0
#: fee.cost and fee.cripto x average may differ by this share of the fee (roundings)
FEE_CHECK_RELATIVE = 0.01
#: data checks tolerate this much relative difference (bp) before flagging an order
CHECK_TOLERANCE_BP = 1.0

CONVENTIONS = (
    "All price effects are in basis points (bp, 1/10,000) with positive = cost to the "
    "client. side = +1 for a buy and -1 for a sell. Aggregates are weighted by the executed "
    "notional (the order's cost, else quoteAmount, else filled x average) unless a "
    "definition says otherwise. Executed orders are those with status CLOSED or EXECUTED "
    "and a positive average price (from its trades, sum cost / sum amount, when the order "
    "has none). The venue of an order is executedExchange when present, else exchange. An "
    "order id present more than once counts once, at its latest updatedAt. Headline numbers "
    "are given apart for market and limit orders: limit fills are favourable by "
    "construction. Amounts are in the quote currency of the symbol (BRL of BTC/BRL)."
)


class Definition(NamedTuple):
    title: str
    text: str


DEFINITIONS: dict[str, Definition] = {
    "cost_decomposition": Definition(
        "Cost decomposition",
        "For each executed order with a quote from its venue and a best clean quote: routing "
        "gap = side x (quote of the chosen venue - best clean quote) / best x 1e4 (a venue "
        "quoting the best price, tied or not, has a gap of 0); execution slippage = side x "
        "(average - quote of the chosen venue) / quote x 1e4; fees = venue + operational fees "
        "in bp of the notional (0 when the order carries none); total = the sum. Amounts = bp "
        "x notional / 1e4 in the symbol's quote currency. Aggregates per order type and "
        "currency are notional-weighted (sum of amounts / sum of notional), so the components "
        "add up to the total.",
    ),
    "headline": Definition(
        "Headline and confidence intervals",
        "The main metrics per order type (market, limit, all: every order of this set, "
        "which holds only the orders loaded), notional-weighted (hit rate by order count, "
        "fill rate by requested notional). ci_low/ci_high: the 2.5th and 97.5th "
        f"percentiles of the same weighted mean over {BOOTSTRAP_RESAMPLES} bootstrap "
        "resamples of the orders (drawn with replacement, one draw for every metric; above "
        "5,000 orders, of 5,000 random blocks of orders, which keeps the variance of the "
        "sums of independent orders). No interval for a single order.",
    ),
    "quote_slippage": Definition(
        "Execution slippage",
        "side x (average - quote) / quote x 1e4, where quote is the price the executing "
        "venue offered in evaluatedTickers (its first entry in the list). Orders without "
        "a quote from their venue are left out.",
    ),
    "best_quote_slippage": Definition(
        "Slippage vs best clean quote",
        "side x (average - best) / best x 1e4, where best is the best quote without a "
        "contingency reason in evaluatedTickers (buy: the lowest price; sell: the highest). "
        "Negative = the order was priced better than the best clean quote (improved); within "
        f"{AT_QUOTE_TOLERANCE_BP} bp of it = at the quote; positive = worse.",
    ),
    "best_venue_hit_rate": Definition(
        "Best-venue hit rate",
        "Share of executed orders (by order count) whose venue offered a clean quote at the "
        "best clean price: a tie at the best price is a hit, whichever of the tied venues "
        "the list names first. Per venue: the share of the orders executed there for which "
        "that venue had the best clean price.",
    ),
    "contingency_rate": Definition(
        "Contingency rate",
        "Per venue, the share of its quotes in evaluatedTickers that carry a contingency "
        "reason (e.g. venue timeout, insufficient liquidity, price deviation), by quote "
        "count, with the count of each reason.",
    ),
    "contingency_cost": Definition(
        "Excluded best quotes",
        "Executed orders whose overall best quote (any reason) carried a contingency reason, "
        "so the router excluded it: per venue and reason, the orders, their share of the "
        "executed orders with a best clean quote, and the cost = side x (best clean - "
        "excluded best) / best clean x 1e4, notional-weighted, and in the quote currency. "
        "Venue mismatch: executed orders whose executedExchange differs from exchange where "
        "exchange names a venue (not the service-managed mode). Quote age: executedAt - "
        "the time of the executing venue's quote (the profile's orders.quote_time_field), "
        "in buckets, with the notional-weighted and median execution slippage of each.",
    ),
    "daily_cost": Definition(
        "Cost over time",
        "Per UTC day of createdAt and quote currency: the total cost (routing gap + execution "
        "slippage + fees) of the day's decomposed orders, notional-weighted (sum of cost "
        "amounts / sum of notional x 1e4 bp), and in the quote currency. 95 % interval: R "
        "+- 1.96 x se, with se = sqrt(n / (n - 1) x sum((a_i - R x w_i)^2)) / sum(w_i) (the "
        "normal approximation of a ratio of sums; a_i cost amount, w_i notional of each "
        "order); the amount interval is the bp interval x the day's notional. None for a day "
        "of one order. executed = the day's executed orders, orders = those decomposed.",
    ),
    "drilldown": Definition(
        "The worst orders one by one",
        "For each of the worst orders: every venue's quote in its evaluatedTickers (hollow: "
        "the quote carried a contingency reason, so the router excluded it), the order's "
        "average price on the venue that executed it, and the arrival mid when a market "
        "recording gave one. A fill above the quotes of a buy (below, of a sell) is a cost.",
    ),
    "arrival_slippage": Definition(
        "Arrival slippage",
        "side x (average - mid) / mid x 1e4, where mid = (bid + ask) / 2 (last when bid or "
        "ask is missing) of the last ticker of the symbol at or before createdAt in the "
        "market recording, never a later one (ticker time: its service timestamp, which a "
        "recording keeps as updated_at, else the time it was received). Tickers older than "
        "max_quote_age (60 s by default) are not used. Also given in half-spreads: arrival "
        "slippage / ((ask - bid) / mid x 1e4 / 2) of that ticker. A ticker time given as a "
        "Unix number is read in seconds, milliseconds, microseconds or nanoseconds from its "
        "magnitude, value by value. The recording is read for watchticker and watchtickers "
        "(one row per pair) and its _session rows.",
    ),
    "markouts": Definition(
        "Markouts",
        "For each horizon h in "
        + ", ".join(f"{h:+d}" for h in MARKOUT_HORIZONS_S)
        + " s: side x (average - mid(t0 + h)) / mid(t0 + h) x 1e4, with mid(t) the last mid "
        "at or before t. Positive = the price went against the client's new position (after "
        "a buy it fell, after a sell it rose). t0 is the execution: executedAt, else the time "
        "of the order's last trade. A markout is computed only where the recording covers "
        "t0 + h: inside its span (first to last row received) and with no gap (a _session "
        "gap or dropped row, or a disconnect until the next connect) between the ticker used "
        "and t0 + h; coverage = orders with a markout / executed orders with a t0.",
    ),
    "fees": Definition(
        "Fee cost",
        "Venue fee and operational fees apart, each in bp of the executed notional of the "
        "orders that carry it. fee.cost is the venue fee in fiat; fee.cripto is the same fee "
        "in crypto, converted at the order's fill price (fee.cripto x average) and never "
        "added to a fiat amount unconverted. Venue fee = fee.cost when it is positive, else "
        "fee.cripto x average when that is positive (a fee.cost of 0 beside a crypto fee "
        "means the fee was charged in crypto), else fee.cost (the two are one fee in two "
        "units, so they are never summed). operationalFees are fiat. Total = venue fee + "
        "operational fees. The "
        "actual rate fee.rate is compared to the tier rate fee.tierService.currentTierFeeRate"
        ": (fee.rate - tier rate) x 1e4 bp, positive = charged above the tier.",
    ),
    "fill_rate": Definition(
        "Fill rate",
        "Per closed order, in the unit the order was requested in: the higher of filled / "
        "amountOriginal and (quoteAmountOriginal - remainingQuoteAmount) / "
        "quoteAmountOriginal (an order requested in fiat has an estimated amountOriginal), "
        "capped at 1; filledStatus = filled means 1. Aggregated weighted by the requested "
        "notional (amountOriginal x average, or quoteAmountOriginal for a fiat order), and "
        "by order count. Fully filled = fill rate of at least 99.99 %.",
    ),
    "limits": Definition(
        "Limit orders",
        "Distance of the limit = side x (mid at createdAt - limitPrice) / mid x 1e4 "
        "(positive = the price must move towards the client); fill probability = executed / "
        "finalized (executed, expired, cancelled) per distance and per time to expiry "
        "(expiresAt - createdAt). Time to trigger = triggeredAt - createdAt. Trigger "
        "slippage = side x (average - limitPrice) / limitPrice x 1e4 (negative = better than "
        "the limit); a fill beyond the limit is counted. Opportunity cost of an expired or "
        "cancelled order = side x (mid at its end (updatedAt) - mid at createdAt) / mid x "
        "1e4 on its unfilled quantity (amount = bp x unfilled quantity x mid / 1e4), "
        "weighted by the unfilled notional. Cancel latency = updatedAt of a CANCELLED order "
        "- cancelRequestedAt.",
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
        "median absolute deviation) from the median of its metric; fee.cost against "
        f"fee.cripto x average when both are positive (beyond {FEE_CHECK_RELATIVE:.0%} of "
        "the fee and half a cent: the average is rounded), and the order's fee.cost and "
        "fee.cripto against the sums of its trades' fees (same cent slack); fee.cost 0 "
        "beside a positive fee.cripto; an executed order priced from its trades because it "
        "has no average; order ids present more than once (the latest kept).",
    ),
    "robust": Definition(
        "Robust aggregates",
        "Per order type and metric: the notional-weighted mean beside the median, the 10 % "
        "trimmed mean (the lowest and highest 10 % of orders left out), the robust sigma "
        "(1.4826 x median absolute deviation) and the 10th/90th percentiles, by order count. "
        "Worst orders: the 20 decomposed orders with the highest total cost in the quote "
        "currency. Comparison: the headline of two periods of createdAt ([start, end)), "
        "each with its interval, and b - a.",
    ),
    "breakdown": Definition(
        "Breakdowns",
        "The main metrics by symbol, side, venue, rule, order type, month and hour of the "
        "day of createdAt (UTC) and size bucket of the notional (quote currency). Weighted "
        "as their definitions say; median time to execution by order count.",
    ),
}


class Section(NamedTuple):
    key: str
    title: str
    tables: tuple[str, ...]
    figures: tuple[str, ...]
    definitions: tuple[str, ...]


SECTIONS: tuple[Section, ...] = (
    Section(
        "summary",
        "Summary",
        ("headline", "cost_decomposition"),
        ("cost_waterfall",),
        ("headline", "cost_decomposition"),
    ),
    Section(
        "over_time",
        "Cost over time",
        ("daily_cost",),
        ("daily_cost",),
        ("daily_cost",),
    ),
    Section("overview", "Every headline figure", ("summary",), (), ()),
    Section(
        "slippage",
        "Slippage against the quotes",
        ("slippage", "routing", "worst_orders"),
        ("slippage_distribution", "slippage_over_time"),
        ("quote_slippage", "best_quote_slippage", "drilldown"),
    ),
    Section(
        "venues",
        "Venues, rules and contingencies",
        (
            "venues",
            "rules",
            "contingencies",
            "contingency_reasons",
            "contingency_costs",
            "venue_mismatch",
            "quote_age",
        ),
        ("venue_shares",),
        ("best_venue_hit_rate", "venue_rule_shares", "contingency_rate", "contingency_cost"),
    ),
    Section(
        "market",
        "Arrival and markouts (market recording)",
        ("markouts",),
        ("markout_curve",),
        ("arrival_slippage", "markouts"),
    ),
    Section(
        "limits",
        "Limit orders",
        ("limit_summary", "fill_probability", "funnel"),
        ("limit_funnel",),
        ("limits", "outcomes"),
    ),
    Section("fees", "Fees", ("fees",), ("fee_rate_over_time",), ("fees",)),
    Section(
        "fills",
        "Fills and outcomes",
        ("fill_rate", "outcomes", "rejections"),
        (),
        ("fill_rate", "rejections"),
    ),
    Section(
        "latency",
        "Time to execution",
        ("time_to_execution", "latency_buckets", "maker_share"),
        ("latency_cdf",),
        ("time_to_execution", "maker_share"),
    ),
    Section("robustness", "Robustness", ("robust", "comparison"), (), ("robust",)),
    Section("breakdown", "Breakdowns", ("breakdown",), (), ("breakdown",)),
    Section("checks", "Data checks", ("data_checks",), (), ("data_checks",)),
)

#: the definition of each table (the one a click on its title opens)
TABLE_DEFINITIONS: dict[str, str] = {
    "headline": "headline",
    "cost_decomposition": "cost_decomposition",
    "summary": "headline",
    "slippage": "quote_slippage",
    "routing": "best_quote_slippage",
    "worst_orders": "robust",
    "venues": "best_venue_hit_rate",
    "rules": "venue_rule_shares",
    "contingencies": "contingency_rate",
    "contingency_reasons": "contingency_rate",
    "contingency_costs": "contingency_cost",
    "venue_mismatch": "contingency_cost",
    "quote_age": "contingency_cost",
    "markouts": "markouts",
    "limit_summary": "limits",
    "fill_probability": "limits",
    "funnel": "outcomes",
    "fees": "fees",
    "fill_rate": "fill_rate",
    "outcomes": "outcomes",
    "rejections": "rejections",
    "time_to_execution": "time_to_execution",
    "latency_buckets": "time_to_execution",
    "maker_share": "maker_share",
    "robust": "robust",
    "comparison": "robust",
    "breakdown": "breakdown",
    "data_checks": "data_checks",
    "daily_cost": "daily_cost",
}

#: the title of each table on the page and in a notebook
TABLE_TITLES: dict[str, str] = {
    "headline": "Headline",
    "cost_decomposition": "Cost decomposition",
    "summary": "Every headline figure",
    "slippage": "Slippage by order type",
    "routing": "Routing outcome against the best clean quote",
    "worst_orders": "Worst orders",
    "venues": "Venues",
    "rules": "Routing rules",
    "contingencies": "Contingencies per venue",
    "contingency_reasons": "Contingency reasons",
    "contingency_costs": "Excluded best quotes",
    "venue_mismatch": "Executed on another venue than requested",
    "quote_age": "Quote age at execution",
    "markouts": "Markouts",
    "limit_summary": "Limit orders",
    "fill_probability": "Fill probability",
    "funnel": "Limit-order funnel",
    "fees": "Fees per symbol",
    "fill_rate": "Fill rate",
    "outcomes": "Outcomes",
    "rejections": "Rejection reasons",
    "time_to_execution": "Time to execution",
    "latency_buckets": "Time to execution in buckets",
    "maker_share": "Maker share",
    "robust": "Robust aggregates",
    "comparison": "Two periods compared",
    "breakdown": "Breakdowns",
    "data_checks": "Data checks",
    "daily_cost": "Cost per day (UTC)",
}

#: tables a report may lack (a set written before they existed): drawn again or left empty
OPTIONAL_TABLES: frozenset[str] = frozenset({"daily_cost", "worst_order_quotes"})
