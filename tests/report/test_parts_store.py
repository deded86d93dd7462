"""The per-order table built out of core from an order store's typed tables (several part
files, read where they lie): every chunk size gives what the report computes of the store's
frames today."""

from __future__ import annotations

from pathlib import Path

from test_parts import assert_same, whole_set

from toolkit.report._parts import order_parts
from toolkit.sim import Simulator
from toolkit.store import OrderStore


def test_a_stores_tables_in_chunks_give_todays_tables(fresh_sim: Simulator, tmp_path: Path) -> None:
    store = OrderStore(tmp_path / "store")
    with fresh_sim.client() as client:
        store.sync(client, chunk=3)  # several part files, so several table files
    assert len(store.table_files()["orders"]) > 1
    want = whole_set(store.frames())
    assert len(want["per_order"]) > 3
    for k in (1, 3, 7):
        parts = order_parts(store, chunk_orders=k)
        try:
            assert_same(parts, want)
        finally:
            parts.close()
