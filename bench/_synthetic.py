"""Realistic synthetic fetchOrder bodies (docs/contracts.md "Order"), shared by the benchmarks
and the frames tests: closed market orders at scale, and a mix of every kind of order.
"""

from __future__ import annotations

import json
import random
from typing import Any

SYMBOLS: dict[str, float] = {
    "BTC/BRL": 350_000.0,
    "ETH/BRL": 18_000.0,
    "SOL/BRL": 900.0,
    "USDT/BRL": 5.4,
}
VENUES: tuple[str, ...] = ("binance", "coinbase", "kraken", "mercadobitcoin", "foxbit")
SERVICE_NAME = "toolkit-sim"
RULES: tuple[str, ...] = ("best_price", "lowest_fee", "liquidity")
CHANNELS: tuple[str, ...] = ("api", "web", "mobile")
REASONS: tuple[str, ...] = ("venue timeout", "insufficient liquidity", "price deviation")
# 2026-11-01T00:00:00Z in milliseconds
T0_MS = 1_793_491_200_000

_dumps = json.JSONEncoder(separators=(",", ":")).encode


def _dec(value: float, places: int) -> str:
    return f"{value:.{places}f}"


def _order_id(rng: random.Random, prefix: str, i: int) -> str:
    return f"{prefix}-{i:06d}-{rng.getrandbits(16):04x}"


def _base(rng: random.Random, i: int, *, prefix: str = "m", order_type: str = "market") -> dict:
    symbol = rng.choice(list(SYMBOLS))
    mid = SYMBOLS[symbol] * (1 + rng.uniform(-0.05, 0.05))
    amount = round(rng.uniform(50, 20_000) / mid, 8) or 0.00000001
    quote = amount * mid
    created = T0_MS + i * 60_000 + rng.randrange(60_000)
    managed = rng.random() < 0.4
    venue = rng.choice(VENUES)
    order: dict[str, Any] = {
        "id": _order_id(rng, prefix, i),
        "exchange": SERVICE_NAME if managed else venue,
        "symbol": symbol,
        "side": rng.choice(("buy", "sell")),
        "type": order_type,
        "status": "pending",
        "errorMessage": "",
        "amount": _dec(amount, 8),
        "quoteAmount": _dec(quote, 2),
        "quoteAmountOriginal": _dec(quote, 2),
        "remainingQuoteAmount": _dec(quote, 2),
        "average": "0",
        "createdAt": created,
        "updatedAt": created,
        "channel": rng.choice(CHANNELS),
        "rule": rng.choice(RULES),
        "operationalFees": _dec(quote * 0.001, 2),
    }
    if managed:
        order["executedExchange"] = venue
    order["evaluatedTickers"] = []
    return order


def _quotes(rng: random.Random, order: dict, n: int) -> list[dict]:
    mid = SYMBOLS[order["symbol"]]
    quotes = []
    for venue in rng.sample(VENUES, min(n, len(VENUES))) + [
        rng.choice(VENUES) for _ in range(max(0, n - len(VENUES)))
    ]:
        quote: dict[str, Any] = {
            "exchange": venue,
            "price": _dec(mid * (1 + rng.uniform(-0.01, 0.01)), 2),
            "quotedAt": order["createdAt"] - rng.randrange(50, 1_500),
        }
        if rng.random() < 0.15:
            quote["reason"] = rng.choice(REASONS)
        quotes.append(quote)
    return quotes


def _close(rng: random.Random, order: dict, trades: int) -> None:
    amount = float(order["amount"])
    mid = SYMBOLS[order["symbol"]] * (1 + rng.uniform(-0.01, 0.01))
    executed = order["createdAt"] + rng.randrange(100, 5_000)
    fill_ratio = 1.0 if rng.random() < 0.9 else rng.uniform(0.3, 0.95)
    filled = amount * fill_ratio
    rate = rng.choice((0.001, 0.0015, 0.002, 0.0025))
    trade_list = []
    left = filled
    total_cost = 0.0
    for k in range(trades):
        part = left if k == trades - 1 else round(filled / trades, 8)
        left -= part
        price = mid * (1 + rng.uniform(-0.002, 0.002))
        cost = part * price
        total_cost += cost
        trade_list.append(
            {
                "id": f"t-{order['id']}-{k}",
                "takerOrMaker": rng.choice(("taker", "maker")),
                "type": order["type"],
                "side": order["side"],
                "price": _dec(price, 2),
                "amount": _dec(part, 8),
                "cost": _dec(cost, 2),
                "timestamp": executed + k * 7,
                "fee": {
                    "cost": _dec(cost * rate, 2),
                    "rate": _dec(rate, 4),
                    "cripto": _dec(part * rate, 8),
                },
            }
        )
    average = total_cost / filled if filled else 0.0
    order.update(
        {
            "status": "closed",
            "executedAt": executed,
            "updatedAt": executed + rng.randrange(10, 500),
            "average": _dec(average, 2),
            "remainingQuoteAmount": _dec(float(order["quoteAmount"]) - total_cost, 2)
            if fill_ratio < 1
            else "0.00",
            "account": "A1",
            "orderPoolId": f"pool-{order['id']}",
            "filledStatus": "filled" if fill_ratio == 1.0 else "partiallyFilled",
            "amountOriginal": order["amount"],
            "remainingAmount": _dec(amount - filled, 8),
            "filled": _dec(filled, 8),
            "remaining": _dec(amount - filled, 8),
            "cost": _dec(total_cost, 2),
            "price": _dec(average, 2),
            "info": "",
            "fee": {
                "cost": _dec(total_cost * rate, 2),
                "rate": _dec(rate, 4),
                "cripto": _dec(filled * rate, 8),
                "tierService": {
                    "currentTierFeeRate": _dec(rate, 4),
                    "currentTierFeeFiat": _dec(total_cost * rate, 2),
                    "currentTierFeeCripto": _dec(filled * rate, 8),
                },
            },
            "trades": trade_list,
        }
    )


