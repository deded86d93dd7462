"""Pagination per spec 4.2: the sans-I/O guard, then the real listing of the simulator
with its faults (503s, lag, exact multiples, rebuilt tokens, tokens with + / =)."""

from __future__ import annotations

import pytest

from toolkit.client._pagination import Paginator
from toolkit.errors import InvalidResponse, PaginationLoop


def page(ids: list[str], token: str | None = None, updated: int = 1) -> dict[str, object]:
    body: dict[str, object] = {"orders": [{"id": i, "updatedAt": updated} for i in ids]}
    if token is not None:
        body["paginationToken"] = token
    return body


def test_token_is_sent_back_verbatim_and_absence_ends() -> None:
    p = Paginator(status="OPEN", limit=2)
    assert p.params() == {"limit": "2", "status": "OPEN"}
    assert [o["id"] for o in p.feed(page(["a", "b"], "x+/=y"))] == ["a", "b"]
    assert p.params()["paginationToken"] == "x+/=y"
    assert [o["id"] for o in p.feed(page(["c"]))] == ["c"]
    assert p.done
    with pytest.raises(RuntimeError):
        p.params()


def test_empty_last_page_ends_the_listing() -> None:
    p = Paginator(limit=2)
    p.feed(page(["a", "b"], "t1"))
    assert p.feed(page([])) == []
    assert p.done and list(p.latest) == ["a", "b"]


def test_empty_first_page() -> None:
    p = Paginator()
    assert p.feed({"orders": []}) == []
    assert p.done


def test_restarted_listing_is_a_loop_on_the_second_page() -> None:
    p = Paginator(limit=2)
    p.feed(page(["a", "b"], "t1"))
    with pytest.raises(PaginationLoop, match="restarted"):
        p.feed(page(["a", "b"], "t2"))


def test_restart_with_new_orders_on_top_is_still_a_loop() -> None:
    p = Paginator(limit=4)
    p.feed(page(["a", "b", "c", "d"], "t1"))
    with pytest.raises(PaginationLoop):
        p.feed(page(["new", "a", "b", "c"], "t2"))


def test_repeated_token_is_a_loop() -> None:
    p = Paginator(limit=2)
    p.feed(page(["a", "b"], "t1"))
    with pytest.raises(PaginationLoop, match="already used"):
        p.feed(page(["c", "d"], "t1"))


def test_page_budget() -> None:
    p = Paginator(limit=1, max_pages=3)
    p.feed(page(["a"], "t1"))
    p.feed(page(["b"], "t2"))
    with pytest.raises(PaginationLoop, match="budget of 3"):
        p.feed(page(["c"], "t3"))


def test_duplicates_across_pages_keep_the_newest() -> None:
    p = Paginator(limit=2)
    assert len(p.feed(page(["a", "b"], "t1", updated=1))) == 2
    fresh = p.feed({"orders": [{"id": "b", "updatedAt": 5}, {"id": "c", "updatedAt": 1}]})
    assert [o["id"] for o in fresh] == ["c"]
    assert p.latest["b"]["updatedAt"] == 5
    assert list(p.latest) == ["a", "b", "c"]


def test_new_orders_shifting_an_offset_token_are_not_a_restart() -> None:
    # 3 orders created on top between the reads of page 1 and page 2: an offset-like token
    # now points 3 items higher, so page 2 starts with the tail of page 1
    p = Paginator(limit=4)
    assert len(p.feed(page(["a", "b", "c", "d"], "4"))) == 4
    assert [o["id"] for o in p.feed(page(["b", "c", "d", "e"], "8"))] == ["e"]
    # and again, a shift reaching back over page 2 into page 1's tail
    assert [o["id"] for o in p.feed(page(["d", "e", "f", "g"], "12"))] == ["f", "g"]
    # a whole page already read, a shift by a full page, is no restart either
    assert p.feed(page(["d", "e", "f", "g"], "16")) == []
    assert [o["id"] for o in p.feed(page(["h"]))] == ["h"]
    assert list(p.latest) == ["a", "b", "c", "d", "e", "f", "g", "h"]


def test_a_shift_of_one_at_the_smallest_page_size() -> None:
    p = Paginator(limit=1)
    p.feed(page(["a"], "1"))
    p.feed(page(["b"], "2"))
    assert p.feed(page(["b"], "3")) == []  # one new order on top
    assert [o["id"] for o in p.feed(page(["c"]))] == ["c"]


