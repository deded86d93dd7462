"""The doctor's inference on raw JSON: token and expiry, list-item fields by value shape,
status case, evaluatedTickers fields, confirmation templates, ticker and balance paths."""

from __future__ import annotations

import pytest

from toolkit.doctor import _shapes as sh

NOW = 1_793_491_200.0  # 2026-11-01T00:00:00Z


def test_token_and_expiry_are_found_by_shape() -> None:
    answer = {"data": {"accessToken": "eyJhbGciOi.J9.xyz-123456", "expiresIn": 3600}, "ok": True}
    assert sh.find_token(answer, "token") == "data.accessToken"
    assert sh.find_expiry(answer, "expiresAt") == "data.expiresIn"
    assert sh.find_token({"token": "short"}, "token") is None


@pytest.mark.parametrize(
    ("value", "shape"),
    [
        (1_793_494_800_000, ("absolute", "ms")),
        (1_793_494_800, ("absolute", "s")),
        ("2026-11-01T01:00:00Z", ("absolute", "auto")),
        (600, ("ttl", "s")),  # 10 min; 0.6 s in ms is no token lifetime
        (3_600_000_000, ("ttl", "ms")),
        (3_600_000, ("ttl", "ms")),  # 1 h in ms; 41.7 days in s is no token lifetime
        (3600, ("ttl", None)),  # 1 h in s or 3.6 s in ms: not told by magnitude
        (100_000, ("ttl", None)),
    ],
)
def test_expiry_kind_and_unit(value: object, shape: tuple[str, str | None]) -> None:
    assert sh.expiry_shape(value, NOW) == shape


@pytest.mark.parametrize(
    ("field", "value", "unit"),
    [
        ("result.session.ttlMs", 3600, "ms"),
        ("expires_in_ms", 100_000, "ms"),
        ("expiryMillis", 3_600_000, "ms"),
        ("TTL_MS", 600, "ms"),
        ("data.ttl_s", 3600, "s"),
        ("expiresInSeconds", 100_000, "s"),
        ("ttlSec", 3_600_000, "s"),
        ("expiresIn", 3600, None),
        ("expires", 3600, None),
    ],
)
def test_a_ttl_field_name_that_says_the_unit_decides_it(
    field: str, value: int, unit: str | None
) -> None:
    assert sh.expiry_shape(value, NOW, field) == ("ttl", unit)


def test_list_item_fields_by_value_shape() -> None:
    items = [
        {
            "orderId": f"ord-{i}",
            "pair": "BTC/BRL",
            "direction": "buy" if i % 2 else "sell",
            "orderType": "limit",
            "state": status,
            "limit": "501234.50",
            "created": int(NOW) - 100 + i,
            "modified": int(NOW) - 50 + i,
            "deadline": int(NOW) + 86_400,
        }
        for i, status in enumerate(("OPEN", "CLOSED", "EXPIRED"))
    ]
    assumed = {
        "id_field": "id",
        "symbol_field": "symbol",
        "side_field": "side",
        "type_field": "type",
        "status_field": "status",
        "limit_price_field": "limitPrice",
        "expires_at_field": "expiresAt",
        "created_at_field": "createdAt",
        "updated_at_field": "updatedAt",
    }
    assert sh.map_list_items(items, assumed, NOW) == {
        "id_field": "orderId",
        "symbol_field": "pair",
        "side_field": "direction",
        "type_field": "orderType",
        "status_field": "state",
        "limit_price_field": "limit",
        "expires_at_field": "deadline",
        "created_at_field": "created",
        "updated_at_field": "modified",
    }


def test_unnamed_times_are_told_apart_by_value() -> None:
    items = [
        {"id": "a", "t1": int(NOW) + 3600, "t2": int(NOW) - 10, "t3": int(NOW) - 100},
        {"id": "b", "t1": int(NOW) + 7200, "t2": int(NOW) - 20, "t3": int(NOW) - 200},
    ]
    out = sh.map_list_items(items, {"id_field": "id"}, NOW)
    assert (out["created_at_field"], out["updated_at_field"], out["expires_at_field"]) == (
        "t3",
        "t2",
        "t1",
    )


@pytest.mark.parametrize(
    ("seen", "case"),
    [
        ([("OPEN", "limit"), ("closed", "limit"), ("EXECUTED", "limit")], "mixed"),
        ([("OPEN", "limit"), ("CLOSED", "limit")], "upper"),
        ([("open", "limit"), ("closed", "market")], "lower"),
        # market statuses are lowercase in every case (spec 3.1): they tell nothing
        ([("PENDING", "market")], None),
        ([("OPEN", "limit"), ("closed", "market")], None),
        ([("OPEN", "limit"), ("EXECUTED", "limit")], None),
    ],
)
def test_status_case(seen: list[tuple[str, str]], case: str | None) -> None:
    assert sh.status_case(seen) == case


def test_quote_fields_by_shape() -> None:
    elements = [
        {"venue": "a", "px": "100.5", "ts": 1_793_491_200},
        {"venue": "b", "px": "99", "ts": 1_793_491_200, "why": "stale book"},
    ]
    assert sh.map_quotes(elements) == {
        "venue": "venue",
        "price": "px",
        "time": "ts",
        "reason": "why",
    }


def test_confirmation_templates() -> None:
    assert (
        sh.template(
            "Successfully subscribed to channel: watchticker#btcbrl", "watchticker", "btcbrl"
        )
        == "Successfully subscribed to channel: {channel}#{symbol}"
    )
    assert (
        sh.template("Unsubscribed from watchtickers", "watchtickers")
        == "Unsubscribed from {channel}"
    )


def test_ticker_and_balance_paths() -> None:
    ticker = {
        "s": "BTC/BRL",
        "quote": {"bid": "10", "ask": "12", "last": "11"},
        "ts": 1_793_491_200,
    }
    assert sh.map_ticker(ticker) == {
        "symbol": "s",
        "time": "ts",
        "bid": "quote.bid",
        "ask": "quote.ask",
        "last": "quote.last",
    }
    unnamed = {"pair": "BTC/BRL", "p1": "12", "p2": "10", "p3": "11"}
    mapped = sh.map_ticker(unnamed)
    assert (mapped["bid"], mapped["last"], mapped["ask"]) == ("p2", "p3", "p1")
    balance = {
        "wallets": [{"currency": "BTC", "x": "1.5", "y": "0.5", "z": "2"}],
        "ts": 1_793_491_200_000,
    }
    assert sh.map_balance(balance) == {
        "list": "wallets",
        "time": "ts",
        "asset": "currency",
        "free": "x",
        "locked": "y",
        "total": "z",
    }
