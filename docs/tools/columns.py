"""The column dictionary of the frames: every column of every frame (taken from the frames
the schema builds, so a new field cannot be missed), its dtype, unit, source field and
meaning. A column without an entry here fails the docs build."""

from __future__ import annotations

from toolkit.frames import OrderFrames
from toolkit.frames._schema import FILL_CONTEXT

QUOTE = "quote currency (fiat, e.g. BRL)"
BASE = "base currency (crypto, e.g. BTC)"
PRICE = "quote currency per unit of base"
TIME = "UTC, ms precision"
RATE = "fraction (0.001 = 0.1 %)"

# source field (as in the service's JSON; `[]` marks an element of a list) -> (unit, meaning)
FIELDS: dict[str, tuple[str, str]] = {
    "id": ("", "Order identifier."),
    "exchange": ("", "Venue used; `toolkit-sim` (the service's name) in service-managed mode."),
    "symbol": ("", "Market pair, `BASE/QUOTE`."),
    "side": ("", "`buy` or `sell`."),
    "type": ("", "Order type: `market` or `limit`."),
    "status": ("", "Current status, in one canonical case (upper): OPEN, CLOSED, ..."),
    "statusRaw": ("", "The status exactly as the service sent it (`closed`, `OPEN`, ...)."),
    "errorMessage": ("", "Error text when the order was rejected; empty otherwise."),
    "amount": (BASE, "Quantity requested, in crypto."),
    "quoteAmount": (QUOTE, "Value in fiat."),
    "quoteAmountOriginal": (QUOTE, "Fiat value originally requested."),
    "remainingQuoteAmount": (QUOTE, "Fiat value remaining."),
    "average": (PRICE, "Average execution price."),
    "createdAt": (TIME, "When the order was created."),
    "updatedAt": (TIME, "Last update of the order (strictly grows with each change)."),
    "executedAt": (TIME, "When the order executed, when it did."),
    "channel": ("", "Origin channel of the order."),
    "rule": ("", "Smart-order-routing rule used."),
    "operationalFees": (QUOTE, "Operational fees charged by the service."),
    "executedExchange": ("", "Venue that executed the order, when it differs from `exchange`."),
    "account": ("", "Client account id (closed orders)."),
    "orderPoolId": ("", "Order id in the pool (closed orders)."),
    "filledStatus": ("", "Fill detail, e.g. `filled`, `partiallyFilled` (closed orders)."),
    "amountOriginal": (BASE, "Quantity originally requested."),
    "remainingAmount": (BASE, "Quantity remaining, in crypto."),
    "filled": (BASE, "Quantity actually filled."),
    "remaining": (BASE, "Quantity remaining to fill."),
    "cost": (QUOTE, "Total cost of the order (sum of its trades' cost)."),
    "price": (PRICE, "Average price (closed orders)."),
    "info": ("", "Additional information from the provider."),
    "fee.cost": (QUOTE, "Venue fee, in fiat."),
    "fee.rate": (RATE, "Fee rate actually charged."),
    "fee.cripto": (BASE, "The same venue fee, in crypto (not to be added to `fee.cost`)."),
    "fee.tierService.currentTierFeeRate": (RATE, "Fee rate of the account's current tier."),
    "fee.tierService.currentTierFeeFiat": (QUOTE, "Fee of the current tier, in fiat."),
    "fee.tierService.currentTierFeeCripto": (BASE, "Fee of the current tier, in crypto."),
    "RFQ.quoteId": ("", "Request-for-quote id (executed RFQ orders only)."),
    "RFQ.quotedPrice": (PRICE, "Price quoted by the RFQ."),
    "RFQ.quotedAt": (TIME, "When the RFQ quote was made."),
    "RFQ.validUntil": (TIME, "Until when the RFQ quote was valid."),
    "limitPrice": (PRICE, "Limit price (limit orders)."),
    "expiresAt": (TIME, "Deadline of a limit order; it expires if still OPEN then."),
    "statusGroup": ("", "Group of the limit status as the service names it."),
    "statusReason": ("", "Why a limit order is in its status (e.g. a rejection's reason)."),
    "triggerPrice": (PRICE, "Price that triggered the limit order."),
    "triggerExchange": ("", "Venue whose price triggered the limit order."),
    "triggeredAt": (TIME, "When the limit order was triggered."),
    "cancelRequestedAt": (TIME, "When a cancel was accepted (CANCELLING)."),
    "trades[].id": ("", "Trade identifier."),
    "trades[].takerOrMaker": ("", "`taker` or `maker`."),
    "trades[].type": ("", "Trade type as the venue reports it."),
    "trades[].side": ("", "`buy` or `sell`."),
    "trades[].price": (PRICE, "Trade price."),
    "trades[].amount": (BASE, "Quantity traded."),
    "trades[].cost": (QUOTE, "Trade value (price x amount)."),
    "trades[].timestamp": (TIME, "When the trade happened."),
    "trades[].fee.cost": (QUOTE, "Fee of the trade, in fiat."),
    "trades[].fee.rate": (RATE, "Fee rate of the trade."),
    "trades[].fee.cripto": (BASE, "Fee of the trade, in crypto."),
    "evaluatedTickers[].exchange": ("", "Venue that offered the quote."),
    "evaluatedTickers[].price": (PRICE, "Price the venue offered at quotation time."),
    "evaluatedTickers[].quotedAt": (TIME, "When the venue quoted."),
    "evaluatedTickers[].reason": ("", "Contingency reason (timeout, liquidity, ...), if any."),
}

