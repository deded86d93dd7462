"""The simulator's market and engine: the seeded random walk, tickers on the bus, limit
orders triggering, executing, re-arming and expiring as prices and deadlines pass."""

from __future__ import annotations

import asyncio
import time
from decimal import Decimal
from typing import Any

from _helpers import create_limit_id, session, wait_status

from toolkit.sim import Simulator
from toolkit.sim._engine import Market
from toolkit.sim._knobs import Knobs
from toolkit.sim._state import SYMBOLS, SimState


def state(**knobs: Any) -> SimState:
    k = Knobs(seed=3, engine=False, history_orders=30)
    k.update(**knobs)
    return SimState(k)


def drain(queue: asyncio.Queue[Any]) -> list[Any]:
    out = []
    while not queue.empty():
        out.append(queue.get_nowait())
    return out


def test_walk_is_seeded_and_never_crosses() -> None:
    a, b = Market(5, SYMBOLS), Market(5, SYMBOLS)
    for _ in range(300):
        a.step()
        b.step()
        for sym in SYMBOLS:
            bid, _, ask, _ = a.best(sym)
            assert bid < ask
    assert a.center == b.center
    c = Market(6, SYMBOLS)
    for _ in range(300):
        c.step()
    assert c.center != a.center


def test_move_puts_every_venue_around_the_price() -> None:
    market = Market(1, SYMBOLS)
    market.move("ETH/BRL", Decimal("20000"))
    bid, _, ask, _ = market.best("ETH/BRL")
    assert Decimal("19900") < bid < ask < Decimal("20100")


def test_tick_publishes_tickers() -> None:
    sim = state()
    sub = sim.bus.attach("A1")
    sim.engine.tick(0.5)
    messages = drain(sub.queue)
    tickers = {topic[1]: msg for topic, msg in messages if topic[0] == "watchticker"}
    assert set(tickers) == set(SYMBOLS)
    btc = tickers["BTC/BRL"]
    assert set(btc) == {"symbol", "bid", "ask", "last", "timestamp"}
    assert isinstance(btc["bid"], str) and Decimal(btc["bid"]) < Decimal(btc["ask"])
    (all_tickers,) = [m for t, m in messages if t == ("watchtickers", None)]
    assert [t["symbol"] for t in all_tickers["tickers"]] == list(SYMBOLS)


def test_triggers_follow_spec_direction() -> None:
    sim = state()
    far = sim.now_ms() + 3_600_000
    buy = sim.create_limit(
        "A1", "P1", "BTC/BRL", "buy", Decimal("0.01"), None, Decimal("300000"), far, None
    )
    sell = sim.create_limit(
        "A1", "P1", "BTC/BRL", "sell", Decimal("0.01"), None, Decimal("400000"), far, None
    )
    assert sim.move_price("BTC/BRL", Decimal("350000")) == []
    assert sim.move_price("BTC/BRL", Decimal("299000")) == [buy.id]
    assert buy.status == "TRIGGERED" and sell.status == "OPEN"
    assert buy.trigger is not None and Decimal(buy.trigger["triggerPrice"]) <= Decimal("300000")
    assert sim.move_price("BTC/BRL", Decimal("401000")) == [sell.id]
    assert sell.status == "TRIGGERED"


def test_balances_lock_and_publish() -> None:
    sim = state()
    sub = sim.bus.attach("A1")
    sim.create_limit(
        "A1",
        "P1",
        "SOL/BRL",
        "sell",
        Decimal("2"),
        None,
        Decimal("900"),
        sim.now_ms() + 60_000,
        None,
    )
    (balance,) = [m for t, m in drain(sub.queue) if t == ("watchbalance", "A1")]
    sol = next(r for r in balance["balances"] if r["asset"] == "SOL")
    assert Decimal(sol["locked"]) >= 2
    assert Decimal(sol["free"]) + Decimal(sol["locked"]) == Decimal(sol["total"])


