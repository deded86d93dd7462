"""The limit-order listing of the simulator over real HTTP: pagination edges, opaque tokens,
status filters, page bounds, the 503 fault and the eventual-consistency lag."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from _helpers import create_limit_id, session

from toolkit.sim import Simulator

FAR_FUTURE_MS = int(time.time() * 1000) + 7 * 86_400_000


def page(http: httpx.Client, **params: Any) -> httpx.Response:
    return http.get("/orders/limit/orders", params=params)


def walk(http: httpx.Client, **params: Any) -> list[list[dict[str, Any]]]:
    """Every page of a listing, following tokens until one is missing."""
    pages: list[list[dict[str, Any]]] = []
    token: str | None = None
    while True:
        query = dict(params)
        if token is not None:
            query["paginationToken"] = token
        resp = page(http, **query)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        pages.append(body["orders"])
        token = body.get("paginationToken")
        if token is None:
            return pages
        assert len(pages) < 1000, "listing never ends"


def create_open(http: httpx.Client, n: int, symbol: str = "BTC/BRL") -> list[str]:
    return [create_limit_id(http, symbol=symbol, expiresAt=FAR_FUTURE_MS) for _ in range(n)]


def test_full_walk_newest_first_without_duplicates(http: httpx.Client) -> None:
    pages = walk(http, limit=17)
    items = [item for p in pages for item in p]
    ids = [i["id"] for i in items]
    assert len(ids) == len(set(ids)) > 17
    keys = [(i["createdAt"], i["id"]) for i in items]
    assert keys == sorted(keys, reverse=True)
    assert all(len(p) == 17 for p in pages[:-1])
    assert len(pages[-1]) < 17
    assert set(items[0]) == {
        "id",
        "symbol",
        "side",
        "type",
        "status",
        "limitPrice",
        "expiresAt",
        "createdAt",
        "updatedAt",
    }
    assert {i["type"] for i in items} == {"limit"}


def test_default_page_size_is_50_and_bounds_are_enforced(http: httpx.Client) -> None:
    assert len(page(http).json()["orders"]) == 50
    for bad in ("0", "101", "-1", "abc", "2.5"):
        resp = page(http, limit=bad)
        assert resp.status_code == 400, bad
        assert resp.json()["message"]
    assert len(page(http, limit=1).json()["orders"]) == 1
    assert len(page(http, limit=100).json()["orders"]) == 100


def test_token_carries_plus_slash_equals_and_works_verbatim(http: httpx.Client) -> None:
    first = page(http, limit=5).json()
    token = first["paginationToken"]
    assert "+" in token and "/" in token and "=" in token
    second = page(http, limit=5, paginationToken=token).json()
    assert {i["id"] for i in first["orders"]}.isdisjoint(i["id"] for i in second["orders"])
    assert second["orders"][0]["createdAt"] <= first["orders"][-1]["createdAt"]


def test_tampered_or_badly_encoded_token_restarts_at_page_one(http: httpx.Client) -> None:
    first = page(http, limit=5).json()
    token = first["paginationToken"]
    mid = len(token) // 2
    tampered = token[:mid] + ("A" if token[mid] != "A" else "B") + token[mid + 1 :]
    first_ids = [i["id"] for i in first["orders"]]
    for bad in (tampered, token.replace("+", " "), "garbage", token[:-4]):
        again = page(http, limit=5, paginationToken=bad)
        assert again.status_code == 200
        assert [i["id"] for i in again.json()["orders"]] == first_ids


def test_token_of_another_filter_restarts(http: httpx.Client) -> None:
    token = page(http, limit=3, status="FINALIZED").json()["paginationToken"]
    fresh = page(http, limit=3, status="ACTIVE").json()
    reused = page(http, limit=3, status="ACTIVE", paginationToken=token).json()
    assert [i["id"] for i in reused["orders"]] == [i["id"] for i in fresh["orders"]]


def test_exact_multiple_ends_with_an_empty_page_without_token(
    fresh_http: httpx.Client,
) -> None:
    total = sum(len(p) for p in walk(fresh_http, status="OPEN", limit=100))
    if total % 2:
        create_open(fresh_http, 1)
        total += 1
    assert total >= 2
    pages = walk(fresh_http, status="OPEN", limit=total // 2)
    assert [len(p) for p in pages] == [total // 2, total // 2, 0]


def test_shorter_page_is_the_last_and_has_no_token(fresh_http: httpx.Client) -> None:
    total = sum(len(p) for p in walk(fresh_http, limit=100))
    body = page(fresh_http, limit=100).json() if total < 100 else None
    if body is not None:
        assert "paginationToken" not in body
    pages = walk(fresh_http, limit=7)
    assert sum(len(p) for p in pages) == total
    if total % 7:
        assert len(pages[-1]) == total % 7


def test_status_filters(http: httpx.Client) -> None:
    def statuses(**params: Any) -> set[str]:
        return {i["status"] for p in walk(http, limit=100, **params) for i in p}

    everything = statuses()
    assert everything == {
        "OPEN",
        "TRIGGERED",
        "PROCESSING",
        "CANCELLING",
        "EXECUTED",
        "CLOSED",
        "EXPIRED",
        "CANCELLED",
        "REJECTED",
    }
    assert statuses(status="ACTIVE") == {"OPEN", "TRIGGERED", "PROCESSING"}
    assert statuses(status="FINALIZED") == everything - {"OPEN", "TRIGGERED", "PROCESSING"}
    assert statuses(status="OPEN,EXPIRED") == {"OPEN", "EXPIRED"}


@pytest.mark.parametrize("value", ["BOGUS", "open", "active", "OPEN,bogus", "OPEN;CLOSED"])
def test_unrecognised_status_drops_the_filter_silently(http: httpx.Client, value: str) -> None:
    unfiltered = page(http, limit=30).json()["orders"]
    resp = page(http, limit=30, status=value)
    assert resp.status_code == 200
    assert resp.json()["orders"] == unfiltered


def test_scope_is_the_account_of_the_key(sim: Simulator, http: httpx.Client) -> None:
    other = session(sim, "other")
    theirs = {i["id"] for p in walk(other, limit=100) for i in p}
    other.close()
    mine = {i["id"] for p in walk(http, limit=100) for i in p}
    assert theirs and mine and theirs.isdisjoint(mine)
    assert theirs <= set(sim.control.order_ids("A2"))


def test_503_at_rate_one_then_recovers(fresh_sim: Simulator, fresh_http: httpx.Client) -> None:
    fresh_sim.control.set_knobs(listing_503_rate=1.0)
    for _ in range(3):
        resp = page(fresh_http, limit=5)
        assert resp.status_code == 503
        assert "orders" not in resp.json()
    fresh_sim.control.set_knobs(listing_503_rate=0.0)
    assert page(fresh_http, limit=5).status_code == 200


def test_503_rate_is_partial(fresh_sim: Simulator, fresh_http: httpx.Client) -> None:
    fresh_sim.control.set_knobs(listing_503_rate=0.5)
    codes = [page(fresh_http, limit=1).status_code for _ in range(40)]
    assert set(codes) == {200, 503}


def test_rebuilt_tokens_restart_at_page_one(fresh_sim: Simulator, fresh_http: httpx.Client) -> None:
    fresh_sim.control.set_knobs(rebuild_pagination_tokens=True)
    first = page(fresh_http, limit=4).json()
    token = first["paginationToken"]
    assert "+" in token and "/" in token and "=" in token
    again = page(fresh_http, limit=4, paginationToken=token).json()
    assert [i["id"] for i in again["orders"]] == [i["id"] for i in first["orders"]]
    fresh_sim.control.set_knobs(rebuild_pagination_tokens=False)
    token = page(fresh_http, limit=4).json()["paginationToken"]
    nxt = page(fresh_http, limit=4, paginationToken=token).json()
    assert nxt["orders"][0]["id"] not in {i["id"] for i in first["orders"]}


def test_lag_hides_a_new_order_then_shows_it(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    lag = 1.5
    fresh_sim.control.set_knobs(listing_lag_s=lag)
    started = time.monotonic()
    (order_id,) = create_open(fresh_http, 1)
    listed = {i["id"] for i in page(fresh_http, limit=10).json()["orders"]}
    if time.monotonic() - started < lag:
        assert order_id not in listed
    # the record itself is immediate
    assert fresh_http.get("/orders/fetchOrder", params={"orderId": order_id}).status_code == 200
    deadline = time.monotonic() + 10
    while order_id not in {i["id"] for i in page(fresh_http, limit=10).json()["orders"]}:
        assert time.monotonic() < deadline, "order never appeared in the listing"
        time.sleep(0.05)
    assert time.monotonic() - started >= lag


def test_lag_shows_the_old_status_for_a_while(
    fresh_sim: Simulator, fresh_http: httpx.Client
) -> None:
    (order_id,) = create_open(fresh_http, 1)
    fresh_sim.control.set_knobs(listing_lag_s=1.0, cancel_completion_s=30)

    def listed_status() -> str | None:
        items = page(fresh_http, limit=10).json()["orders"]
        return next((i["status"] for i in items if i["id"] == order_id), None)

    deadline = time.monotonic() + 10
    while listed_status() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    started = time.monotonic()
    resp = fresh_http.patch(f"/orders/limit/orders/{order_id}/cancel", json={"profileId": "P1"})
    assert resp.status_code == 202
    first = listed_status()
    if time.monotonic() - started < 1.0:
        assert first == "OPEN"
    deadline = time.monotonic() + 10
    while listed_status() != "CANCELLING":
        assert time.monotonic() < deadline
        time.sleep(0.05)