@pytest.mark.parametrize(
    "second",
    [
        ["x", "y", "a", "b"],  # two created meanwhile, then page one's head again
        ["c", "a", "b", "e"],  # page one's head out of place
        ["e", "b", "c", "d"],  # page one's tail, but not where a shift puts it
    ],
)
def test_anything_but_a_shift_repeating_page_one_is_a_restart(second: list[str]) -> None:
    p = Paginator(limit=4)
    p.feed(page(["a", "b", "c", "d"], "t1"))
    with pytest.raises(PaginationLoop, match="restarted"):
        p.feed(page(second, "t2"))


@pytest.mark.parametrize(
    "body",
    [None, [], {"orders": "x"}, {"orders": [{"no": "id"}]}, {"orders": [], "paginationToken": 5}],
)
def test_malformed_pages(body: object) -> None:
    with pytest.raises(InvalidResponse):
        Paginator().feed(body)


# --- against the simulator ---------------------------------------------------------------

import asyncio  # noqa: E402
import json  # noqa: E402
from collections import Counter  # noqa: E402
from typing import Any  # noqa: E402

import httpx  # noqa: E402

from toolkit.client._client import Client  # noqa: E402
from toolkit.errors import RouteNotActive  # noqa: E402
from toolkit.sim import Simulator  # noqa: E402


class Log:
    """Every listing exchange (on the profile's ``rest.limit_orders_path``): the token sent,
    the status, the token received."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.exchanges: list[tuple[str | None, int, str | None, int]] = []

    async def on_response(self, response: httpx.Response) -> None:
        if response.request.url.path != self.path:
            return
        sent = response.request.url.params.get("paginationToken")
        received = None
        count = 0
        if response.status_code == 200:
            await response.aread()
            body = json.loads(response.content)
            received = body.get("paginationToken")
            count = len(body["orders"])
        self.exchanges.append((sent, response.status_code, received, count))


async def no_sleep(delay: float) -> None:
    return None


def logged_client(sim: Simulator, **kwargs: Any) -> tuple[Client, Log]:
    log = Log(sim.profile.rest.limit_orders_path)
    client = sim.client(event_hooks={"response": [log.on_response]}, sleep=no_sleep, **kwargs)
    return client, log


def item_id(sim: Simulator, item: dict[str, Any]) -> str:
    """A list item's order id, read through the profile (spec 2.5: the name is not shown)."""
    return str(item[sim.profile.listing.id_field])


def baseline(sim: Simulator) -> list[str]:
    with sim.client() as client:
        return [
            item_id(sim, o) for o in client.list_limit_orders(limit=sim.profile.listing.page_max)
        ]


def exact_divisor(count: int, page_min: int) -> int | None:
    """A page size of at least ``page_min`` that divides ``count`` into two or more full
    pages: half when that is allowed, else the smallest such size; None when there is
    none."""
    if count % 2 == 0 and count // 2 >= page_min:
        return count // 2
    return next((d for d in range(page_min, count) if count % d == 0), None)


def test_tokens_with_plus_slash_equals_round_trip(sim: Simulator) -> None:
    client, log = logged_client(sim)
    with client:
        ids = [item_id(sim, o) for o in client.iter_limit_orders(limit=7)]
    tokens = [received for _, _, received, _ in log.exchanges if received]
    assert any(c in t for t in tokens for c in "+/=")
    # each page's token came back byte for byte on the next request
    for (_, _, received, _), (sent, _, _, _) in zip(log.exchanges, log.exchanges[1:], strict=False):
        assert sent == received
    assert len(ids) == len(set(ids)) == len(baseline(sim))
    assert log.exchanges[-1][2] is None


def test_listing_matches_the_account(sim: Simulator) -> None:
    listed = set(baseline(sim))
    limit_ids = set(sim.control.order_ids(type="limit"))
    assert listed == limit_ids


def test_503_mid_listing_is_retried_on_the_same_token(fresh_sim: Simulator) -> None:
    expected = baseline(fresh_sim)
    # the smallest page the profile allows: many pages, many chances of a 503; a profile
    # with a larger minimum has fewer pages, so each one fails more often
    small = max(2, fresh_sim.profile.listing.page_min)
    fresh_sim.control.set_knobs(listing_503_rate=0.2 if small == 2 else 0.4)
    client, log = logged_client(fresh_sim, max_retries=50)
    with client:
        ids = [item_id(fresh_sim, o) for o in client.iter_limit_orders(limit=small)]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))
    failures = [i for i, e in enumerate(log.exchanges) if e[1] == 503]
    assert failures  # the fault really happened
    for i in failures:
        assert log.exchanges[i + 1][0] == log.exchanges[i][0]


