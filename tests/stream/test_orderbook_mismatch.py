"""OrderBook when REST answers do not match the profile: the InvalidResponse of a reconcile
(a profile or contract error) ends ``run()`` instead of leaving an empty book, while a
transient failure (a 5xx, a route not active yet) is still only logged (a network failure
is raised: test_orderbook_reconcile.py); a view built on the book shows the error."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any

import pytest

from toolkit.errors import (
    InvalidResponse,
    OrderNotFound,
    RouteNotActive,
    ServiceUnavailable,
    ToolkitError,
)
from toolkit.profile import DEFAULT_PROFILE
from toolkit.sim import Simulator
from toolkit.stream._orderbook import OrderBook

T = 1_763_000_000_000  # ms

MISMATCH = InvalidResponse(
    "listing item without an order id: no 'id' (listing.id_field) nor any usual id name; "
    "Set listing.id_field in the profile"
)


class FailingListing:
    """A REST side whose listing raises ``error``; fetchOrder answers from ``bodies``
    (or raises ``fetch_error``)."""

    profile = DEFAULT_PROFILE

    def __init__(self, error: ToolkitError, fetch_error: ToolkitError | None = None) -> None:
        self.error = error
        self.fetch_error = fetch_error
        self.bodies: dict[str, dict[str, Any]] = {}
        self.fetched: list[str] = []

    async def _items(self) -> AsyncIterator[dict[str, Any]]:
        raise self.error
        yield {}  # pragma: no cover - an async generator

    def aiter_limit_orders(
        self, status: str | Iterable[str] | None = None, **_: Any
    ) -> AsyncIterator[dict[str, Any]]:
        return self._items()

    async def afetch_order(self, order_id: str) -> Mapping[str, Any]:
        self.fetched.append(order_id)
        if self.fetch_error is not None:
            raise self.fetch_error
        if order_id not in self.bodies:
            raise OrderNotFound(order_id)
        return dict(self.bodies[order_id])

    async def atoken(self) -> str:  # pragma: no cover - not used sans I/O
        return "t"


def test_a_listing_that_does_not_match_the_profile_is_raised_by_reconcile() -> None:
    rest = FailingListing(MISMATCH)
    rest.bodies["l-1"] = {"id": "l-1", "status": "CANCELLED", "updatedAt": T + 1}
    book = OrderBook(rest)  # type: ignore[arg-type]
    book.apply({"id": "l-1", "status": "OPEN", "updatedAt": T})
    with pytest.raises(InvalidResponse, match=r"listing\.id_field") as caught:
        asyncio.run(book.reconcile())
    assert caught.value is MISMATCH
    # the orders it knows were still re-read and applied before the error was raised
    assert rest.fetched == ["l-1"] and book.orders["l-1"].status == "CANCELLED"
    assert book.reconciles == 0  # not a completed pass


def test_a_fetch_order_answer_that_does_not_match_is_raised_too() -> None:
    bad_body = InvalidResponse("fetchOrder answered an order without 'status'")
    rest = FailingListing(ServiceUnavailable("503"), fetch_error=bad_body)
    book = OrderBook(rest)  # type: ignore[arg-type]
    book.apply({"id": "l-1", "status": "OPEN", "updatedAt": T})
    with pytest.raises(InvalidResponse, match="without 'status'"):
        asyncio.run(book.reconcile())


@pytest.mark.parametrize(
    "error",
    [
        ServiceUnavailable("503 after every retry"),
        RouteNotActive("404"),
    ],
    ids=["5xx", "route-not-active"],
)
def test_a_transient_listing_failure_is_still_only_logged(
    error: ToolkitError, caplog: pytest.LogCaptureFixture
) -> None:
    rest = FailingListing(error)
    book = OrderBook(rest)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, "toolkit.orderbook"):
        assert asyncio.run(book.reconcile()) == []
    assert book.reconciles == 1
    assert "listing limit orders failed" in caplog.text


# ------------------------------------------------------------------ the real simulator

#: the service puts a listed order's id where no usual name is; the client's profile
#: (the default) does not say so
SERVICE = DEFAULT_PROFILE.replace({"listing.id_field": "ref.uid"})


@pytest.fixture
def nested_ids_sim() -> Iterator[Simulator]:
    with Simulator(seed=5, engine=False, history_orders=30, profile=SERVICE) as sim:
        yield sim


async def _until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def test_run_ends_with_the_profile_error_instead_of_an_empty_book(
    nested_ids_sim: Simulator,
) -> None:
    client = nested_ids_sim.client(profile=DEFAULT_PROFILE)

    async def main() -> None:
        book = OrderBook(client)
        with pytest.raises(InvalidResponse, match=r"listing\.id_field") as caught:
            await asyncio.wait_for(book.run(), 20)
        assert "Set listing.id_field in the profile" in str(caught.value)
        await client.aclose()

    asyncio.run(main())


def test_an_order_view_on_such_a_book_shows_the_error(nested_ids_sim: Simulator) -> None:
    from toolkit.widgets import OrderStatusView

    client = nested_ids_sim.client(profile=DEFAULT_PROFILE)

    async def main() -> None:
        view = OrderStatusView(client)
        try:
            await _until(lambda: view.state == "error")
            assert view.state_detail.startswith("InvalidResponse: ")
            assert "listing.id_field" in view.state_detail
            assert "listing.id_field" in view._status_html()
        finally:
            await view.astop()
            await client.aclose()

    asyncio.run(main())
