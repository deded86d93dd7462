"""OrderBook.reconcile costs what changed (sans-I/O, a REST side in memory): a limit order the
listing shows with the status and ``updatedAt`` the book holds is not fetched; one shown
otherwise, not shown, or shown by an item that breaks the contract is; a pass soon after
a gap is followed by one once the lagging listing caught up; reconciles asked for while
one runs are folded into one; reconciles that keep failing on the network end
``run`` with one TransportError, the book keeping its state."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from toolkit.errors import InvalidRequest, OrderNotFound, TransportError
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile, set_path
from toolkit.stream._book_reconcile import Outage, settle_delay
from toolkit.stream._events import SessionEvent
from toolkit.stream._orderbook import OrderBook

T = 1_763_000_000_000  # ms
ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")
PROFILES = [DEFAULT_PROFILE, ALT]


def stamp(ms: int, profile: ServiceProfile) -> int:
    """A time as the service writes it under ``profile`` (seconds under alt)."""
    return ms // 1000 if profile.orders.timestamp_unit == "s" else ms


class Rest:
    """The REST side of one account in memory: listing items (newest first) built from the
    orders with the profile's field names, fetchOrder answers, and what was asked."""

    def __init__(self, profile: ServiceProfile = DEFAULT_PROFILE) -> None:
        self.profile = profile
        self.bodies: dict[str, dict[str, Any]] = {}
        #: listing items by id, when set by hand (a broken item); else built from bodies
        self.items: dict[str, dict[str, Any]] = {}
        self.hidden: set[str] = set()  # not in the listing yet (eventual consistency)
        self.fetched: list[str] = []
        self.listings = 0
        self.gate: asyncio.Event | None = None  # the listing waits on it when set
        self.listing_error: Exception | None = None

    def order(self, oid: str, status: str, updated: int, kind: str = "limit") -> dict[str, Any]:
        body = {
            "id": oid,
            "type": kind,
            "status": status,
            "createdAt": stamp(T, self.profile),
            "updatedAt": stamp(updated, self.profile),
            "symbol": "BTC/BRL",
        }
        self.bodies[oid] = body
        return dict(body)

    def item(self, body: Mapping[str, Any]) -> dict[str, Any]:
        listing = self.profile.listing
        item: dict[str, Any] = {}
        for name, value in (
            (listing.id_field, body["id"]),
            (listing.status_field, body["status"]),
            (listing.created_at_field, body["createdAt"]),
            (listing.updated_at_field, body["updatedAt"]),
        ):
            set_path(item, name, value)
        return item

    async def _items(self, statuses: set[str] | None) -> AsyncIterator[dict[str, Any]]:
        self.listings += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.listing_error is not None:
            raise self.listing_error
        for oid, body in reversed(self.bodies.items()):
            if body["type"] != "limit" or oid in self.hidden:
                continue
            if statuses is not None and body["status"].upper() not in statuses:
                continue
            yield self.items.get(oid) or self.item(body)

    def aiter_limit_orders(
        self, status: str | Iterable[str] | None = None, **_: Any
    ) -> AsyncIterator[dict[str, Any]]:
        wanted = None if status is None or isinstance(status, str) else set(status)
        return self._items(wanted)

    async def afetch_order(self, order_id: str) -> Mapping[str, Any]:
        self.fetched.append(order_id)
        if order_id not in self.bodies:
            raise OrderNotFound(order_id)
        return dict(self.bodies[order_id])

    async def atoken(self) -> str:  # pragma: no cover - not used sans I/O
        return "t"


def held(rest: Rest, *orders: tuple[str, str, int, str]) -> OrderBook:
    """A book (its first reconcile done) holding ``orders`` as REST has them now."""
    book = OrderBook(rest, profile=rest.profile)  # type: ignore[arg-type]
    for oid, status, updated, kind in orders:
        book.apply(rest.order(oid, status, updated, kind))
    asyncio.run(book.reconcile())  # takes the mark of the recent orders' listing
    rest.fetched.clear()
    return book


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_a_limit_order_listed_as_held_is_not_fetched(profile: ServiceProfile) -> None:
    rest = Rest(profile)
    book = held(rest, ("l-1", "OPEN", T, "limit"), ("l-2", "TRIGGERED", T + 2000, "limit"))
    assert asyncio.run(book.reconcile()) == []
    assert rest.fetched == []
    assert book.last_reconcile is not None
    assert (book.last_reconcile.fetched, book.last_reconcile.confirmed) == (0, 2)