def test_exact_multiple_of_the_page_size(fresh_sim: Simulator) -> None:
    listing = fresh_sim.profile.listing
    with fresh_sim.client() as client:
        items = client.list_limit_orders(limit=listing.page_max)
        counts = Counter(o[listing.status_field] for o in items)
    # a status whose count is a valid page size and splits into smaller full pages too
    status, count = next(
        (s, c)
        for s, c in counts.most_common()
        if max(2, listing.page_min) <= c <= listing.page_max
        and exact_divisor(c, listing.page_min) is not None
    )
    client, log = logged_client(fresh_sim)
    with client:
        items = client.list_limit_orders(status, limit=count)
        assert len(items) == count
        # a full page has a token; the next page is empty and has none (rule 4)
        assert [(e[1], e[2] is not None, e[3]) for e in log.exchanges] == [
            (200, True, count),
            (200, False, 0),
        ]
        smaller = exact_divisor(count, listing.page_min)
        assert smaller is not None
        assert len(client.list_limit_orders(status, limit=smaller)) == count


def test_rebuilt_tokens_are_a_loop_within_two_pages(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(rebuild_pagination_tokens=True)
    client, log = logged_client(fresh_sim)
    with client, pytest.raises(PaginationLoop, match="restarted"):
        client.list_limit_orders(limit=5)
    assert len(log.exchanges) == 2


def test_lag_and_new_orders_during_listing(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(listing_lag_s=30.0)
    expected = baseline(fresh_sim)

    async def main() -> list[str]:
        async with fresh_sim.client() as client:
            seen: list[str] = []
            async for item in client.aiter_limit_orders(limit=10):
                seen.append(item_id(fresh_sim, item))
                if len(seen) == 10:
                    # new orders appear on top while we page: never twice, never a restart
                    for _ in range(3):
                        await client.acreate_limit_order("ETH/BRL", "sell", "99999", amount="0.1")
            return seen

    seen = asyncio.run(main())
    assert len(seen) == len(set(seen))
    assert set(expected) <= set(seen)


def test_empty_listing(fresh_sim: Simulator) -> None:
    client, log = logged_client(fresh_sim)
    with client:
        for order in client.list_limit_orders("TRIGGERED"):
            fresh_sim.control.advance(item_id(fresh_sim, order), "CLOSED")
        assert client.list_limit_orders("TRIGGERED") == []
    assert log.exchanges[-1][1:] == (200, None, 0)


def test_listing_on_an_inactive_route(fresh_sim: Simulator) -> None:
    fresh_sim.control.set_knobs(limit_routes_active=False)
    with fresh_sim.client() as client, pytest.raises(RouteNotActive):
        list(client.iter_limit_orders())


class OffsetListing:
    """A listing whose token is an offset (opaque to the client, spec 4.2): ``created``
    new orders are put on top before each page request after the first, as on a busy
    account."""

    def __init__(self, count: int, created: int) -> None:
        self.orders = [f"o{i:04d}" for i in range(count)]  # newest first
        self.created = created
        self.pages = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        limit = int(request.url.params["limit"])
        offset = int(request.url.params.get("paginationToken", "0"))
        if self.pages:
            self.orders[:0] = [f"n{self.pages}-{k}" for k in range(self.created)]
        self.pages += 1
        chunk = self.orders[offset : offset + limit]
        body: dict[str, Any] = {"orders": [{"id": i} for i in chunk]}
        if len(chunk) == limit:
            body["paginationToken"] = str(offset + limit)
        return httpx.Response(200, json=body)


@pytest.mark.parametrize(("limit", "created"), [(10, 7), (10, 9), (50, 30), (3, 2)])
def test_an_offset_listing_on_a_busy_account_lists_everything_once(
    limit: int, created: int
) -> None:
    service = OffsetListing(95, created)
    transport = httpx.MockTransport(service)
    with Client("http://127.0.0.1:9", transport=transport, page_size=limit) as client:
        ids = [str(o["id"]) for o in client.iter_limit_orders(limit=limit)]
    old = [i for i in ids if i.startswith("o")]
    assert old == [f"o{i:04d}" for i in range(95)]  # nothing missing, in order
    assert len(ids) == len(set(ids))  # nothing twice


def test_more_new_orders_than_listed_so_far_is_told_as_a_possible_restart() -> None:
    # page 2 is then page 1 again, exactly what a restart serves: loud, never a loop
    transport = httpx.MockTransport(OffsetListing(95, 10))
    restart = "more orders were created while it was read"
    with (
        Client("http://127.0.0.1:9", transport=transport, page_size=10) as client,
        pytest.raises(PaginationLoop, match=restart),
    ):
        client.list_limit_orders(limit=10)
