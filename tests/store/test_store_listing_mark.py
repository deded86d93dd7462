"""The store's listing mark (the newest listed order, from which the next sync reads the
listing down) moves only when the listing was read to its end: a listing that fails on
page 2 (a 503 after every retry, or a 404 as the route is deactivated while it is read)
leaves the mark where it was, so the next sync still lists, and fetches, the orders of
page 2 and after. Several pages (the size at which paging takes its later-page path),
fault injected on the simulator's page 2 (knob ``listing_fault_page``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.client import Client
from toolkit.errors import ServiceUnavailable
from toolkit.profile import ServiceProfile
from toolkit.sim import Simulator
from toolkit.store import OrderStore
from toolkit.store._files import StoreFiles


@pytest.fixture
def paged(service_profile: ServiceProfile) -> Iterator[tuple[Simulator, Client]]:
    with Simulator(seed=5, engine=False, history_orders=300, profile=service_profile) as sim:
        page = max(sim.profile.listing.page_min, 10)
        with sim.client(page_size=page, max_retries=1, backoff_base_s=0.0) as client:
            yield sim, client


def test_a_404_on_page_2_leaves_the_mark_and_the_next_sync_sees_page_2(
    paged: tuple[Simulator, Client], tmp_path: Path
) -> None:
    sim, client = paged
    limit_ids = set(sim.control.order_ids(type="limit"))
    assert len(limit_ids) > 3 * client.settings.page_size  # several pages
    store = OrderStore(tmp_path / "orders")
    sim.control.set_knobs(listing_fault_page=2, listing_fault_status=404)
    first = store.sync(client)
    assert first.listing_error is not None and first.new == client.settings.page_size
    assert StoreFiles(store.root).read_state().get("listing_newest_ms") is None
    sim.control.set_knobs(listing_fault_page=0)
    second = store.sync(client)
    assert second.listing_error is None
    assert set(store.frames().orders["id"]) == limit_ids  # page 2 and after too


def test_a_503_on_page_2_fails_the_sync_and_the_next_sees_page_2(
    paged: tuple[Simulator, Client], tmp_path: Path
) -> None:
    sim, client = paged
    limit_ids = set(sim.control.order_ids(type="limit"))
    store = OrderStore(tmp_path / "orders")
    sim.control.set_knobs(listing_fault_page=2, listing_fault_status=503)
    with pytest.raises(ServiceUnavailable):
        store.sync(client)
    assert StoreFiles(store.root).read_state().get("listing_newest_ms") is None
    sim.control.set_knobs(listing_fault_page=0)
    store.sync(client)
    assert set(store.frames().orders["id"]) == limit_ids
    # and a sync after a complete one moves the mark, reading only the top again
    assert isinstance(StoreFiles(store.root).read_state().get("listing_newest_ms"), int)
