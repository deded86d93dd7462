"""The simulator's knob ``listing_fault_page``: every call for that page of a listing is
answered ``listing_fault_status``; the pages before it are served as usual."""

from __future__ import annotations

import pytest

from toolkit.errors import RouteNotActive, ServiceUnavailable
from toolkit.sim import Simulator


@pytest.mark.parametrize(("status", "error"), [(503, ServiceUnavailable), (404, RouteNotActive)])
def test_page_2_fails_and_page_1_is_served(
    fresh_sim: Simulator, status: int, error: type[Exception]
) -> None:
    fresh_sim.control.set_knobs(listing_fault_page=2, listing_fault_status=status)
    page = fresh_sim.profile.listing.page_min
    with fresh_sim.client(page_size=page, max_retries=1, backoff_base_s=0.0) as client:
        got: list[dict[str, object]] = []
        with pytest.raises(error):
            for item in client.iter_limit_orders():
                got.append(item)
        assert len(got) == page  # page 1 whole, nothing of page 2
        fresh_sim.control.set_knobs(listing_fault_page=0)
        assert len(client.list_limit_orders()) > page