def test_the_listing_status_is_compared_in_the_canonical_case() -> None:
    rest = Rest()
    book = held(rest, ("l-1", "OPEN", T, "limit"))
    rest.items["l-1"] = {"id": "l-1", "status": "open", "createdAt": T, "updatedAt": T}
    asyncio.run(book.reconcile())
    assert rest.fetched == []


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("status", "updated"), [("TRIGGERED", T + 5000), ("OPEN", T + 5000), ("CANCELLING", T)]
)
def test_a_limit_order_listed_otherwise_is_fetched(
    profile: ServiceProfile, status: str, updated: int
) -> None:
    rest = Rest(profile)
    book = held(rest, ("l-1", "OPEN", T, "limit"), ("l-2", "OPEN", T, "limit"))
    rest.order("l-1", status, updated)
    changes = asyncio.run(book.reconcile())
    assert rest.fetched == ["l-1"]
    assert [(e.order_id, e.status) for e in changes] == [("l-1", status)]
    assert book.orders["l-1"].updated_at_ms == updated


def test_a_held_order_the_listing_does_not_show_is_fetched() -> None:
    rest = Rest()
    book = held(
        rest,
        ("l-new", "OPEN", T, "limit"),
        ("l-done", "OPEN", T, "limit"),
        ("l-same", "OPEN", T, "limit"),
        ("m-1", "pending", T, "market"),
    )
    rest.hidden.add("l-new")  # too new for the lagging replica
    rest.order("l-done", "EXPIRED", T + 1000)  # left the live statuses
    asyncio.run(book.reconcile())
    # the market order (no listing shows it) too; the order listed as held is not
    assert sorted(rest.fetched) == ["l-done", "l-new", "m-1"]
    assert book.orders["l-done"].final


def test_an_order_the_book_does_not_hold_is_fetched() -> None:
    rest = Rest()
    book = held(rest, ("l-1", "OPEN", T, "limit"))
    rest.order("l-2", "OPEN", T + 10)
    asyncio.run(book.reconcile())
    assert rest.fetched == ["l-2"] and "l-2" in book


@pytest.mark.parametrize(
    "item",
    [
        {"id": 123, "status": "OPEN", "createdAt": T, "updatedAt": T},  # a numeric id
        {"id": "123", "createdAt": T, "updatedAt": T},  # no status
        {"id": "123", "status": "OPEN", "createdAt": T},  # no updatedAt
        {"id": "123", "status": "OPEN", "createdAt": T, "updatedAt": "soon"},
        {"id": "123", "status": 1, "createdAt": T, "updatedAt": T},  # not a string
    ],
    ids=["numeric-id", "no-status", "no-updatedAt", "bad-updatedAt", "numeric-status"],
)
def test_an_item_that_breaks_the_contract_is_fetched_not_trusted(item: dict[str, Any]) -> None:
    rest = Rest()
    book = held(rest, ("123", "OPEN", T, "limit"))
    rest.items["123"] = item
    asyncio.run(book.reconcile())
    assert rest.fetched == ["123"]
    assert book.last_reconcile is not None and book.last_reconcile.confirmed == 0


def test_the_old_strategy_stays_selectable_and_fetches_every_open_order() -> None:
    rest = Rest()
    book = held(rest, ("l-1", "OPEN", T, "limit"), ("l-2", "OPEN", T, "limit"))
    book._trust_listing = False
    asyncio.run(book.reconcile())
    assert sorted(rest.fetched) == ["l-1", "l-2"]


def test_reconciles_asked_for_while_one_runs_are_folded_into_one() -> None:
    rest = Rest()
    book = held(rest, ("l-1", "OPEN", T, "limit"))
    passes_before, listings_before = book.reconciles, rest.listings

    async def main() -> None:
        rest.order("l-1", "TRIGGERED", T + 1000)
        # the first pass applies TRIGGERED; then the order moves on, for the next pass
        book.add_listener(
            lambda e: rest.order("l-1", "CLOSED", T + 2000) if e.status == "TRIGGERED" else None
        )
        rest.gate = asyncio.Event()
        first = asyncio.create_task(book.reconcile())
        while rest.listings == listings_before:
            await asyncio.sleep(0)
        later = [asyncio.create_task(book.reconcile()) for _ in range(20)]
        await asyncio.sleep(0)
        rest.gate.set()
        assert [e.status for e in await first] == ["TRIGGERED"]
        results = await asyncio.gather(*later)
        # one more pass for the twenty, every one of them answered by it
        assert all([e.status for e in r] == ["CLOSED"] for r in results)

    asyncio.run(main())
    assert book.reconciles - passes_before == 2
    assert rest.listings - listings_before == 2 * 2  # live statuses + recent, per pass


