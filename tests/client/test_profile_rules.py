"""Sans-I/O tests of every profile point the client honours, fed the cases a simulator never
produces: a sign-in answer without the token, a ttl in ms, an expiry that is missing or
past, bad-credential statuses other than 401, list items without any id field or without
the field a filter needs, timestamps in seconds, shortcut membership, any 2xx on cancel."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from toolkit.client._auth import TokenAuth, expiry_seconds, field_names
from toolkit.client._client import Client
from toolkit.client._items import ItemFilter, ListItems, statuses_for
from toolkit.client._pagination import Paginator
from toolkit.errors import AuthenticationError, InvalidRequest, InvalidResponse, ServiceError
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile

FINAL_FIVE = ("EXECUTED", "CLOSED", "EXPIRED", "CANCELLED", "REJECTED")
NOW = 1_800_000_000.0  # wall seconds of the fake clock
ALT_SIGNIN = DEFAULT_PROFILE.replace(
    {
        "signin.path": "/api/v2/session",
        "signin.key_field": "key",
        "signin.secret_field": "secret",
        "signin.token_field": "data.accessToken",
        "signin.expiry_field": "data.expiresIn",
        "signin.expiry_kind": "ttl",
        "signin.expiry_unit": "s",
        "signin.bad_credentials_statuses": [403],
        "rest.auth_header": "X-Auth-Token",
        "rest.auth_scheme": "",
    }
)


def auth(profile: ServiceProfile = DEFAULT_PROFILE, now: float = NOW) -> TokenAuth:
    return TokenAuth(
        "key-123456789", "the-secret-value", "http://svc", profile=profile, clock=lambda: now
    )


def answer(auth: TokenAuth, status: int, body: object) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.Response(status, content=content, request=auth.signin_request())


# -- sign-in -----------------------------------------------------------------------------


def test_signin_request_follows_the_profile() -> None:
    request = auth(ALT_SIGNIN).signin_request()
    assert str(request.url) == "http://svc/api/v2/session"
    assert json.loads(request.content) == {"key": "key-123456789", "secret": "the-secret-value"}


def test_nested_token_and_ttl_in_seconds() -> None:
    a = auth(ALT_SIGNIN)
    body = {"data": {"accessToken": "tok-abc", "expiresIn": 3600}}
    assert a.accept_signin(answer(a, 200, body)) == "tok-abc"
    assert a.renew_at == pytest.approx(NOW + 3600 - 30)


@pytest.mark.parametrize(
    ("unit", "ttl", "lifetime"),
    [
        ("ms", 3_600_000, 3600.0),  # a ttl in ms, said so
        ("auto", 36_000_000, 36_000.0),  # > 10**7: read as ms (10 h)
        ("auto", 86_400, 86_400.0),  # a day in seconds
        ("s", 36_000_000, 36_000_000.0),
    ],
)
def test_ttl_units(unit: str, ttl: int, lifetime: float) -> None:
    got = expiry_seconds(ttl, kind="ttl", unit=unit, now=NOW)
    assert got == pytest.approx(NOW + lifetime)


@pytest.mark.parametrize(
    ("unit", "value"),
    [("auto", 1_800_003_600), ("auto", 1_800_003_600_000), ("s", 1_800_003_600)],
)
def test_absolute_expiry_units(unit: str, value: int) -> None:
    assert expiry_seconds(value, kind="absolute", unit=unit, now=NOW) == NOW + 3600


def test_unreadable_expiry_is_none() -> None:
    for value in (None, "", "soon", True, [1]):
        assert expiry_seconds(value, kind="absolute", unit="auto", now=NOW) is None
        assert expiry_seconds(value, kind="ttl", unit="auto", now=NOW) is None


@pytest.mark.parametrize("expiry", [None, "soon", NOW - 10])
def test_missing_or_past_expiry_means_valid_until_a_401(expiry: object) -> None:
    clock = {"now": NOW}
    a = TokenAuth("k", "s", "http://svc", clock=lambda: clock["now"])
    body: dict[str, Any] = {"token": "tok-1"}
    if expiry is not None:
        body["expiresAt"] = expiry
    a.accept_signin(answer(a, 200, body))
    assert a.renew_at is None
    clock["now"] += 10 * 365 * 86400
    assert not a.needs_signin()  # no sign-in before every call


def test_signin_answer_without_the_token_names_the_setting_and_fields() -> None:
    a = auth(ALT_SIGNIN)
    body = {"data": {"token": "tok-value-xyz", "expiresIn": 60}, "ok": True}
    with pytest.raises(InvalidResponse) as info:
        a.accept_signin(answer(a, 200, body))
    text = str(info.value)
    assert "signin.token_field" in text and "'data.accessToken'" in text
    assert "data, data.token, data.expiresIn, ok" in text
    assert "tok-value-xyz" not in text and "60" not in text


def test_signin_answer_not_json() -> None:
    a = auth()
    with pytest.raises(InvalidResponse, match=r"signin\.token_field"):
        a.accept_signin(answer(a, 200, b"<html>"))


def test_bad_credentials_status_from_the_profile() -> None:
    a = auth(ALT_SIGNIN)
    with pytest.raises(AuthenticationError) as info:
        a.accept_signin(answer(a, 403, {"error": "nope"}))
    text = str(info.value)
    assert "bad API key/secret" in text
    assert "TOOLKIT_API_KEY" in text and "TOOLKIT_API_SECRET" in text
    assert "the-secret-value" not in text and info.value.status == 403
    # a 401 is not this profile's "bad credentials": refused, without that claim
    with pytest.raises(AuthenticationError) as other:
        a.accept_signin(answer(a, 401, {}))
    assert "bad API key" not in str(other.value)
    assert "signin.bad_credentials_statuses" in str(other.value)


@pytest.mark.parametrize(
    ("status", "setting"), [(404, "signin.path"), (405, "signin.path"), (400, "signin.key_field")]
)
def test_signin_failures_name_the_likely_setting(status: int, setting: str) -> None:
    a = auth()
    with pytest.raises(ServiceError) as info:
        a.accept_signin(answer(a, status, {}))
    assert setting in str(info.value)


def test_field_names_never_values() -> None:
    assert field_names({"a": {"b": {"c": {"d": 1}}}, "x": "secret"}) == [
        "a",
        "a.b",
        "a.b.c",
        "x",
    ]
    assert field_names(["not", "an", "object"]) == []


@pytest.mark.parametrize(
    ("header", "scheme", "expected"),
    [("Authorization", "Bearer", "Bearer tok"), ("X-Auth-Token", "", "tok")],
)
def test_identity_header(header: str, scheme: str, expected: str) -> None:
    profile = DEFAULT_PROFILE.replace({"rest.auth_header": header, "rest.auth_scheme": scheme})
    request = httpx.Request("GET", "http://svc/x")
    auth(profile).apply(request, "tok")
    assert request.headers[header] == expected


# -- list items --------------------------------------------------------------------------


def test_item_without_any_id_field() -> None:
    with pytest.raises(InvalidResponse) as info:
        ListItems().order_id({"ref": "x", "symbol": "BTC/BRL"})
    text = str(info.value)
    assert "listing.id_field" in text and "ref, symbol" in text


def test_id_inferred_once_per_listing(caplog: pytest.LogCaptureFixture) -> None:
    p = Paginator(limit=2)
    with caplog.at_level(logging.INFO, logger="toolkit.listing"):
        p.feed({"orders": [{"orderId": "a"}, {"orderId": "b"}], "paginationToken": "t"})
        p.feed({"orders": [{"orderId": "c"}]})
    assert list(p.latest) == ["a", "b", "c"]
    assert p.items.id_field == "orderId" and p.items.id_inferred
    assert len([r for r in caplog.records if "orderId" in r.getMessage()]) == 1


def test_configured_id_field_is_not_inferred() -> None:
    items = ListItems(DEFAULT_PROFILE.replace({"listing.id_field": "ref.code"}).listing)
    assert items.order_id({"ref": {"code": "x1"}, "id": "other"}) == "x1"
    assert not items.id_inferred
    with pytest.raises(InvalidResponse, match=r"listing\.id_field"):
        items.order_id({"id": "later-item-without-it"})


def test_dedup_reads_the_configured_updated_field() -> None:
    listing = DEFAULT_PROFILE.replace({"listing.updated_at_field": "modified"}).listing
    p = Paginator(limit=2, items=ListItems(listing, "s"))
    first = [{"id": "a", "modified": 10}, {"id": "b", "modified": 10}]
    p.feed({"orders": first, "paginationToken": "t"})
    p.feed({"orders": [{"id": "b", "modified": 20, "v": 2}, {"id": "c", "modified": 1}]})
    assert p.latest["b"]["v"] == 2


@pytest.mark.parametrize(
    ("unit", "value", "ms"),
    [("s", 1_700_000_000, 1_700_000_000_000), ("ms", 1_700_000_000_000, 1_700_000_000_000),
     ("auto", 1_700_000_000, 1_700_000_000_000), ("auto", 1_700_000_000_123, 1_700_000_000_123)],
)  # fmt: skip
def test_item_times_in_seconds_or_ms(unit: str, value: int, ms: int) -> None:
    listing = DEFAULT_PROFILE.replace({"listing.created_at_field": "created"}).listing
    assert ListItems(listing, unit).created_ms({"id": "a", "created": value}) == ms


@pytest.mark.parametrize(
    ("flt", "setting"),
    [
        (ItemFilter(since_ms=1), "listing.created_at_field"),
        (ItemFilter(until_ms=1), "listing.created_at_field"),
        (ItemFilter(symbols=frozenset({"BTC/BRL"})), "listing.symbol_field"),
    ],
)
def test_a_filter_on_a_missing_field_names_the_setting(flt: ItemFilter, setting: str) -> None:
    item = {"id": "a", "pair": "BTC/BRL", "created": 1}
    with pytest.raises(InvalidResponse) as info:
        flt.keep(item, ListItems())
    assert setting in str(info.value) and "created, id, pair" in str(info.value)


def test_filters_read_the_configured_fields() -> None:
    listing = DEFAULT_PROFILE.replace(
        {"listing.symbol_field": "pair", "listing.created_at_field": "created"}
    ).listing
    items = ListItems(listing, "s")
    flt = ItemFilter(symbols=frozenset({"BTC/BRL"}), since_ms=1_000_000, until_ms=2_000_000)
    assert flt.keep({"pair": "BTC/BRL", "created": 1000}, items)
    assert not flt.keep({"pair": "ETH/BRL", "created": 1000}, items)
    assert not flt.keep({"pair": "BTC/BRL", "created": 2000}, items)
    assert not flt.keep({"pair": "BTC/BRL", "created": 999}, items)


def test_shortcut_membership_comes_from_the_profile() -> None:
    alt = DEFAULT_PROFILE.replace(
        {
            "listing.active_statuses": ["OPEN", "TRIGGERED", "PROCESSING", "CANCELLING"],
            "listing.finalized_statuses": FINAL_FIVE,
        }
    )
    assert "CANCELLING" in (statuses_for("ACTIVE", alt.listing) or ())
    assert "CANCELLING" not in (statuses_for("ACTIVE", DEFAULT_PROFILE.listing) or ())
    assert statuses_for(None, alt.listing) is None
    nine = "OPEN,TRIGGERED,PROCESSING,CANCELLING,EXECUTED,CLOSED,EXPIRED,CANCELLED,REJECTED"
    assert statuses_for(nine, alt.listing) is None  # all orders: nothing to check
    assert statuses_for("OPEN,CLOSED", alt.listing) == {"OPEN", "CLOSED"}


def test_items_outside_the_filter_are_dropped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    listing = DEFAULT_PROFILE.listing
    p = Paginator(
        status="ACTIVE", items=ListItems(listing), statuses=statuses_for("ACTIVE", listing)
    )
    with caplog.at_level(logging.WARNING, logger="toolkit.listing"):
        fresh = p.feed(
            {"orders": [{"id": "a", "status": "OPEN"}, {"id": "b", "status": "cancelling"}]}
        )
    assert [o["id"] for o in fresh] == ["a"] and p.dropped == {"CANCELLING": 1}
    assert "listing.active_statuses" in caplog.text


def test_status_filter_needs_the_status_field() -> None:
    p = Paginator(status="OPEN", statuses=frozenset({"OPEN"}))
    with pytest.raises(InvalidResponse, match=r"listing\.status_field"):
        p.feed({"orders": [{"id": "a", "state": "OPEN"}]})


# -- the client over a fake service --------------------------------------------------------

Handler = Callable[[httpx.Request], httpx.Response]


def fake_client(
    handler: Handler, profile: ServiceProfile, **kw: Any
) -> tuple[Client, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return handler(request)

    client = Client(
        "http://svc",
        api_key="key-123456789",
        api_secret="the-secret-value",
        profile_id="P1",
        profile=profile,
        transport=httpx.MockTransport(record),
        **kw,
    )
    return client, sent


#: orders the alt fake service has accepted a cancel of
_CANCELLED: set[str] = set()


def alt_service(request: httpx.Request) -> httpx.Response:
    path = request.url.path
    if path == "/api/v2/session":
        return httpx.Response(200, json={"data": {"accessToken": "tok-1"}})  # no expiry
    if request.headers.get("X-Auth-Token") != "tok-1":
        return httpx.Response(401, json={})
    if path == "/orders/fetchOrder":
        oid = request.url.params["id"]
        status = "CANCELLING" if oid in _CANCELLED else "OPEN"
        return httpx.Response(200, json={"id": oid, "status": status, "createdAt": 1_700_000_000})
    if path == "/orders/limit/orders" and request.method == "GET":
        items = [
            {"orderId": "o1", "pair": "BTC/BRL", "state": "OPEN", "modified": 1_700_000_100},
            {"orderId": "o2", "pair": "ETH/BRL", "state": "CLOSED", "modified": 1_700_000_200},
        ]
        return httpx.Response(200, json={"orders": items})
    if path.endswith("/cancel") and request.method == "PATCH":
        # an empty acceptance: the client confirms it with fetchOrder (now CANCELLING)
        _CANCELLED.add(path.split("/")[-2])
        return httpx.Response(200, content=b"")
    if path == "/orders/limit/orders/batch-cancel":
        ids = json.loads(request.content)["ids"]
        return httpx.Response(200, json={"orders": [{"id": i, "accepted": True} for i in ids]})
    return httpx.Response(404, json={})


ALT_REST = ALT_SIGNIN.replace(
    {
        "rest.fetch_order_param": "id",
        "rest.cancel_profile_in": "query",
        "rest.batch_cancel_path": "/orders/limit/orders/batch-cancel",
        "rest.batch_ids_field": "ids",
        "rest.batch_cancel_max": 2,
        "listing.page_min": 5,
        "listing.page_default": 20,
        "listing.page_max": 40,
        "listing.symbol_field": "pair",
        "listing.status_field": "state",
        "listing.updated_at_field": "modified",
        "orders.timestamp_unit": "s",
    }
)


def test_a_token_without_expiry_signs_in_once() -> None:
    client, sent = fake_client(alt_service, ALT_REST)
    with client:
        for _ in range(3):
            client.fetch_order("o1")
    paths = [r.url.path for r in sent]
    assert paths.count("/api/v2/session") == 1 and paths.count("/orders/fetchOrder") == 3
    assert all(r.url.params.get("id") == "o1" for r in sent[1:])


def test_listing_without_created_field_is_an_error_not_zero_rows() -> None:
    client, _ = fake_client(alt_service, ALT_REST)
    with client, pytest.raises(InvalidResponse) as info:
        client.load_orders(since="2020-01-01", progress=False)
    assert "listing.created_at_field" in str(info.value)
    assert "modified, orderId, pair, state" in str(info.value)


def test_listing_through_the_mapping() -> None:
    client, sent = fake_client(alt_service, ALT_REST)
    with client:
        items = client.list_limit_orders("OPEN")
        frames = client.load_orders(symbols="BTC/BRL", progress=False)
    assert [i["orderId"] for i in items] == ["o1"]  # the CLOSED one was outside the filter
    assert list(frames.orders["id"]) == ["o1"]
    listing = [r for r in sent if r.url.path == "/orders/limit/orders"]
    assert listing[0].url.params["limit"] == "20" and listing[0].url.params["status"] == "OPEN"


def test_page_size_outside_the_bounds_sends_nothing() -> None:
    client, sent = fake_client(alt_service, ALT_REST)
    with client:
        for limit in (4, 41):
            with pytest.raises(InvalidRequest, match=r"5\.\.40"):
                client.list_limit_orders(limit=limit)
    assert sent == []


def test_cancel_any_2xx_query_profile_and_batch_chunks() -> None:
    client, sent = fake_client(alt_service, ALT_REST)
    with client:
        result = client.cancel_limit_order("o1")
        batch = client.cancel_limit_orders(["o1", "o2", "o3"])
    assert result.accepted and result.http_status == 200
    patch = next(r for r in sent if r.method == "PATCH")
    assert patch.url.params["profileId"] == "P1" and b"profileId" not in patch.content
    posts = [json.loads(r.content) for r in sent if r.url.path.endswith("batch-cancel")]
    assert [p["ids"] for p in posts] == [["o1", "o2"], ["o3"]]
    assert all(r.accepted for r in batch)