# derived columns: (frame, column) -> (source, unit, meaning)
DERIVED: dict[tuple[str, str], tuple[str, str, str]] = {
    ("evaluated_tickers", "rank"): (
        "position in `evaluatedTickers`",
        "",
        "0-based position of the quote in the order's list (0 = first).",
    ),
    ("fills", "venue"): (
        "`executedExchange`, else `exchange`",
        "",
        "Venue that executed the trade's order: the one to group fills by.",
    ),
}

FRAME_TEXT = {
    "orders": "One row per order (market and limit), every field of fetchOrder flattened.",
    "trades": "One row per trade of an order (`trades[]`), with its `orderId`.",
    "fees": "One row per order that carries a `fee` object or operational fees.",
    "evaluated_tickers": "One row per quote the router saw for an order (`evaluatedTickers[]`).",
    "fills": "Trades joined with their order's context: the table to export.",
}


def source_of(frame: str, column: str) -> str:
    """The service field a frame's column comes from, as a `FIELDS` key."""
    context = {fill: order for order, fill in FILL_CONTEXT}
    if column == "orderId":
        return "id"
    if frame == "orders":
        return "status" if column == "statusRaw" else column
    if frame == "fees":
        return column if column in ("symbol", "operationalFees") else f"fee.{column}"
    if frame == "evaluated_tickers":
        return f"evaluatedTickers[].{column}"
    if frame == "fills" and column in context:
        return context[column]
    return f"trades[].{column}"


def _row(frame: str, column: str, dtype: str) -> str:
    if (frame, column) in DERIVED:
        source, unit, meaning = DERIVED[frame, column]
    else:
        field = source_of(frame, column)
        key = "statusRaw" if (frame, column) == ("orders", "statusRaw") else field
        if key not in FIELDS:
            raise KeyError(f"docs/tools/columns.py: no meaning for {frame}.{column} ({field})")
        unit, meaning = FIELDS[key]
        source = f"`{field}`"
        if column == "orderId":
            meaning = "Id of the order the row belongs to (join key to `orders.id`)."
        elif frame == "fills" and column in ("orderType", "orderStatus"):
            meaning = f"The order's `{field}` (canonical case)."
    if dtype == "float64":
        dtype = "float64 (decimal128 with `exact=True`)"
    return f"| `{column}` | {dtype} | {unit or '–'} | {source} | {meaning} |"


def page() -> str:
    frames = OrderFrames.empty()
    lines = [
        "# Column dictionary",
        "",
        "Every column of the five frames that `client.load_orders()` and `store.frames()`",
        "return, generated from the frames the schema (`toolkit/frames/_schema.py`) builds.",
        "Names are the service's field names, nested objects flattened with `.`; decimal",
        "strings become float64 (exact `decimal128` with `exact=True`), Unix timestamps",
        "`datetime64[ms, UTC]`. An empty result has every column, typed. Fields the service",
        "adds later are kept as extra columns.",
        "",
        "Frames join on `orders.id` = `orderId`.",
    ]
    for name, frame in frames:
        lines += [
            "",
            f"## `{name}` ({len(frame.columns)} columns)",
            "",
            FRAME_TEXT[name],
            "",
            "| column | dtype | unit | source field | meaning |",
            "|---|---|---|---|---|",
        ]
        lines += [_row(name, str(c), str(t)) for c, t in frame.dtypes.items()]
    return "\n".join(lines) + "\n"
