"""A service that stops answering in the middle of a sync (the simulator's black hole):
the sync stops with one TransportError, every body fetched before it is in the store,
the lock is free, and the next sync goes on from there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolkit.errors import TransportError
from toolkit.sim import Simulator
from toolkit.store import OrderStore


def test_a_black_hole_mid_sync_keeps_every_body_fetched(
    fresh_sim: Simulator, tmp_path: Path
) -> None:
    ids = fresh_sim.control.order_ids()
    store = OrderStore(tmp_path / "store")
    with fresh_sim.client(timeout=1.0, concurrency=8) as client:
        client.signin()
        fresh_sim.control.set_knobs(silent_after_requests=30)
        try:
            with pytest.raises(TransportError, match="is not answering") as info:
                store.sync(client, ids=ids, listing=False)
        finally:
            fresh_sim.control.set_knobs(silent=False)
    message = str(info.value)
    kept = int(re.search(r"(\d+) order\(s\) fetched before it kept", message).group(1))  # type: ignore[union-attr]
    assert 0 < kept < len(ids)
    assert "store sync stopped" in message and "breaker_after_s=2" in message
    assert len(store.frames().orders) == kept
    assert not list(store.root.rglob(".*.tmp"))
    with fresh_sim.client() as client:  # the lock is free; the rest comes now
        result = store.sync(client, ids=ids, listing=False)
    assert result.new == len(ids) - kept
    assert len(store.frames().orders) == len(ids)
