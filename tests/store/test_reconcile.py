"""Reconciliation of the store's still-active limit orders against the listing filtered to
the live statuses (spec 4.4: orderId + status + updatedAt), fed the answers the simulator
never gives: a listing that ignores the status filter (spec 4.2: silently), items without
updatedAt, orders that left the live statuses, a listing that is not active."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.store import OrderStore
from toolkit.store._files import LIVE_LIMIT_STATUSES

BASE = "http://127.0.0.1:9"  # never dialled: the mock transport answers
DAY_MS = 86_400_000


class Listing:
    """Limit orders (one a day, newest first; every third one OPEN), the listing with its
    status filter honoured or ignored, and fetchOrder; records the ids fetched."""

    def __init__(self, n: int = 30, *, honour_filter: bool = True) -> None:
        now = int(time.time() * 1000)
        self.orders: list[dict[str, Any]] = [
            {
                "id": f"l-{i:03d}",
                "symbol": "BTC/BRL",
                "side": "buy",
                "type": "limit",
                "status": "OPEN" if i % 3 == 0 else "CLOSED",
                "limitPrice": "1",
                "expiresAt": None,
                "createdAt": now - (i + 1) * DAY_MS,
                "updatedAt": now - (i + 1) * DAY_MS + 1_000,
            }
            for i in range(n)
        ]
        self.market: list[dict[str, Any]] = []  # no listing shows them
        self.log: list[str] = []
        self.honour_filter = honour_filter
        self.without_updated = False
        #: how the live-statuses listing comes: "newest" first (spec 4.2), "oldest"
        #: first, or "no created" (newest first, its items without createdAt)
        self.live_order = "newest"
        self.active = True
        self.fetched: list[str] = []
        self.filters: list[str | None] = []

    def live(self) -> list[str]:
        return [o["id"] for o in self.orders if o["status"] in LIVE_LIMIT_STATUSES]

    def find(self, oid: str) -> dict[str, Any]:
        return next(o for o in [*self.orders, *self.market] if o["id"] == oid)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if not self.active:
            return httpx.Response(404, json={"message": "Not Found"})
        if request.url.path == "/orders/fetchOrder":
            oid = request.url.params["orderId"]
            self.log.append(oid)
            self.fetched.append(oid)
            return httpx.Response(200, json={**self.find(oid), "amount": "1", "trades": []})
        params = parse_qs(request.url.query.decode())
        status = params.get("status", [None])[0]
        self.log.append(f"page {status}")
        start = int(params.get("paginationToken", ["0"])[0])
        if start == 0:
            self.filters.append(status)
        items = self.orders
        if status and self.honour_filter:
            wanted = set(status.split(","))
            items = [o for o in items if o["status"] in wanted]
        if self.without_updated:
            items = [{k: v for k, v in o.items() if k != "updatedAt"} for o in items]
        if status == ",".join(LIVE_LIMIT_STATUSES) and self.live_order == "oldest":
            items = items[::-1]
        elif status == ",".join(LIVE_LIMIT_STATUSES) and self.live_order == "no created":
            items = [{k: v for k, v in o.items() if k != "createdAt"} for o in items]
        limit = int(params["limit"][0])
        chunk = items[start : start + limit]
        body: dict[str, Any] = {"orders": chunk}
        if len(chunk) == limit:
            body["paginationToken"] = str(start + limit)
        return httpx.Response(200, content=json.dumps(body).encode())


def synced(service: Listing, root: Path) -> tuple[OrderStore, Client]:
    client = Client(base_url=BASE, transport=httpx.MockTransport(service), page_size=4)
    store = OrderStore(root)
    store.sync(client)
    assert sorted(service.fetched) == sorted(o["id"] for o in service.orders)
    service.fetched.clear()
    return store, client


def test_unchanged_live_orders_are_confirmed_by_the_listing_not_fetched(tmp_path: Path) -> None:
    service = Listing()
    store, client = synced(service, tmp_path)
    with client:
        result = store.sync(client)
    assert service.fetched == []
    assert result.reconciled == len(service.live()) and result.fetched == 0
    # the live statuses asked for by name (ACTIVE's members are not shown, spec 3.2)
    assert ",".join(LIVE_LIMIT_STATUSES) in service.filters


def test_a_changed_status_or_updated_at_is_fetched(tmp_path: Path) -> None:
    service = Listing()
    store, client = synced(service, tmp_path)
    closed, moved, *rest = service.live()
    service.find(closed).update(status="CANCELLED", updatedAt=service.find(closed)["updatedAt"] + 5)
    service.find(moved)["updatedAt"] += 7  # same status, a later update
    with client:
        result = store.sync(client)
    assert sorted(service.fetched) == sorted([closed, moved])
    assert result.changed == 2 and result.reconciled == len(rest)
    orders = store.frames().orders.set_index("id")
    assert orders.loc[closed, "status"] == "CANCELLED"


def test_a_listing_that_ignores_the_status_filter_still_finds_every_change(
    tmp_path: Path,
) -> None:
    service = Listing(honour_filter=False)
    store, client = synced(service, tmp_path)
    gone, *rest = service.live()
    service.find(gone).update(status="EXPIRED")
    with client:
        result = store.sync(client)
    # the order now outside the live statuses is dropped from the answer, so unmatched,
    # so fetched; the others matched; and the run says the filter was not honoured
    assert service.fetched == [gone]
    assert result.reconciled == len(rest)
    assert any("other statuses" in w for w in result.warnings)


def test_items_without_updated_at_cannot_confirm_anything(tmp_path: Path) -> None:
    service = Listing()
    store, client = synced(service, tmp_path)
    service.without_updated = True
    with client:
        result = store.sync(client)
    assert sorted(service.fetched) == sorted(service.live()) and result.reconciled == 0


class NumericIds(Listing):
    """Orders with digit ids, which the listing of live statuses writes as numbers (spec
    2.5 shows no field types)."""

    def __init__(self) -> None:
        super().__init__()
        for n, order in enumerate(self.orders):
            order["id"] = str(1000 + n)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        response = super().__call__(request)
        status = parse_qs(request.url.query.decode()).get("status", [None])[0]
        if status != ",".join(LIVE_LIMIT_STATUSES):
            return response
        body = json.loads(response.content)
        for item in body["orders"]:
            item["id"] = int(item["id"])
        return httpx.Response(200, content=json.dumps(body).encode())


def test_items_with_a_numeric_id_confirm_as_their_text(tmp_path: Path) -> None:
    # spec 2.5 shows no field types: the listing hands on 1000 as "1000" (one form of an
    # id everywhere), the same order the store holds, confirmed by status and updatedAt
    service = NumericIds()
    store, client = synced(service, tmp_path)
    with client:
        result = store.sync(client)
    assert service.fetched == [] and result.reconciled == len(service.live())


def test_a_recent_unchanged_order_is_not_fetched_again(tmp_path: Path) -> None:
    # fetched a minute ago and shown unchanged: re-reading it would prove nothing more
    service = Listing()
    service.find(service.live()[0])["updatedAt"] = int(time.time() * 1000) - 60_000
    store, client = synced(service, tmp_path)
    with client:
        result = store.sync(client)
    assert service.fetched == [] and result.reconciled == len(service.live())


def test_a_change_the_lagging_listing_does_not_show_yet_is_found_later(
    tmp_path: Path,
) -> None:
    # the listing is eventually consistent (spec 4.2 rule 6): it may show a state older
    # than the truth; the order keeps its live status in the store, so a later sync
    # reconciles it again and fetches it once the listing shows the change
    service = Listing()
    store, client = synced(service, tmp_path)
    lagging = service.live()[0]
    shown = dict(service.find(lagging))
    service.find(lagging).update(status="CLOSED", updatedAt=shown["updatedAt"] + 9)
    real = service.__call__

    def stale(request: httpx.Request) -> httpx.Response:
        response = real(request)
        if request.url.path != "/orders/fetchOrder" and service.find(lagging)["status"] == "CLOSED":
            body = json.loads(response.content)
            status = parse_qs(request.url.query.decode()).get("status", [""])[0]
            if (
                "OPEN" in status.split(",")
                and parse_qs(request.url.query.decode()).get("paginationToken") is None
            ):
                body["orders"] = [shown, *body["orders"]][: len(body["orders"]) + 1]
            return httpx.Response(200, content=json.dumps(body).encode())
        return response

    lag_client = Client(base_url=BASE, transport=httpx.MockTransport(stale), page_size=50)
    with lag_client:
        first = store.sync(lag_client)
    assert service.fetched == [] and first.reconciled == len(service.live()) + 1
    assert store.frames().orders.set_index("id").loc[lagging, "status"] == "OPEN"
    with client:
        second = store.sync(client)  # the replica caught up
    assert service.fetched == [lagging] and second.changed == 1
    assert store.frames().orders.set_index("id").loc[lagging, "status"] == "CLOSED"


def test_without_the_listing_every_live_order_is_fetched(tmp_path: Path) -> None:
    service = Listing()
    store, client = synced(service, tmp_path)
    with client:
        result = store.sync(client, listing=False)
    assert sorted(service.fetched) == sorted(service.live()) and result.reconciled == 0


def test_an_inactive_listing_falls_back_to_fetching_by_id(tmp_path: Path) -> None:
    service = Listing()
    store, client = synced(service, tmp_path)
    live = service.live()
    calls = {"n": 0}
    real = service.__call__

    def listing_gone(request: httpx.Request) -> httpx.Response:
        if request.url.path != "/orders/fetchOrder":
            calls["n"] += 1
            return httpx.Response(404, json={"message": "Not Found"})
        return real(request)

    client = Client(base_url=BASE, transport=httpx.MockTransport(listing_gone), page_size=4)
    with client:
        result = store.sync(client)
    assert calls["n"] >= 1 and result.listing_error
    assert sorted(service.fetched) == sorted(live) and result.reconciled == 0


@pytest.mark.parametrize("page", [1, 4, 50])
def test_reconciliation_holds_for_any_page_size(tmp_path: Path, page: int) -> None:
    service = Listing(n=25)
    client = Client(base_url=BASE, transport=httpx.MockTransport(service), page_size=page)
    store = OrderStore(tmp_path)
    with client:
        store.sync(client)
        service.fetched.clear()
        changed = service.live()[-1]
        service.find(changed).update(status="CLOSED")
        result = store.sync(client)
    assert service.fetched == [changed]
    assert result.reconciled == len(service.live())


def test_the_listings_page_while_unlisted_orders_are_re_read(tmp_path: Path) -> None:
    # still-active market orders (no listing shows them) are re-read by id; the listings
    # must not wait for those re-reads to be handed out before they start paging
    service = Listing()
    now = int(time.time() * 1000)
    service.market = [
        {
            "id": f"m-{i:03d}",
            "type": "market",
            "status": "pending",
            "symbol": "BTC/BRL",
            "createdAt": now - DAY_MS,
            "updatedAt": now - DAY_MS,
        }
        for i in range(40)
    ]
    client = Client(
        base_url=BASE, transport=httpx.MockTransport(service), page_size=4, concurrency=2
    )
    store = OrderStore(tmp_path)
    with client:
        store.sync(client, ids=[o["id"] for o in service.market])
        service.log.clear()
        store.sync(client)
    market = [i for i, what in enumerate(service.log) if what.startswith("m-")]
    pages = [i for i, what in enumerate(service.log) if what.startswith("page")]
    assert len(market) == 40 and pages
    assert pages[0] < market[-1] and pages[-1] < market[-1]


def _live_pages(service: Listing) -> list[int]:
    """Where in the request log the live-statuses listing asked for a page."""
    live = f"page {','.join(LIVE_LIMIT_STATUSES)}"
    return [i for i, what in enumerate(service.log) if what == live]


def test_an_order_that_left_the_live_statuses_is_fetched_before_the_listing_ends(
    tmp_path: Path,
) -> None:
    # the listing is newest first: once a page read whole ends past an order's creation
    # without showing it, the order left the live statuses; fetched then, not at the end
    service = Listing(n=60)
    store, _ = synced(service, tmp_path)
    newest, *rest = service.live()
    service.find(newest).update(status="CANCELLED", updatedAt=service.find(newest)["updatedAt"] + 1)
    service.log.clear()

    async def answer(request: httpx.Request) -> httpx.Response:
        # a network's turn: the other requests in flight get theirs before this answer
        for _ in range(3):
            await asyncio.sleep(0)
        return service(request)

    client = Client(base_url=BASE, transport=httpx.MockTransport(answer), page_size=4)
    with client:
        result = store.sync(client)
    assert service.fetched == [newest] and result.changed == 1
    assert result.reconciled == len(rest)
    pages = _live_pages(service)
    assert len(pages) >= 5
    assert service.log.index(newest) < pages[-1]  # while the listing still paged


@pytest.mark.parametrize("order", ["oldest", "no created"])
def test_a_listing_in_another_order_fetches_nothing_early_and_nothing_more(
    tmp_path: Path, order: str
) -> None:
    # a listing oldest first (or whose items carry no creation time) cannot say early
    # that an order left: every change is still found, at the end, and nothing else is
    # fetched (read newest first, the first page would have "passed" every live order)
    service = Listing(n=60)
    store, client = synced(service, tmp_path)
    live = service.live()
    changed = live[len(live) // 2]
    service.find(changed).update(status="EXPIRED")
    service.live_order = order
    service.log.clear()
    with client:
        result = store.sync(client)
    assert service.fetched == [changed]
    assert result.reconciled == len(live) - 1
    assert service.log.index(changed) > _live_pages(service)[-1]  # after the last page


def test_a_listing_never_waits_for_the_reader_behind_the_other_sources() -> None:
    # the re-reads by id can queue thousands of ids; a listing that waited for room
    # behind them would stall its paging (and the early fetches it finds) until the
    # workers caught up
    from toolkit.store._sync import merged

    listing_done = asyncio.Event()
    produced = {"ids": 0}

    async def ids() -> Any:
        for i in range(1_000):
            produced["ids"] += 1
            yield f"m-{i}", "ids"

    async def listing() -> Any:
        for i in range(600):
            yield f"l-{i}", "listing"
        listing_done.set()

    async def run() -> list[tuple[str, str]]:
        async with merged([(ids(), False), (listing(), True)]) as found:
            # nothing read yet: the listing still pages to its end, the ids wait for room
            await asyncio.wait_for(listing_done.wait(), 5)
            assert produced["ids"] <= 257
            return [item async for item in found]

    got = asyncio.run(run())
    assert sorted(got) == sorted(
        [(f"m-{i}", "ids") for i in range(1_000)] + [(f"l-{i}", "listing") for i in range(600)]
    )


def test_an_order_created_in_the_future_never_moves_the_listing_mark_past_now(
    tmp_path: Path,
) -> None:
    service = Listing(12)
    future = {**service.orders[1], "id": "l-future", "status": "CLOSED"}
    future["createdAt"] = future["updatedAt"] = int(time.time() * 1000) + 30 * DAY_MS
    service.orders.insert(0, future)  # newest first: a wrong clock puts it on top for good
    store, client = synced(service, tmp_path)
    with client:
        # created after the first sync started: the next sync must list and fetch them all
        now = int(time.time() * 1000) + 1_000
        new = [
            {**service.orders[1], "id": f"l-new{i}", "createdAt": now + i, "updatedAt": now + i}
            for i in range(10)
        ]
        service.orders[1:1] = new[::-1]
        result = store.sync(client)
    assert sorted(service.fetched) == sorted(o["id"] for o in new)
    assert any("created after this sync started" in w for w in result.warnings)