def test_a_listing_that_fails_on_the_network_ends_the_pass_with_nothing_fetched() -> None:
    rest = Rest()
    book = held(rest, *((f"l-{n}", "OPEN", T, "limit") for n in range(50)))
    rest.listing_error = TransportError("connect failed")
    with pytest.raises(TransportError, match="connect failed"):
        asyncio.run(book.reconcile())
    # not fifty fetches that would fail the same way, each after its own timeout
    assert rest.fetched == []
    assert book.reconciles == 1  # the pass in held(): this one did not complete
    assert len(book) == 50  # kept


def test_a_fetch_that_fails_on_the_network_is_raised_after_the_others_are_applied() -> None:
    rest = Rest()
    book = held(rest, ("l-1", "OPEN", T, "limit"), ("m-1", "pending", T, "market"))
    rest.order("l-1", "CANCELLED", T + 1)
    real = rest.afetch_order

    async def fetch(order_id: str) -> Mapping[str, Any]:
        if order_id == "m-1":
            raise TransportError("connection reset")
        return await real(order_id)

    rest.afetch_order = fetch  # type: ignore[method-assign]
    with pytest.raises(TransportError, match="connection reset"):
        asyncio.run(book.reconcile())
    assert book.orders["l-1"].status == "CANCELLED"  # read, and kept
    assert book.reconciles == 1


class Session:
    """What ``OrderBook.run`` needs of a stream session, connected and quiet."""

    subscriptions = ("watchorders",)
    closed = False
    error = None

    def __init__(self) -> None:
        self.callbacks: list[Callable[[object], None]] = []

    def add_callback(self, fn: Callable[[object], None]) -> Callable[[], None]:
        self.callbacks.append(fn)
        return lambda: self.callbacks.remove(fn)

    async def subscribe(self, channel: str, **_: Any) -> None:  # pragma: no cover
        pass

    def gap(self) -> None:
        event = SessionEvent("_session", 0, "c1", 0, None, "gap")
        for fn in list(self.callbacks):
            fn(event)


def test_run_ends_with_one_transport_error_when_reconciles_keep_failing() -> None:
    rest = Rest()
    book = held(rest, ("l-1", "OPEN", T, "limit"))
    book._unreachable_after = 0.2
    rest.listing_error = TransportError("connect failed")
    rest.bodies.clear()

    async def failing_fetch(order_id: str) -> Mapping[str, Any]:
        rest.fetched.append(order_id)
        raise TransportError("connect failed")

    rest.afetch_order = failing_fetch  # type: ignore[method-assign]
    session = Session()

    async def main() -> None:
        with pytest.raises(TransportError, match="the service looks gone") as caught:
            await asyncio.wait_for(book.run(session), 30)  # type: ignore[arg-type]
        assert "the book keeps its last state" in str(caught.value)
        assert "connect failed" in str(caught.value)

    asyncio.run(main())
    assert rest.listings >= 2  # tried again before giving up, not at the next gap
    assert book.orders["l-1"].status == "OPEN"  # kept
    assert session.callbacks == []


def test_outage_gives_up_after_the_limit_and_a_success_starts_over() -> None:
    outage = Outage(10.0)
    assert outage.retry_s == 2.5
    assert not outage.failed(0.0, 1.0)
    assert not outage.failed(3.5, 9.9)  # under the limit
    assert outage.failed(12.0, 12.5)
    outage.succeeded()
    assert not outage.failed(100.0, 130.0)  # one failure alone never gives up
    assert outage.failed(132.0, 133.0)


@pytest.mark.parametrize("value", [0, -1.0, float("inf"), "soon", True])
def test_unreachable_after_is_checked(value: Any) -> None:
    with pytest.raises(InvalidRequest, match="unreachable_after"):
        OrderBook(unreachable_after=value)


def test_unreachable_after_defaults_to_twice_the_client_timeout() -> None:
    class Settings:
        timeout = 3.0

    rest = Rest()
    rest.settings = Settings()  # type: ignore[attr-defined]
    assert OrderBook(rest)._unreachable_after == 6.0  # type: ignore[arg-type]


def test_a_pass_soon_after_a_gap_is_followed_by_one_once_the_listing_caught_up() -> None:
    # (gap ended at, pass began at, now, listing lag): seconds until the settling pass
    assert settle_delay(None, 5.0, 6.0, 5.0) is None  # no gap yet: the start's pass
    assert settle_delay(100.0, 100.5, 101.0, 5.0) == 4.0
    assert settle_delay(100.0, 100.5, 106.0, 5.0) == 0.0  # already due
    assert settle_delay(100.0, 105.0, 105.5, 5.0) is None  # the listing had caught up
