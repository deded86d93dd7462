"""The loader's listing rules of issue 14 (and the parts of the hardening issue in its files):
pages of the wrong size (spec 4.2 rule 4) reported, bad since/until/concurrency refused
before any request, and ``since=`` stopping the newest-first listing with an overlap."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.client._loaders import aload_orders
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