def closed_order(rng: random.Random, i: int, *, trades: int = 3, quotes: int = 5) -> dict:
    """One closed market order with every base and extended field."""
    order = _base(rng, i)
    order["evaluatedTickers"] = _quotes(rng, order, quotes)
    _close(rng, order, trades)
    return order


def synthetic_orders(n: int, seed: int = 0, trades: int = 3, quotes: int = 5) -> list[bytes]:
    """``n`` closed market orders as raw fetchOrder bodies (compact JSON bytes)."""
    rng = random.Random(seed)
    return [_dumps(closed_order(rng, i, trades=trades, quotes=quotes)).encode() for i in range(n)]


def mixed_order_dicts(n: int = 40, seed: int = 0) -> list[dict]:
    """Every kind of order the service returns, cycling through: closed market, pending,
    executed, rejected, RFQ closed, expired RFQ quotation, limit orders in their statuses
    (uppercase, with the lowercase ``closed`` outcome)."""
    rng = random.Random(seed)
    kinds = (
        "closed",
        "pending",
        "executed",
        "rejected",
        "rfq",
        "expired",
        "OPEN",
        "TRIGGERED",
        "CANCELLING",
        "CANCELLED",
        "EXPIRED",
        "REJECTED",
        "limit-closed",
    )
    out: list[dict] = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind == "closed":
            out.append(closed_order(rng, i, trades=rng.randint(1, 4), quotes=rng.randint(1, 6)))
            continue
        if kind in ("rfq", "expired"):
            order = _base(rng, i)
            order["rule"] = "rfq"
            order["evaluatedTickers"] = _quotes(rng, order, 3)
            quoted = order["evaluatedTickers"][0]
            rfq = {
                "quoteId": f"q-{i:06d}",
                "quotedPrice": quoted["price"],
                "quotedAt": quoted["quotedAt"],
                "validUntil": quoted["quotedAt"] + 10_000,
            }
            if kind == "rfq":
                _close(rng, order, 1)
                order["RFQ"] = rfq
            else:
                order["status"] = "expired"
            out.append(order)
            continue
        if kind in ("pending", "executed", "rejected"):
            order = _base(rng, i)
            order["evaluatedTickers"] = _quotes(rng, order, 3)
            order["status"] = kind
            if kind == "executed":
                order["executedAt"] = order["createdAt"] + 900
            if kind == "rejected":
                order["errorMessage"] = "insufficient balance"
                del order["evaluatedTickers"]
            out.append(order)
            continue
        order = _base(rng, i, prefix="l", order_type="limit")
        del order["evaluatedTickers"]
        mid = SYMBOLS[order["symbol"]]
        order["limitPrice"] = _dec(mid * (0.97 if order["side"] == "buy" else 1.03), 2)
        order["expiresAt"] = order["createdAt"] + 86_400_000
        status = "closed" if kind == "limit-closed" else kind
        final = status in ("closed", "CANCELLING", "CANCELLED", "EXPIRED", "REJECTED")
        order["statusGroup"] = "FINALIZED" if final else "ACTIVE"
        order["statusReason"] = {"CANCELLED": "user request", "REJECTED": "duplicate"}.get(
            status, ""
        )
        if status in ("TRIGGERED", "closed"):
            order["triggeredAt"] = order["createdAt"] + 30_000
        if status in ("CANCELLING", "CANCELLED"):
            order["cancelRequestedAt"] = order["createdAt"] + 40_000
        if status == "closed":
            order["evaluatedTickers"] = _quotes(rng, order, 4)
            _close(rng, order, 2)
            order["type"] = "limit"
            for trade in order["trades"]:
                trade["type"] = "limit"
        order["status"] = status
        out.append(order)
    return out


def mixed_orders(n: int = 40, seed: int = 0) -> list[bytes]:
    """:func:`mixed_order_dicts` as raw bodies."""
    return [_dumps(order).encode() for order in mixed_order_dicts(n, seed)]
