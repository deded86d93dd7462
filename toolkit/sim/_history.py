"""The simulator's seeded order history: the same seed and anchor give the same orders, with
every status of both families, consistent fills, quotes, tiers, RFQs and service-managed ones."""

from __future__ import annotations

import random
from decimal import Decimal
from functools import partial

from toolkit.sim._orders import (
    CHANNELS,
    LIMIT_STATUSES,
    MARKET_STATUSES,
    PRICE_DP,
    REFERENCE_PRICES,
    RULES,
    Order,
    make_fill,
    make_quotes,
    q,
)

DAY_MS = 86_400_000
#: statuses every history holds at least once (when it has room for them)
COVERAGE: tuple[tuple[str, str], ...] = tuple(("market", st) for st in MARKET_STATUSES) + tuple(
    ("limit", st) for st in LIMIT_STATUSES
)
_MARKET_WEIGHTS = {"CLOSED": 80, "REJECTED": 8, "EXPIRED": 4, "PENDING": 1, "EXECUTED": 1}
_LIMIT_WEIGHTS = {
    "CLOSED": 35,
    "CANCELLED": 20,
    "EXPIRED": 15,
    "OPEN": 12,
    "REJECTED": 6,
    "TRIGGERED": 2,
    "PROCESSING": 2,
    "CANCELLING": 2,
    "EXECUTED": 2,
}
_SYMBOLS = ("BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL")
_SYMBOL_WEIGHTS = (40, 30, 20, 10)
_REJECT_REASONS = ("insufficient balance", "venue rejected the order", "price out of band")
_LIMIT_REJECT_REASONS = ("insufficient balance", "duplicate", "unrecoverable failure")


