"""A market order whose body carries no ``type`` (spec 2.4: market by default; the
simulator's knob ``omit_market_type``) is stored as a market order and re-read by id by
every sync while it is not final: never left pending in the store for good."""

from __future__ import annotations

from pathlib import Path

from toolkit.profile import ServiceProfile
from toolkit.sim import Simulator
from toolkit.store import OrderStore
from toolkit.store._files import StoreFiles


def test_a_pending_order_without_type_is_re_read_until_final(
    service_profile: ServiceProfile, tmp_path: Path
) -> None:
    with Simulator(
        seed=5, engine=False, history_orders=40, profile=service_profile, omit_market_type=True
    ) as sim, sim.client() as client:  # fmt: skip
        placed = [
            sim.control.market_order(symbol="BTC/BRL", side="buy", outcome="pending")
            for _ in range(3)
        ]
        ids = [str(order["id"]) for order in placed]
        assert all("type" not in client.fetch_order(oid) for oid in ids)
        store = OrderStore(tmp_path / "orders")
        store.sync(client, ids=ids)
        stored = StoreFiles(store.root).index()
        assert {(stored[i].type, stored[i].status) for i in ids} == {("market", "PENDING")}

        for oid in ids:
            sim.control.advance(oid, "closed")
        second = store.sync(client)
        stored = StoreFiles(store.root).index()
        assert {stored[i].status for i in ids} == {"CLOSED"}
        assert second.changed >= len(ids)

        third = store.sync(client)  # final now: never fetched again
        assert third.fetched == 0