def test_execution_cycle_and_rearm_on_the_loop() -> None:
    async def scenario() -> tuple[list[str], list[str]]:
        sim = state(execution_step_s=0.01, rearm_rate=1.0)
        sim.attach(asyncio.get_running_loop())
        far = sim.now_ms() + 3_600_000
        ok = sim.create_limit(
            "A1", "P1", "ETH/BRL", "buy", Decimal("0.1"), None, Decimal("17000"), far, None
        )
        flaky = sim.create_limit(
            "A1", "P1", "SOL/BRL", "buy", Decimal("1"), None, Decimal("700"), far, None
        )
        sim.move_price("ETH/BRL", Decimal("16900"))
        sim.market.move("SOL/BRL", Decimal("690"))
        sim.check_triggers("SOL/BRL", may_fail=True)  # as an engine tick would
        deadline = time.monotonic() + 5
        while ok.status != "CLOSED" or flaky.status != "OPEN":
            assert time.monotonic() < deadline, (ok.status, flaky.status)
            await asyncio.sleep(0.01)
        await sim.close()
        return sim.events[ok.id], sim.events[flaky.id]

    ok_events, flaky_events = asyncio.run(scenario())
    assert ok_events == ["OPEN", "TRIGGERED", "PROCESSING", "EXECUTED", "closed"]
    assert flaky_events == ["OPEN", "TRIGGERED", "OPEN"]


def test_expiry_at_the_deadline(fresh_sim: Simulator) -> None:
    http = session(fresh_sim)
    expires = int(time.time() * 1000) + 300
    order_id = create_limit_id(http, expiresAt=expires)
    order = wait_status(http, order_id, "EXPIRED", timeout=10, poll=0.02)
    assert order["updatedAt"] >= expires
    assert fresh_sim.control.events(order_id) == ["OPEN", "EXPIRED"]
    http.close()


def test_move_price_executes_through_the_server(fresh_sim: Simulator) -> None:
    http = session(fresh_sim)
    # seeded OPEN orders crossed by these moves trigger first and finish, so the balance
    # delta below is this test's order alone
    for price in ("14900", "15100"):
        for other in fresh_sim.control.move_price("ETH/BRL", price)["triggered"]:
            deadline = time.monotonic() + 10
            while http.get("/orders/fetchOrder", params={"orderId": other}).json()["status"] in (
                "TRIGGERED",
                "PROCESSING",
                "EXECUTED",
            ):
                assert time.monotonic() < deadline
                time.sleep(0.02)
    before = fresh_sim.control.balances()
    order_id = create_limit_id(
        http,
        symbol="ETH/BRL",
        amount="0.5",
        limitPrice="15000",
        expiresAt=int(time.time() * 1000) + 60_000,
    )
    assert fresh_sim.control.move_price("ETH/BRL", "14900")["triggered"] == [order_id]
    order = wait_status(http, order_id, "closed", timeout=10, poll=0.02)
    assert all(Decimal(t["price"]) <= Decimal("15000") for t in order["trades"])
    assert order["triggerPrice"] and order["triggeredAt"] <= order["executedAt"]
    after = fresh_sim.control.balances()
    eth = [
        next(Decimal(r["total"]) for r in b["balances"] if r["asset"] == "ETH")
        for b in (before, after)
    ]
    assert eth[1] - eth[0] == Decimal("0.5")
    http.close()


def test_live_engine_moves_prices_and_places_orders() -> None:
    with Simulator(seed=5, history_orders=20, tick_interval_s=0.02, order_interval_s=0.05) as s:
        before = set(s.control.order_ids())
        deadline = time.monotonic() + 10
        while not set(s.control.order_ids()) - before:
            assert time.monotonic() < deadline, "the engine placed no order"
            time.sleep(0.02)
        assert s.control.set_engine(False) is False
        assert s.control.knobs()["engine"] is False