def generate_history(
    seed: int, count: int, now_ms: int, *, profiles: dict[str, tuple[str, ...]] | None = None
) -> tuple[list[Order], int]:
    """``count`` orders of account A1 and ``count // 10`` of A2 over the 30 days before
    ``now_ms``, oldest first; returns them and the next free id sequence number."""
    profiles = profiles or {"A1": ("P1", "P2"), "A2": ("P9",)}
    rng = random.Random(seed)
    plan: list[tuple[int, str, str, str]] = []  # (createdAt, account, kind, status)
    for account, n in (("A1", count), ("A2", count // 10)):
        kinds = list(COVERAGE[:n])
        for _ in range(n - len(kinds)):
            if rng.random() < 0.6:
                kinds.append(("market", _pick(rng, _MARKET_WEIGHTS)))
            else:
                kinds.append(("limit", _pick(rng, _LIMIT_WEIGHTS)))
        for kind, status in kinds:
            created = now_ms - rng.randint(60_000, 30 * DAY_MS)
            plan.append((created, account, kind, status))
    plan.sort()
    orders: list[Order] = []
    for seq, (created, account, kind, status) in enumerate(plan, start=1):
        prof = profiles[account]
        profile = prof[0] if len(prof) == 1 or rng.random() < 0.9 else prof[1]
        orders.append(_build(rng, seq, created, account, profile, kind, status, now_ms))
    return orders, len(plan) + 1


def _between(rng: random.Random, start: int, now_ms: int) -> int:
    """A moment after ``start`` (up to a day) that leaves room before ``now_ms``."""
    span = max((now_ms - start) // 2, 2)
    return start + rng.randint(min(1_000, span - 1), min(DAY_MS, span))


def _pick(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(tuple(weights), tuple(weights.values()))[0]


def _build(
    rng: random.Random,
    seq: int,
    created: int,
    account: str,
    profile: str,
    kind: str,
    status: str,
    now_ms: int,
) -> Order:
    symbol = rng.choices(_SYMBOLS, _SYMBOL_WEIGHTS)[0]
    side = rng.choice(("buy", "sell"))
    dp = PRICE_DP[symbol]
    reference = q(REFERENCE_PRICES[symbol] * Decimal(rng.randint(900, 1100)) / 1000, dp)
    value = Decimal(rng.choice((100, 250, 500, 1000, 2500, 5000, 10000, 50000)))
    amount = q(value / reference, 8)
    rfq = kind == "market" and (status == "EXPIRED" or rng.random() < 0.1)
    rule = "rfq" if rfq else rng.choice(RULES)
    order = Order(
        id=f"{'m' if kind == 'market' else 'l'}-{seq:06d}-{rng.getrandbits(16):04x}",
        account=account,
        profile=profile,
        type="market" if kind == "market" else "limit",
        symbol=symbol,
        side=side,
        status=status,
        created_at=created,
        updated_at=created,
        amount=amount,
        quote_amount_original=q(amount * reference, 2),
        channel=rng.choices(CHANNELS, (60, 25, 15))[0],
        rule=rule,
        service_managed=rng.random() < 0.6,
        tier=rng.randrange(3),
        operational_fees=Decimal(rng.choice(("0", "0.50", "1.00", "2.50"))),
        order_pool_id=f"pool-{rng.getrandbits(32):08x}",
    )
    if kind == "market":
        _market(rng, order, reference, now_ms)
    else:
        _limit(rng, order, reference, now_ms)
    return order


def _plan(
    rng: random.Random,
    order: Order,
    reference: Decimal,
    at: int,
    *,
    execute: bool = False,
    taker: bool = True,
) -> None:
    """Quotes (and the fill) are made on first use from a seed drawn now: the history
    stays deterministic while only the orders someone reads pay for their details."""
    # time to execution: mostly sub-second to a few seconds, with a long tail (venue
    # contingencies, RFQ round trips), so latency reports have a distribution to show
    lat = min(600_000, max(40, int(rng.lognormvariate(6.8, 1.1))))
    if execute:
        order.executed_at = at + lat
    order.detail = partial(
        _details, seed=rng.getrandbits(64), ref=reference, at=at, lat=lat, ex=execute, taker=taker
    )


def _details(
    order: Order, *, seed: int, ref: Decimal, at: int, lat: int, ex: bool, taker: bool
) -> None:
    rng = random.Random(seed)
    quotes, venue, price = make_quotes(rng, order.symbol, order.side, ref, at, order.rule)
    order.quotes = quotes
    if order.rfq is not None:
        order.rfq["quotedPrice"] = format(price, "f")
    if ex:
        order.exchange = venue
        partial_fill = rng.random() < 0.1
        order.fill = make_fill(
            rng, order, venue, price, at + lat, partial=partial_fill, taker=taker
        )
    elif order.type == "market":
        order.exchange = venue


def _market(rng: random.Random, order: Order, reference: Decimal, now_ms: int) -> None:
    st = order.status
    at = order.created_at
    if order.rule == "rfq":
        order.rfq = {
            "quoteId": f"q-{rng.getrandbits(40):010x}",
            "quotedPrice": "",
            "quotedAt": at,
            "validUntil": at + 10_000,
        }
    if st in ("PENDING", "EXECUTED"):
        # still moving: recent, so a live view sees them as fresh
        order.created_at = order.updated_at = at = now_ms - rng.randint(5_000, 120_000)
    if st in ("EXECUTED", "CLOSED"):
        _plan(rng, order, reference, at, execute=True)
        order.updated_at = (order.executed_at or at) + (
            rng.randint(50, 900) if st == "CLOSED" else 0
        )
    else:
        _plan(rng, order, reference, at)
        if st == "REJECTED":
            order.error_message = rng.choice(_REJECT_REASONS)
            order.updated_at = at + rng.randint(100, 2_000)
        elif st == "EXPIRED":
            order.updated_at = at + 10_000


def _limit(rng: random.Random, order: Order, reference: Decimal, now_ms: int) -> None:
    st = order.status
    at = order.created_at
    dp = PRICE_DP[order.symbol]
    off = Decimal(rng.randint(5, 50)) / 1000
    if st == "OPEN":
        # still waiting: placed around today's price, so the live walk reaches some later
        reference = REFERENCE_PRICES[order.symbol]
    # a buy waits below the market, a sell above it
    limit = q(reference * (1 - off if order.side == "buy" else 1 + off), dp)
    order.limit_price = limit
    order.quote_amount_original = q(order.amount * limit, 2)
    order.exchange = rng.choice(("binance-sim", "kraken-sim", "coinbase-sim", "mercado-sim"))
    live = st in ("OPEN", "TRIGGERED", "PROCESSING", "CANCELLING", "EXECUTED")
    if live:
        order.expires_at = now_ms + rng.randint(1, 30) * DAY_MS
    else:
        order.expires_at = at + rng.randint(1, 7) * DAY_MS
    if st in ("TRIGGERED", "PROCESSING", "EXECUTED", "CLOSED"):
        trig_at = _between(rng, at, now_ms)
        order.trigger = {
            "triggerPrice": format(limit, "f"),
            "triggerExchange": order.exchange,
            "triggeredAt": trig_at,
        }
        order.updated_at = trig_at
        if st == "PROCESSING":
            _plan(rng, order, limit, trig_at)
        elif st in ("EXECUTED", "CLOSED"):
            _plan(rng, order, limit, trig_at, execute=True, taker=rng.random() < 0.3)
            order.updated_at = (order.executed_at or trig_at) + (300 if st == "CLOSED" else 0)
        # live ones in the execution cycle stay where the history left them
        order.held = live
    elif st in ("CANCELLING", "CANCELLED"):
        req = _between(rng, at, now_ms)
        order.cancel_requested_at = req
        order.cancel_reason = "requested by user"
        order.updated_at = req + (200 if st == "CANCELLED" else 0)
        order.held = live
    elif st == "EXPIRED":
        order.updated_at = order.expires_at
    elif st == "REJECTED":
        reason = rng.choice(_LIMIT_REJECT_REASONS)
        order.status_reason = reason
        order.error_message = reason
        order.updated_at = at + rng.randint(50, 500)
    # timestamps never run into the future of the anchor
    order.updated_at = min(order.updated_at, now_ms - 1)
    if order.executed_at is not None:
        order.executed_at = min(order.executed_at, order.updated_at)
