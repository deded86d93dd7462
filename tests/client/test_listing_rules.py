"""The loader's listing rules of issue 14 (and the parts of the hardening issue in its files):
pages of the wrong size (spec 4.2 rule 4) reported, bad since/until/concurrency refused
before any request, and ``since=`` stopping the newest-first listing with an overlap."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.client._items import ListItems
from toolkit.client._loaders import ListingStop, aload_orders
from toolkit.client._pagination import IrregularPagesWarning, Paginator
from toolkit.errors import InvalidRequest, InvalidResponse
from toolkit.protocol import to_epoch_ms
from toolkit.sim import Simulator

BASE = "http://127.0.0.1:9"  # never dialled: the mock transport answers
DAY_MS = 86_400_000
NOW_MS = 1_790_000_000_000


def item(i: int, created: int) -> dict[str, Any]:
    return {
        "id": f"l-{i}",
        "symbol": "BTC/BRL",
        "side": "buy",
        "type": "limit",
        "status": "CLOSED",
        "limitPrice": "1",
        "expiresAt": None,
        "createdAt": created,
        "updatedAt": created,
    }


class FakeService:
    """A listing of ``n`` orders (one a day, newest first) whose page sizes can be broken,
    and fetchOrder; counts what it was asked."""

    def __init__(self, n: int, limit: int, sizes: Callable[[int], int] | None = None) -> None:
        self.orders = [item(i, NOW_MS - i * DAY_MS) for i in range(n)]
        self.limit = limit
        self.sizes = sizes or (lambda page: limit)
        self.pages = 0
        self.fetches = 0
        self.requests = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if request.url.path == "/orders/fetchOrder":
            self.fetches += 1
            oid = request.url.params["orderId"]
            order = next(o for o in self.orders if o["id"] == oid)
            return httpx.Response(200, json={**order, "amount": "1", "trades": []})
        params = parse_qs(request.url.query.decode())
        start = int(params.get("paginationToken", ["0"])[0])
        size = self.sizes(self.pages)
        self.pages += 1
        chunk = self.orders[start : start + size]
        body: dict[str, Any] = {"orders": chunk}
        if len(chunk) == size:  # a token with every full page (spec 4.2 rule 4)
            body["paginationToken"] = str(start + size)
        return httpx.Response(200, content=json.dumps(body).encode())


def client_for(service: FakeService, **settings: Any) -> Client:
    return Client(
        base_url=BASE,
        transport=httpx.MockTransport(service),
        page_size=service.limit,
        **settings,
    )


# -- pages of the wrong size ----------------------------------------------------------------


def test_short_page_with_a_token_is_an_error_naming_page_and_counts() -> None:
    p = Paginator(limit=3)
    p.feed({"orders": [{"id": "a"}, {"id": "b"}, {"id": "c"}], "paginationToken": "t1"})
    with pytest.raises(InvalidResponse, match=r"page 2 holds 2 items \(limit=3\).*rule 4"):
        p.feed({"orders": [{"id": "d"}, {"id": "e"}], "paginationToken": "t2"})


def test_page_larger_than_limit_is_an_error() -> None:
    p = Paginator(limit=2)
    with pytest.raises(InvalidResponse, match="page 1 holds 3 items, more than limit=2"):
        p.feed({"orders": [{"id": "a"}, {"id": "b"}, {"id": "c"}]})


def test_a_short_last_page_without_token_is_fine() -> None:
    p = Paginator(limit=3)
    assert len(p.feed({"orders": [{"id": "a"}]})) == 1 and p.done


def test_unknown_page_rule_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="page_rule"):
        Paginator(page_rule="ignore")


def test_loader_reports_a_short_page_by_default_and_counts_it_with_warn() -> None:
    # page 2 (index 1) is one short yet carries a token
    service = FakeService(12, limit=4, sizes=lambda page: 3 if page == 1 else 4)
    with client_for(service) as client:
        with pytest.raises(InvalidResponse, match="page 2 holds 3 items"):
            client._run(aload_orders(client, progress=False))
        service.pages = 0
        with pytest.warns(IrregularPagesWarning, match="1 listing page.*3 order"):
            frames = client._run(aload_orders(client, progress=False, page_rule="warn"))
    assert len(frames) == 12 and frames.attrs["irregular_pages"] == {2: 3}


# -- bad arguments, refused before any request ------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"since": float("inf")},
        {"since": float("nan")},
        {"until": float("-inf")},
        {"since": -5},
        {"since": "yesterday"},
        {"until": True},
        {"since": 10**20},
        {"concurrency": 0},
        {"concurrency": -3},
        {"concurrency": 2.5},
        {"overlap_s": float("nan")},
        {"page_rule": "loud"},
        {"ids": ["m-1"], "page_rule": "loud"},
        {"ids": ["m-1"], "concurrency": 0},
    ],
)
def test_bad_arguments_raise_before_any_request(kwargs: dict[str, Any]) -> None:
    service = FakeService(3, limit=4)
    with client_for(service) as client, pytest.raises(InvalidRequest):
        client._run(aload_orders(client, progress=False, **kwargs))
    assert service.requests == 0


# -- since= stops the listing -----------------------------------------------------------------


def test_since_stops_paging_a_page_past_the_bound_with_the_overlap() -> None:
    service = FakeService(60, limit=5)  # 12 pages, one order a day
    since = NOW_MS - 10 * DAY_MS  # orders 0..10 qualify
    with client_for(service) as client:
        frames = client._run(aload_orders(client, since=since, progress=False, overlap_s=0))
        assert sorted(frames.orders["id"]) == sorted(f"l-{i}" for i in range(11))
        # orders 11..15 are a page's worth past the bound: order 15 is on page 4
        assert frames.attrs["listing_stopped_early"] and service.pages == 4
        service.pages = 0
        frames = client._run(
            aload_orders(client, since=since, progress=False, overlap_s=2 * 86_400)
        )
        assert len(frames) == 11 and service.pages == 4  # 13..17: page 4 still
        service.pages = 0
        client._run(aload_orders(client, since=since, progress=False, overlap_s=5 * 86_400))
        assert service.pages == 5  # 16..20: order 20 is on page 5
        service.pages = 0
        client._run(aload_orders(client, progress=False))
        assert service.pages == 13  # without since: every page and the empty last one
    assert service.fetches == 33 + 60


def test_one_misplaced_old_item_does_not_end_the_listing() -> None:
    service = FakeService(30, limit=5)
    service.orders[1]["createdAt"] = NOW_MS - 25 * DAY_MS  # out of place
    since = NOW_MS - 3 * DAY_MS
    with client_for(service) as client:
        frames = client._run(aload_orders(client, since=since, progress=False, overlap_s=0))
    assert set(frames.orders["id"]) == {"l-0", "l-2", "l-3"}
    # seen out of creation order: the listing was read whole
    assert not frames.attrs["listing_stopped_early"] and service.pages == 7


def test_since_against_the_simulator_matches_a_full_load(sim: Simulator) -> None:
    with sim.client(page_size=max(sim.profile.listing.page_min, 10)) as client:
        full = client.load_orders(progress=False)
        created = full.orders["createdAt"].sort_values(ascending=False)
        bound = created.iloc[len(created) // 4]
        since_ms = to_epoch_ms(int(bound.timestamp() * 1000))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            part = client.load_orders(since=since_ms, progress=False)
    assert set(part.orders["id"]) == set(full.orders.loc[full.orders["createdAt"] >= bound, "id"])
    assert part.attrs["listing_stopped_early"]
    assert part.attrs["pages"] < full.attrs["pages"]


def test_since_on_a_listing_sorted_by_last_update_loses_nothing() -> None:
    # old orders updated lately come first (a listing newest by update, not by creation):
    # a page's worth of them before `since` must not end the listing before the new ones
    service = FakeService(0, limit=5)
    old = [item(i, NOW_MS - (30 + i) * DAY_MS) for i in range(12)]
    new = [item(100 + i, NOW_MS - i * DAY_MS) for i in range(3)]
    service.orders = old + new
    with client_for(service) as client:
        frames = client._run(
            aload_orders(client, since=NOW_MS - 3 * DAY_MS, progress=False, overlap_s=0)
        )
    assert sorted(frames.orders["id"]) == ["l-100", "l-101", "l-102"]
    assert not frames.attrs["listing_stopped_early"] and service.pages == 4


def test_since_later_than_every_order_reads_the_whole_listing() -> None:
    # nothing at or after the floor was seen: the listing's order is unknown, read it all
    service = FakeService(12, limit=5)
    with client_for(service) as client:
        frames = client._run(aload_orders(client, since=NOW_MS + DAY_MS, progress=False))
    assert len(frames) == 0 and service.fetches == 0
    assert not frames.attrs["listing_stopped_early"] and service.pages == 3


def test_listing_stop_needs_both_sides_of_the_floor() -> None:
    reader = ListItems()
    floor = NOW_MS - 10 * DAY_MS
    stop = ListingStop(floor, overlap_ms=0, run=2)
    # a run before the floor with nothing at or after it yet: no stop
    assert not any(stop.passed(item(i, floor - (i + 1) * DAY_MS), reader) for i in range(5))
    stop = ListingStop(floor, overlap_ms=0, run=2)
    assert not stop.passed(item(0, floor), reader)  # at the floor: kept
    assert not stop.passed(item(1, floor - DAY_MS), reader)
    assert stop.passed(item(2, floor - 2 * DAY_MS), reader) and stop.stopped
    # out of creation order: the stop is off for good
    stop = ListingStop(floor, overlap_ms=0, run=1)
    assert not stop.passed(item(0, floor - 5 * DAY_MS), reader)
    assert not stop.passed(item(1, floor + DAY_MS), reader)
    assert not stop.passed(item(2, floor - 9 * DAY_MS), reader)
    assert stop.floor_ms is None and not stop.stopped


# -- ids= with since=: the orders' own createdAt ----------------------------------------------


def iso(ms: int, naive: bool = False) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.replace(tzinfo=None).isoformat() if naive else moment.isoformat()


@pytest.mark.parametrize(
    "form",
    [
        lambda ms: iso(ms),
        lambda ms: iso(ms).replace("+00:00", "Z"),
        lambda ms: iso(ms, naive=True),
        lambda ms: str(ms // 1000),
    ],
    ids=["iso-offset", "iso-z", "iso-naive", "numeric-text"],
)
def test_ids_and_since_read_the_times_the_frames_read(form: Callable[[int], str]) -> None:
    service = FakeService(4, limit=5)
    for order in service.orders:
        order["createdAt"] = form(order["createdAt"])
    ids = [str(o["id"]) for o in service.orders]
    with client_for(service) as client:
        frames = client._run(
            aload_orders(client, ids=ids, since=NOW_MS - DAY_MS - 1, progress=False)
        )
    assert sorted(frames.orders["id"]) == ["l-0", "l-1"]
    assert frames.orders["createdAt"].notna().all()


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("yesterday", "order's 'createdAt' (spec 2.4) is neither a Unix timestamp nor an ISO"),
        ("nan", "order's 'createdAt' (spec 2.4) is neither a Unix timestamp nor an ISO"),
        ([1], "order's 'createdAt' (spec 2.4) is neither a Unix timestamp nor an ISO"),
        ("", "order has no 'createdAt' (spec 2.4)"),
    ],
)
def test_ids_and_since_name_the_order_field_not_a_listing_setting(value: Any, says: str) -> None:
    service = FakeService(1, limit=5)
    service.orders[0]["createdAt"] = value
    with client_for(service) as client, pytest.raises(InvalidResponse) as caught:
        client._run(aload_orders(client, ids=["l-0"], since=NOW_MS - DAY_MS, progress=False))
    assert says in str(caught.value) and "listing." not in str(caught.value)
