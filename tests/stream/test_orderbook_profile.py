"""OrderBook under another profile (profiles/alt.toml), sans I/O: the profile comes from
the client (or ``profile=``), listing items are read by the profile's field names, bodies
stamped in seconds give true dates (never 1970), and the book ends right whether the
service publishes every limit event or only execution outcomes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from toolkit.errors import OrderNotFound
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.stream._events import event_from_message
from toolkit.stream._orderbook import OUTCOME_ONLY_RECONCILE_S, OrderBook

ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")
T = 1_763_000_000  # seconds


class FakeRest:
    """The REST side of a service under ``profile``: bodies stamped in seconds, list
    items named as the profile's listing says."""

    def __init__(self, profile: ServiceProfile) -> None:
        self.profile = profile
        self.bodies: dict[str, dict[str, Any]] = {}
        self.fetched: list[str] = []

    def put(self, oid: str, status: str, updated: int, created: int = T) -> None:
        self.bodies[oid] = {
            "id": oid,
            "symbol": "BTC/BRL",
            "side": "buy",
            "type": "limit",
            "status": status,
            "createdAt": created,
            "updatedAt": updated,
        }

    def item(self, body: Mapping[str, Any]) -> dict[str, Any]:
        lst = self.profile.listing
        return {
            lst.id_field: body["id"],
            lst.status_field: body["status"],
            lst.created_at_field: body["createdAt"],
            lst.updated_at_field: body["updatedAt"],
        }

    async def _items(self, status: Any) -> AsyncIterator[dict[str, Any]]:
        wanted = {status} if isinstance(status, str) else set(status or ())
        active = set(self.profile.listing.active_statuses)
        newest_first = sorted(self.bodies.values(), key=lambda b: -b["createdAt"])
        for body in newest_first:
            st = body["status"].upper()
            if "ACTIVE" in wanted and st not in active:
                continue
            yield self.item(body)

    def aiter_limit_orders(
        self, status: str | Iterable[str] | None = None, **_: Any
    ) -> AsyncIterator[dict[str, Any]]:
        return self._items(status)

    async def afetch_order(self, order_id: str) -> Mapping[str, Any]:
        self.fetched.append(order_id)
        if order_id not in self.bodies:
            raise OrderNotFound(order_id)
        return dict(self.bodies[order_id])

    async def atoken(self) -> str:  # pragma: no cover - not used sans I/O
        return "t"


def note(profile: ServiceProfile, oid: str, status: str, updated: int) -> Any:
    msg = {"channel": "watchorders", "message": {"id": oid, "status": status, "updatedAt": updated}}
    return event_from_message(msg, received_at_ns=1, connection_id="c", seq=1, profile=profile)


def test_profile_comes_from_the_client_or_the_keyword() -> None:
    assert OrderBook(FakeRest(ALT)).profile is ALT  # type: ignore[arg-type]
    assert OrderBook().profile is DEFAULT_PROFILE
    assert OrderBook(FakeRest(ALT), profile=DEFAULT_PROFILE).profile is DEFAULT_PROFILE  # type: ignore[arg-type]


def test_reconcile_interval_follows_the_published_events() -> None:
    assert OrderBook(FakeRest(ALT))._reconcile_interval == OUTCOME_ONLY_RECONCILE_S  # type: ignore[arg-type]
    assert OrderBook(FakeRest(DEFAULT_PROFILE))._reconcile_interval is None  # type: ignore[arg-type]
    assert OrderBook(FakeRest(ALT), reconcile_interval=None)._reconcile_interval is None  # type: ignore[arg-type]


def test_to_frame_dates_of_bodies_in_seconds_are_not_1970() -> None:
    book = OrderBook(profile=ALT)
    book.apply({"id": "l1", "status": "OPEN", "updatedAt": T, "symbol": "BTC/BRL"})
    book.apply({"orderId": "m1", "status": "closed", "updatedAt": str(T + 5)})
    book.apply({"id": "x1", "status": "OPEN"})  # no updatedAt at all: NaT, not 1970
    frame = book.to_frame()
    assert list(frame["id"]) == ["l1", "m1", "x1"]
    assert frame["updatedAt"].iloc[0] == pd.Timestamp(T, unit="s", tz="UTC")
    assert frame["updatedAt"].iloc[1] == pd.Timestamp(T + 5, unit="s", tz="UTC")
    assert pd.isna(frame["updatedAt"].iloc[2])
    assert (frame["updatedAt"].dropna().dt.year >= 2025).all()
    assert list(frame["status"]) == ["OPEN", "CLOSED", "OPEN"]
    assert list(frame["statusRaw"]) == ["OPEN", "closed", "OPEN"]
    assert str(frame["updatedAt"].dtype) == "datetime64[ms, UTC]"


def test_seconds_stamps_still_order_the_life_cycle() -> None:
    book = OrderBook(profile=ALT)
    assert book.apply(note(ALT, "l1", "OPEN", T), reconciled=False) is not None
    assert book.apply(note(ALT, "l1", "TRIGGERED", T + 1)) is not None
    assert book.apply(note(ALT, "l1", "OPEN", T)) is None  # stale
    # several steps within one second: the one further along wins
    assert book.apply(note(ALT, "l1", "PROCESSING", T + 1)) is not None
    assert book.apply(note(ALT, "l1", "TRIGGERED", T + 1)) is None
    assert book.orders["l1"].updated_at_ms == (T + 1) * 1000


@pytest.mark.parametrize("profile", [DEFAULT_PROFILE, ALT], ids=["default", "alt"])
@pytest.mark.parametrize("mode", ["all", "outcome_only"])
def test_book_ends_right_in_both_limit_event_modes(profile: ServiceProfile, mode: str) -> None:
    """A limit order created, one cancelled, one executed: with every event published the
    notifications carry the book; with outcomes only, the REST reconcile fills in what
    was never published (OPEN, CANCELLING, CANCELLED)."""
    profile = profile.replace({"stream.limit_events": mode})
    rest = FakeRest(profile)
    book = OrderBook(rest, profile=profile)  # type: ignore[arg-type]

    async def main() -> None:
        await book.reconcile()  # the first pass takes the listing mark
        rest.put("l-a", "OPEN", T, created=T)
        rest.put("l-b", "OPEN", T, created=T + 1)
        if mode == "all":
            book.apply(note(profile, "l-a", "OPEN", T))
            book.apply(note(profile, "l-b", "OPEN", T))
        rest.put("l-a", "CANCELLED", T + 2, created=T)
        rest.put("l-b", "closed", T + 3, created=T + 1)
        if mode == "all":
            book.apply(note(profile, "l-a", "CANCELLING", T + 1))
            book.apply(note(profile, "l-a", "CANCELLED", T + 2))
        book.apply(note(profile, "l-b", "closed", T + 3))  # outcomes are always published
        await book.reconcile()

    asyncio.run(main())
    states = {oid: (s.status, s.updated_at_ms, s.final) for oid, s in book.orders.items()}
    assert states == {
        "l-a": ("CANCELLED", (T + 2) * 1000, True),
        "l-b": ("CLOSED", (T + 3) * 1000, True),
    }
    frame = book.to_frame().set_index("id")
    assert frame.loc["l-a", "updatedAt"] == pd.Timestamp(T + 2, unit="s", tz="UTC")
