"""One path grammar for payload and error settings reaches into lists (issue #26: error
bodies such as ``{"errors": [{"detail": ...}]}`` or ``{"detail": [{"msg": ...}]}`` could not
be described): ``errors[0].detail`` or ``errors.0.detail``; a mapping's own key wins."""

from __future__ import annotations

import pytest

from toolkit.errors import InvalidRequest
from toolkit.profile import DEFAULT_PROFILE, get_items, get_path, has_path, item_field, set_path


@pytest.mark.parametrize(
    ("payload", "path", "expected"),
    [
        ({"errors": [{"detail": "bad id"}]}, "errors[0].detail", "bad id"),
        ({"errors": [{"detail": "bad id"}]}, "errors.0.detail", "bad id"),
        ({"detail": [{"msg": "m1"}, {"msg": "m2"}]}, "detail[1].msg", "m2"),
        ({"grid": [[1, 2], [3, 4]]}, "grid[1][0]", 3),
        ({"a": {"0": "key"}}, "a.0", "key"),  # a key named "0" stays a key
        ({"a.b": 1}, "a.b", None),  # dots always separate steps
        ({"a": {"b": None}}, "a.b", None),
    ],
)
def test_get_path_reaches_into_lists(payload: object, path: str, expected: object) -> None:
    assert get_path(payload, path) == expected


@pytest.mark.parametrize(
    "path", ["errors[5].detail", "errors[x].detail", "errors[-1].detail", "errors.9", "nope[0]"]
)
def test_a_missing_or_bad_index_is_the_default(path: str) -> None:
    payload = {"errors": [{"detail": "d"}]}
    assert get_path(payload, path, "DEFAULT") == "DEFAULT"
    assert not has_path(payload, path)


def test_set_path_writes_the_shape_get_path_reads() -> None:
    body: dict[str, object] = {}
    set_path(body, "errors[0].detail", "no such order")
    assert body == {"errors": [{"detail": "no such order"}]}
    assert get_path(body, "errors[0].detail") == "no such order"
    flat: dict[str, object] = {}
    set_path(flat, "message", "x")
    assert flat == {"message": "x"}


def test_get_items_reads_a_list_or_an_object_keyed_by_pair() -> None:
    payload = {"data": {"BTC-BRL": {"bid": "1"}, "ETH-BRL": {"bid": "2"}}, "ts": 1}
    assert get_items(payload, "data.*") == [("BTC-BRL", {"bid": "1"}), ("ETH-BRL", {"bid": "2"})]
    assert get_items({"data": [{"bid": "1"}]}, "data.*") == [(None, {"bid": "1"})]
    assert get_items([{"bid": "1"}], "") == [(None, {"bid": "1"})]
    assert get_items({"BTC": {}}, "*") == [("BTC", {})]
    # without '*' an object is not a list: returned as is, for the caller to report
    assert get_items(payload, "data") == payload["data"]
    assert get_items(payload, "missing.*") is None


def test_item_field_star_is_the_key_and_a_keyed_item_falls_back_to_it() -> None:
    assert item_field({"market": "X"}, "BTC-BRL", "*") == "BTC-BRL"
    assert item_field({"market": "X"}, "BTC-BRL", "market") == "X"
    assert item_field({}, "BTC-BRL", "market") == "BTC-BRL"
    assert item_field({}, None, "market") is None
    assert item_field({}, None, "*") is None


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("payloads.tickers_list", "data.*.x"),
        ("payloads.balance_free", "*"),
        ("payloads.ticker_symbol", "data.*"),
        ("payloads.ticker_bid", "quote.*"),
    ],
)
def test_star_only_where_it_means_something(setting: str, value: str) -> None:
    with pytest.raises(InvalidRequest, match=setting.replace(".", r"\.")):
        DEFAULT_PROFILE.replace({setting: value})


def test_star_settings_that_mean_something_are_accepted() -> None:
    p = DEFAULT_PROFILE.replace(
        {
            "payloads.tickers_list": "data.*",
            "payloads.balance_list": "*",
            "payloads.balance_asset": "*",
            "payloads.ticker_symbol": "*",
        }
    )
    assert p.payloads.balance_list == "*"
