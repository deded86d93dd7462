"""The seeded history of the simulator: deterministic for a seed, covering every status of
both order families, consistent numbers, and fast enough for large accounts."""

from __future__ import annotations

import time
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal

from toolkit.sim._history import DAY_MS, generate_history
from toolkit.sim._orders import LIMIT_STATUSES, MARKET_STATUSES, format_order

ANCHOR = 1_790_000_000_000


def test_same_seed_same_history() -> None:
    first, next_a = generate_history(7, 300, ANCHOR)
    second, next_b = generate_history(7, 300, ANCHOR)
    assert next_a == next_b == len(first) + 1
    assert [format_order(o) for o in first] == [format_order(o) for o in second]


def test_other_seed_other_history() -> None:
    a, _ = generate_history(7, 100, ANCHOR)
    b, _ = generate_history(8, 100, ANCHOR)
    assert [o.id for o in a] != [o.id for o in b]


def test_counts_accounts_and_window() -> None:
    orders, _ = generate_history(3, 200, ANCHOR)
    per_account = Counter(o.account for o in orders)
    assert per_account == {"A1": 200, "A2": 20}
    assert all(ANCHOR - 30 * DAY_MS <= o.created_at < ANCHOR for o in orders)
    assert all(o.created_at <= o.updated_at < ANCHOR for o in orders)
    assert {o.profile for o in orders if o.account == "A1"} == {"P1", "P2"}
    assert {o.profile for o in orders if o.account == "A2"} == {"P9"}
    assert len({o.id for o in orders}) == len(orders)
    # ids grow with creation time, so id order breaks createdAt ties consistently
    assert [o.id[2:8] for o in orders] == sorted(o.id[2:8] for o in orders)


def test_every_status_of_both_families_even_in_a_small_history() -> None:
    orders, _ = generate_history(11, 20, ANCHOR)
    a1 = [o for o in orders if o.account == "A1"]
    assert {o.status for o in a1 if o.type == "market"} == set(MARKET_STATUSES)
    assert {o.status for o in a1 if o.type == "limit"} == set(LIMIT_STATUSES)


def test_live_orders_stay_live() -> None:
    orders, _ = generate_history(5, 400, ANCHOR)
    for order in orders:
        if order.type == "limit" and order.status in ("OPEN", "TRIGGERED", "PROCESSING"):
            assert order.expires_at is not None and order.expires_at > ANCHOR
        if order.status in ("TRIGGERED", "PROCESSING"):
            assert order.held  # the engine must not move them on its own


def test_fields_by_status_and_variety() -> None:
    orders, _ = generate_history(7, 600, ANCHOR)
    formatted = [format_order(o) for o in orders]
    closed = [f for f in formatted if f["status"] == "closed"]
    assert closed and all("trades" in f and "fee" in f for f in closed)
    assert all("trades" not in f for f in formatted if f["status"] != "closed")
    assert all(f["errorMessage"] for f in formatted if f["status"] in ("rejected", "REJECTED"))
    assert any("RFQ" in f for f in closed)
    assert any(f["exchange"] == "toolkit-sim" and "executedExchange" in f for f in closed)
    assert any("executedExchange" not in f for f in closed)
    assert any(f["filledStatus"] == "partiallyFilled" for f in closed)
    assert {t["takerOrMaker"] for f in closed for t in f["trades"]} == {"taker", "maker"}
    reasons = [t for f in formatted for t in f.get("evaluatedTickers", []) if "reason" in t]
    assert reasons
    assert {f["fee"]["rate"] for f in closed} >= {"0.0050", "0.0035", "0.0025"}


def test_numbers_add_up_in_every_closed_order() -> None:
    orders, _ = generate_history(9, 400, ANCHOR)
    for order in orders:
        f = format_order(order)
        if f["status"] != "closed":
            continue
        trades = f["trades"]
        cost = sum(Decimal(t["cost"]) for t in trades)
        filled = sum(Decimal(t["amount"]) for t in trades)
        assert Decimal(f["cost"]) == cost
        assert Decimal(f["filled"]) == filled
        assert Decimal(f["filled"]) + Decimal(f["remaining"]) == Decimal(f["amountOriginal"])
        vwap = (
            sum((Decimal(t["price"]) * Decimal(t["amount"]) for t in trades), Decimal(0)) / filled
        )
        assert abs(Decimal(f["average"]) - vwap) <= Decimal("0.0001") * vwap
        rate = Decimal(f["fee"]["rate"])
        assert Decimal(f["fee"]["cost"]) == (rate * cost).quantize(Decimal("0.01"), ROUND_HALF_UP)
        assert sum(Decimal(t["fee"]["cost"]) for t in trades) == Decimal(f["fee"]["cost"])
        venues = [q["exchange"] for q in f["evaluatedTickers"]]
        assert len(venues) >= 4
        executing = f.get("executedExchange", f["exchange"])
        assert executing in venues
        chosen = next(q for q in f["evaluatedTickers"] if q["exchange"] == executing)
        assert "reason" not in chosen
        if f["type"] == "limit":
            limit = Decimal(f["limitPrice"])
            prices = [Decimal(t["price"]) for t in trades]
            assert (
                all(p <= limit for p in prices)
                if f["side"] == "buy"
                else all(p >= limit for p in prices)
            )


def test_scales_to_large_accounts() -> None:
    started = time.perf_counter()
    orders, _ = generate_history(1, 20_000, ANCHOR)
    elapsed = time.perf_counter() - started
    assert len(orders) == 22_000
    # 100,000 orders must stay well under 30 s; a fifth of them gets a fifth of that
    assert elapsed < 6.0
