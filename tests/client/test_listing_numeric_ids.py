"""Order ids that come as JSON numbers (spec 2.5 shows no list-item types): sans-I/O. The
listing hands every item on with its id as text (``123`` and ``"123"`` are one order, an
integer beyond 2**53 exact), fetchOrder's body the same, and an id that cannot be an exact
integer (``1.5``, ``1e20``, a boolean, null, an object) is an InvalidResponse naming the
field and the setting, never a lost order or a phantom."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import httpx
import pytest

from toolkit.client._items import ListItems
from toolkit.client._orders import _batch_items, checked_order
from toolkit.client._pagination import Paginator
from toolkit.errors import InvalidResponse
from toolkit.profile import DEFAULT_PROFILE

BIG = 2**60


def page(ids: list[Any], token: str | None = None, updated: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"orders": [{"id": i, "updatedAt": updated} for i in ids]}
    if token is not None:
        body["paginationToken"] = token
    return body


def test_a_numeric_id_is_handed_on_as_its_text() -> None:
    p = Paginator(limit=2)
    items = p.feed(page([123, BIG + 1], "t1")) + p.feed(page([BIG + 2]))
    assert [i["id"] for i in items] == ["123", str(BIG + 1), str(BIG + 2)]
    assert list(p.latest) == ["123", str(BIG + 1), str(BIG + 2)]
    assert all(i["id"].__class__ is str for i in p.latest.values())


def test_123_and_text_123_are_one_order_across_pages() -> None:
    # an order created on top while the listing is read shifts the last one read onto
    # the next page: once as text, once as a number, it is one order, the newer copy kept
    p = Paginator(limit=3)
    p.feed(page([121, "122", "123"], "t1", updated=1))
    fresh = p.feed(page([123, 124], updated=2))
    assert [i["id"] for i in fresh] == ["124"]
    assert list(p.latest) == ["121", "122", "123", "124"]
    assert p.latest["123"] == {"id": "123", "updatedAt": 2}


def test_250_numeric_ids_beyond_2_53_over_five_pages_each_once() -> None:
    ids = [BIG + k for k in range(250)]  # neighbours: as doubles most would merge
    p = Paginator(limit=50)
    seen: list[str] = []
    for n in range(5):
        seen += [i["id"] for i in p.feed(page(ids[n * 50 : n * 50 + 50], f"t{n}"))]
    seen += [i["id"] for i in p.feed(page([]))]
    assert seen == [str(i) for i in ids]


def test_an_id_under_a_nested_configured_field_is_rewritten_in_a_copy() -> None:
    listing = dataclasses.replace(DEFAULT_PROFILE.listing, id_field="order.id")
    item = {"order": {"id": BIG + 7}, "updatedAt": 1}
    p = Paginator(limit=5, items=ListItems(listing))
    (got,) = p.feed({"orders": [item]})
    assert got["order"]["id"] == str(BIG + 7)
    assert item["order"]["id"] == BIG + 7  # the service's object is left as it came


@pytest.mark.parametrize(
    "bad", [1.5, 1e20, True, None, {"n": 1}, [1], ""], ids=lambda v: json.dumps(v)
)
def test_a_listing_id_that_is_no_exact_integer_is_refused(bad: Any) -> None:
    p = Paginator(limit=5)
    with pytest.raises(InvalidResponse, match=r"listing\.id_field") as info:
        p.feed(page(["a", bad]))
    assert "'id'" in str(info.value)


def response(body: Any, order_id: str = "123") -> httpx.Response:
    request = httpx.Request("GET", f"http://127.0.0.1:1/orders/fetchOrder?orderId={order_id}")
    return httpx.Response(200, content=json.dumps(body).encode(), request=request)


@pytest.mark.parametrize("value", [123, "123", 123.0])
def test_a_fetch_order_body_with_a_numeric_id_is_that_order(value: Any) -> None:
    order = checked_order(response({"id": value, "status": "closed"}), "123")
    assert order["id"] == "123"


def test_a_fetch_order_body_with_a_big_integer_id_stays_exact() -> None:
    asked = str(BIG + 1)
    order = checked_order(response({"id": BIG + 1}, asked), asked)
    assert order["id"] == asked
    with pytest.raises(InvalidResponse, match="another order"):
        checked_order(response({"id": BIG + 2}, asked), asked)


@pytest.mark.parametrize("bad", [1.5, 1e20, True, None, {"n": 1}], ids=lambda v: json.dumps(v))
def test_a_fetch_order_id_that_is_no_exact_integer_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidResponse, match=r"'id' \(spec 2\.4\)") as info:
        checked_order(response({"id": bad, "status": "closed"}), "123")
    assert "fetchOrder?orderId=123" in str(info.value)


def test_a_batch_answer_item_with_a_numeric_id_answers_that_order() -> None:
    request = httpx.Request("POST", "http://127.0.0.1:1/orders/limit/orders/cancel")
    body = {"orders": [{"id": 123, "accepted": True}, {"id": BIG + 1, "accepted": True}]}
    answer = httpx.Response(202, content=json.dumps(body).encode(), request=request)
    by_id = _batch_items(answer, ["123", str(BIG + 1)])
    assert set(by_id) == {"123", str(BIG + 1)}
