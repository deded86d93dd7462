"""Order bodies with the evaluatedTickers fields of any profile, timestamps in s or ms."""

from __future__ import annotations

from typing import Any

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile

ALT_QUOTES = {
    "orders.quote_venue_field": "venue",
    "orders.quote_price_field": "px",
    "orders.quote_time_field": "ts",
    "orders.quote_reason_field": "why",
}
ALT = DEFAULT_PROFILE.replace(ALT_QUOTES)
T0_S = 1_793_491_200  # 2026-11-01T00:00:00Z


def order(i: int = 0, *, names: ServiceProfile = DEFAULT_PROFILE, seconds: bool = False) -> dict:
    """A closed buy of 1 BTC/BRL at 101 on venueA with three quotes under ``names``."""
    scale = 1 if seconds else 1000
    o = names.orders
    quotes: list[dict[str, Any]] = [
        {o.quote_venue_field: "venueA", o.quote_price_field: "100", o.quote_time_field: T0_S},
        {o.quote_venue_field: "venueB", o.quote_price_field: "99.5", o.quote_time_field: T0_S},
        {
            o.quote_venue_field: "venueC",
            o.quote_price_field: "98",
            o.quote_time_field: T0_S,
            o.quote_reason_field: "stale book",
        },
    ]
    for q in quotes:
        q[o.quote_time_field] *= scale
    return {
        "id": f"o-{i}",
        "exchange": "toolkit-sim",
        "executedExchange": "venueA",
        "symbol": "BTC/BRL",
        "side": "buy",
        "type": "market",
        "status": "closed",
        "amount": "1",
        "quoteAmount": "101",
        "average": "101",
        "createdAt": (T0_S + i) * scale,
        "updatedAt": (T0_S + i + 2) * scale,
        "executedAt": (T0_S + i + 2) * scale,
        "trades": [
            {"id": f"t-{i}", "side": "buy", "price": "101", "amount": "1", "cost": "101",
             "timestamp": (T0_S + i + 2) * scale},
        ],
        "RFQ": {"quoteId": "q", "quotedPrice": "101", "quotedAt": T0_S * scale,
                "validUntil": (T0_S + 30) * scale},
        "evaluatedTickers": quotes,
    }  # fmt: skip
