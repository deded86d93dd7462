"""The simulator's order model: statuses and their transitions, fills with consistent numbers,
and the one formatter behind fetchOrder, watchOrders and the listing (spec 2.4, 2.5, 3)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

from toolkit.sim._knobs import StatusCase

OrderType = Literal["market", "limit"]

MARKET_STATUSES = ("PENDING", "EXECUTED", "CLOSED", "REJECTED", "EXPIRED")
MARKET_FINAL = frozenset({"CLOSED", "REJECTED", "EXPIRED"})
LIMIT_STATUSES = (
    "OPEN",
    "TRIGGERED",
    "PROCESSING",
    "CANCELLING",
    "EXECUTED",
    "CLOSED",
    "EXPIRED",
    "CANCELLED",
    "REJECTED",
)
ACTIVE = frozenset({"OPEN", "TRIGGERED", "PROCESSING"})
FINALIZED = frozenset(LIMIT_STATUSES) - ACTIVE
#: finished for good: nothing can change them any more (CANCELLING and EXECUTED still move)
LIMIT_FINAL = frozenset({"CLOSED", "EXPIRED", "CANCELLED", "REJECTED"})
EXECUTING = frozenset({"TRIGGERED", "PROCESSING"})

#: the lifecycle of spec 3.2 (plus the execution cycle TRIGGERED -> PROCESSING -> EXECUTED
#: -> CLOSED and the re-arm back to OPEN); REJECTED is reachable from every live state
LIMIT_TRANSITIONS: dict[str, frozenset[str]] = {
    "OPEN": frozenset({"TRIGGERED", "CANCELLING", "EXPIRED", "REJECTED"}),
    "TRIGGERED": frozenset({"PROCESSING", "EXECUTED", "OPEN", "REJECTED"}),
    "PROCESSING": frozenset({"EXECUTED", "OPEN", "REJECTED"}),
    "EXECUTED": frozenset({"CLOSED"}),
    "CANCELLING": frozenset({"CANCELLED"}),
}
MARKET_TRANSITIONS: dict[str, frozenset[str]] = {
    "PENDING": frozenset({"EXECUTED", "REJECTED", "EXPIRED"}),
    "EXECUTED": frozenset({"CLOSED", "REJECTED"}),
}

VENUES = ("binance-sim", "kraken-sim", "coinbase-sim", "mercado-sim", "bitso-sim")
CONTINGENCIES = ("venue timeout", "insufficient liquidity", "price deviation")
RULES = ("best_price", "lowest_fee", "liquidity")
CHANNELS = ("api", "web", "mobile")
#: (taker, maker) fee rates per tier
TIER_RATES = (
    (Decimal("0.0050"), Decimal("0.0030")),
    (Decimal("0.0035"), Decimal("0.0020")),
    (Decimal("0.0025"), Decimal("0.0010")),
)
#: decimals of a price per symbol; amounts have 8, fiat 2
PRICE_DP = {"BTC/BRL": 2, "ETH/BRL": 2, "SOL/BRL": 2, "USDT/BRL": 4}
REFERENCE_PRICES = {
    "BTC/BRL": Decimal("350000"),
    "ETH/BRL": Decimal("18000"),
    "SOL/BRL": Decimal("800"),
    "USDT/BRL": Decimal("5.5"),
}

_EXP = {dp: Decimal(1).scaleb(-dp) for dp in range(0, 13)}


def q(value: Decimal, dp: int) -> Decimal:
    return value.quantize(_EXP[dp], rounding=ROUND_HALF_UP)


def s(value: Decimal, dp: int) -> str:
    return format(q(value, dp), "f")


def fiat(value: Decimal) -> str:
    return s(value, 2)


def crypto(value: Decimal) -> str:
    return s(value, 8)


def price_str(symbol: str, value: Decimal) -> str:
    return s(value, PRICE_DP.get(symbol, 2))


@dataclass(slots=True)
class Fill:
    """What an execution produced; numbers kept as Decimal, strings made by the formatter."""

    venue: str
    filled: Decimal
    cost: Decimal
    average: Decimal
    rate: Decimal
    fee_cost: Decimal
    fee_cripto: Decimal
    taker: bool
    trades: list[dict[str, Any]]
    filled_status: str
    info: str


@dataclass(slots=True, eq=False)
class Order:
    """One order of the simulated service. ``status`` is always the canonical uppercase
    name; the formatter applies the case of the notifications."""

    id: str
    account: str
    profile: str
    type: OrderType
    symbol: str
    side: str
    status: str
    created_at: int
    updated_at: int
    amount: Decimal
    quote_amount_original: Decimal
    channel: str = "api"
    rule: str = "best_price"
    service_managed: bool = False
    exchange: str = ""
    tier: int = 0
    operational_fees: Decimal = Decimal("0")
    error_message: str = ""
    order_pool_id: str = ""
    executed_at: int | None = None
    quotes: list[dict[str, Any]] | None = None
    fill: Fill | None = None
    rfq: dict[str, Any] | None = None
    # limit orders only
    limit_price: Decimal | None = None
    expires_at: int | None = None
    status_reason: str = ""
    client_order_id: str | None = None
    trigger: dict[str, Any] | None = None
    cancel_requested_at: int | None = None
    cancel_reason: str = ""
    #: a cancel that arrived while executing: honoured if the order re-arms (spec 3.2)
    cancel_deferred: bool = False
    #: held by the control API: no automatic progress
    held: bool = False
    #: (asset, amount) locked in the balance while the order is live
    lock: tuple[str, Decimal] | None = None
    #: listing replica: (time it became visible, list item), None while never changed
    versions: list[tuple[int, dict[str, Any]]] | None = field(default=None)
    #: history orders make their quotes and fill on first use (see ``materialize``)
    detail: Callable[[Order], None] | None = None

    def materialize(self) -> None:
        """Build the deferred details (quotes, fill) of a history order; idempotent."""
        detail, self.detail = self.detail, None
        if detail is not None:
            detail(self)

    @property
    def is_limit(self) -> bool:
        return self.type == "limit"

    @property
    def final(self) -> bool:
        return self.status in (LIMIT_FINAL if self.is_limit else MARKET_FINAL)

    def can_become(self, to: str) -> bool:
        table = LIMIT_TRANSITIONS if self.is_limit else MARKET_TRANSITIONS
        return to in table.get(self.status, frozenset())


def display_status(order_type: str, status: str, case: StatusCase) -> str:
    """The status as a notification or fetchOrder shows it. Market statuses are always
    lowercase (spec 3.1); the knob ``status_case`` sets the case of limit statuses only
    (spec 3.2: not shown): ``mixed`` uppercase but ``closed``, ``upper`` all uppercase,
    ``lower`` all lowercase."""
    if order_type != "limit" or case == "lower":
        return status.lower()
    if case == "mixed" and status == "CLOSED":
        return "closed"
    return status


def list_item(order: Order) -> dict[str, Any]:
    """The nine fields of a listing item (PRODUCT.md); statuses always uppercase."""
    return {
        "id": order.id,
        "symbol": order.symbol,
        "side": order.side,
        "type": order.type,
        "status": order.status,
        "limitPrice": price_str(order.symbol, order.limit_price or Decimal(0)),
        "expiresAt": order.expires_at,
        "createdAt": order.created_at,
        "updatedAt": order.updated_at,
    }


def format_order(
    order: Order,
    case: StatusCase = "mixed",
    service_name: str = "",
    active: frozenset[str] = ACTIVE,
) -> dict[str, Any]:
    """fetchOrder response == watchOrders message: the field set depends on the status.
    Canonical (Unix ms, default ``evaluatedTickers`` names); ``active`` are the statuses
    whose ``statusGroup`` is ``ACTIVE``."""
    order.materialize()
    sym = order.symbol
    f = order.fill
    executed = f is not None and order.status in ("EXECUTED", "CLOSED")
    exchange = (service_name or "toolkit-sim") if order.service_managed else order.exchange
    if executed and f is not None:
        quote_amount = f.cost
        remaining_quote = max(order.quote_amount_original - f.cost, Decimal(0))
        if f.filled_status == "filled":
            remaining_quote = Decimal(0)
        average = price_str(sym, f.average)
    else:
        quote_amount = order.quote_amount_original
        remaining_quote = order.quote_amount_original
        average = price_str(sym, Decimal(0))
    out: dict[str, Any] = {
        "id": order.id,
        "exchange": exchange,
        "symbol": sym,
        "side": order.side,
        "type": order.type,
        "status": display_status(order.type, order.status, case),
        "errorMessage": order.error_message if order.status == "REJECTED" else "",
        "amount": crypto(order.amount),
        "quoteAmount": fiat(quote_amount),
        "quoteAmountOriginal": fiat(order.quote_amount_original),
        "remainingQuoteAmount": fiat(remaining_quote),
        "average": average,
        "createdAt": order.created_at,
        "updatedAt": order.updated_at,
    }
    if order.executed_at is not None and executed:
        out["executedAt"] = order.executed_at
    out["channel"] = order.channel
    out["rule"] = order.rule
    out["operationalFees"] = fiat(order.operational_fees)
    if f is not None and executed and f.venue != exchange:
        out["executedExchange"] = f.venue
    if order.quotes:
        out["evaluatedTickers"] = [dict(t) for t in order.quotes]
    if order.is_limit:
        out["limitPrice"] = price_str(sym, order.limit_price or Decimal(0))
        out["expiresAt"] = order.expires_at
        out["statusGroup"] = "ACTIVE" if order.status in active else "FINALIZED"
        out["statusReason"] = order.status_reason
        if order.trigger is not None:
            out.update(order.trigger)
        if order.cancel_requested_at is not None:
            out["cancelRequestedAt"] = order.cancel_requested_at
    if order.status == "CLOSED" and f is not None:
        out.update(_extended(order, f))
    return out


def _extended(order: Order, f: Fill) -> dict[str, Any]:
    remaining = max(order.amount - f.filled, Decimal(0))
    ext: dict[str, Any] = {
        "account": order.account,
        "orderPoolId": order.order_pool_id,
        "filledStatus": f.filled_status,
        "amountOriginal": crypto(order.amount),
        "remainingAmount": crypto(remaining),
        "filled": crypto(f.filled),
        "remaining": crypto(remaining),
        "cost": fiat(f.cost),
        "price": price_str(order.symbol, f.average),
        "info": f.info,
        "fee": {
            "cost": fiat(f.fee_cost),
            "rate": s(f.rate, 4),
            "cripto": crypto(f.fee_cripto),
            "tierService": {
                "currentTierFeeRate": s(f.rate, 4),
                "currentTierFeeFiat": fiat(f.fee_cost),
                "currentTierFeeCripto": crypto(f.fee_cripto),
            },
        },
        "trades": [{**t, "fee": dict(t["fee"])} for t in f.trades],
    }
    if order.rfq is not None:
        ext["RFQ"] = dict(order.rfq)
    return ext


def make_quotes(
    rng: random.Random, symbol: str, side: str, reference: Decimal, now_ms: int, rule: str
) -> tuple[list[dict[str, Any]], str, Decimal]:
    """The router's view of the venues (``evaluatedTickers``) and the one it picks: the best
    price among venues without a contingency for ``best_price``, any healthy one otherwise."""
    venues = rng.sample(VENUES, rng.choice((4, 5)))
    dp = PRICE_DP.get(symbol, 2)
    quotes: list[dict[str, Any]] = []
    prices: list[tuple[Decimal, str, bool]] = []
    healthy = 0
    for i, venue in enumerate(venues):
        spread = Decimal(rng.randint(-40, 40)) / Decimal(10000)
        price = q(reference * (1 + spread), dp)
        quote: dict[str, Any] = {
            "exchange": venue,
            "price": format(price, "f"),
            "quotedAt": now_ms - rng.randint(5, 400),
        }
        # keep at least two healthy venues so there is always a choice
        sick = healthy >= 2 and i >= 2 and rng.random() < 0.25
        if sick:
            quote["reason"] = rng.choice(CONTINGENCIES)
        else:
            healthy += 1
        quotes.append(quote)
        prices.append((price, venue, sick))
    candidates = [(p, v) for p, v, sick in prices if not sick]
    if rule == "best_price":
        best = min(candidates) if side == "buy" else max(candidates)
    else:
        best = rng.choice(candidates)
    return quotes, best[1], best[0]


def make_fill(
    rng: random.Random,
    order: Order,
    venue: str,
    venue_price: Decimal,
    now_ms: int,
    *,
    partial: bool = False,
    taker: bool = True,
) -> Fill:
    """Trades that add up: cost = sum of trade costs, average = VWAP, fee = rate x cost."""
    sym = order.symbol
    dp = PRICE_DP.get(sym, 2)
    amount = order.amount
    filled = q(amount * Decimal(rng.randint(40, 95)) / 100, 8) if partial else amount
    n = 1 if order.rfq is not None else rng.randint(1, 3)
    weights = [rng.randint(1, 10) for _ in range(n)]
    total_w = sum(weights)
    parts: list[Decimal] = []
    left = filled
    for w in weights[:-1]:
        part = q(filled * w / total_w, 8)
        parts.append(part)
        left -= part
    parts.append(left)
    rate = TIER_RATES[order.tier][0 if taker else 1]
    trades: list[dict[str, Any]] = []
    cost = Decimal(0)
    notional = Decimal(0)
    fee_costs: list[Decimal] = []
    for i, part in enumerate(parts):
        if order.rfq is not None:
            price = venue_price
        else:
            slip = Decimal(rng.randint(-8, 8)) / Decimal(10000)
            price = q(venue_price * (1 + slip), dp)
            if order.limit_price is not None:
                # a limit order never executes beyond its limit
                if order.side == "buy":
                    price = min(price, order.limit_price)
                else:
                    price = max(price, order.limit_price)
        trade_cost = q(price * part, 2)
        cost += trade_cost
        notional += price * part
        fee_costs.append(q(trade_cost * rate, 2))
        trades.append(
            {
                "id": f"t-{order.id[2:]}-{i + 1}",
                "takerOrMaker": "taker" if taker else "maker",
                "type": order.type,
                "side": order.side,
                "price": format(price, "f"),
                "amount": crypto(part),
                "cost": fiat(trade_cost),
                "timestamp": now_ms - (n - i),
            }
        )
    fee_cost = q(cost * rate, 2)
    # per-trade fees are rounded separately; the last one absorbs the cent so they sum up
    fee_costs[-1] += fee_cost - sum(fee_costs)
    average = q(notional / filled, dp) if filled > 0 else Decimal(0)
    for trade, tfee in zip(trades, fee_costs, strict=True):
        tprice = Decimal(trade["price"])
        trade["fee"] = {
            "cost": fiat(tfee),
            "rate": s(rate, 4),
            "cripto": crypto(tfee / tprice) if tprice > 0 else crypto(Decimal(0)),
        }
    fee_cripto = q(fee_cost / average, 8) if average > 0 else Decimal(0)
    return Fill(
        venue=venue,
        filled=filled,
        cost=cost,
        average=average,
        rate=rate,
        fee_cost=fee_cost,
        fee_cripto=fee_cripto,
        taker=taker,
        trades=trades,
        filled_status="partiallyFilled" if partial else "filled",
        info=f"executed on {venue} in {n} trade(s)",
    )
