"""OrderStatusView without a network: its ACTIVE / FINALIZED filter and counts come from
the book's profile (spec 3.2 does not show the membership; market orders per spec 3.1),
and a cancel's outcome says "too late" only when the order executed."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from toolkit.client._cancel import CancelOutcome, CancelResult
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.stream._orderbook import OrderBook
from toolkit.widgets import OrderStatusView

ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")
#: a profile that leaves EXPIRED out of both shortcuts
PARTIAL = dataclasses.replace(
    DEFAULT_PROFILE,
    listing=dataclasses.replace(
        DEFAULT_PROFILE.listing,
        finalized_statuses=("CANCELLING", "EXECUTED", "CLOSED", "CANCELLED", "REJECTED"),
    ),
)
T0 = 1_790_000_000_000


def view_of(profile: ServiceProfile, ev: Any, clock: Any) -> OrderStatusView:
    view = OrderStatusView(OrderBook(profile=profile), clock=clock, autostart=False)
    view.apply(ev.order("open", "OPEN", T0 + 1))
    view.apply(ev.order("cancelling", "CANCELLING", T0 + 2))
    view.apply(ev.order("expired", "EXPIRED", T0 + 3))
    view.apply(ev.order("m-pending", "pending", T0 + 4, type_="market"))
    view.apply(ev.order("m-executed", "executed", T0 + 5, type_="market"))
    return view


@pytest.mark.parametrize(
    ("profile", "active", "finalized", "counts"),
    [
        (
            DEFAULT_PROFILE,
            {"open", "m-pending"},
            {"cancelling", "expired", "m-executed"},
            "(ACTIVE 2, FINALIZED 3)",
        ),
        (
            ALT,  # CANCELLING in ACTIVE
            {"open", "cancelling", "m-pending"},
            {"expired", "m-executed"},
            "(ACTIVE 3, FINALIZED 2)",
        ),
        (
            PARTIAL,  # EXPIRED in neither: in neither filter, counted apart
            {"open", "m-pending"},
            {"cancelling", "m-executed"},
            "(ACTIVE 2, FINALIZED 2, other 1)",
        ),
    ],
    ids=["default", "alt", "partial"],
)
def test_active_and_finalized_follow_the_books_profile(
    ev: Any,
    clock: Any,
    profile: ServiceProfile,
    active: set[str],
    finalized: set[str],
    counts: str,
) -> None:
    view = view_of(profile, ev, clock)
    view.filter.value = "ACTIVE"
    assert set(view.to_frame()["orderId"]) == active
    assert f"{len(active)} of {len(active)} shown</b>; 5 orders {counts}" in view._counts.value
    view.filter.value = "FINALIZED"
    assert set(view.visible_order_ids) == finalized == set(view.to_frame()["orderId"])
    view.stop()


class AcceptingClient:
    async def acancel_limit_order(self, order_id: str) -> CancelResult:
        return CancelResult(order_id, CancelOutcome.ACCEPTED, "CANCELLING", 202)


@pytest.mark.parametrize(
    ("then", "label"),
    [
        ("REJECTED", "ended REJECTED"),
        ("EXPIRED", "ended EXPIRED"),
        ("closed", "too late: CLOSED"),
        ("CANCELLED", "cancelled"),
    ],
)
def test_after_an_accepted_cancel_too_late_means_executed(ev: Any, then: str, label: str) -> None:
    async def main() -> None:
        view = OrderStatusView([], client=AcceptingClient(), autostart=False)
        view.apply(ev.order("l-1", "OPEN", T0))
        await view.cancel("l-1")
        view.apply(ev.order("l-1", "CANCELLING", T0 + 1))
        view.apply(ev.order("l-1", then, T0 + 2))
        assert list(view.to_frame()["cancelOutcome"]) == [label]
        view.stop()

    asyncio.run(main())
