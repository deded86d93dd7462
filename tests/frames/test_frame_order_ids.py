"""The frames name an order by its id's one form whatever its JSON type: an integer id is
its exact decimal text (beyond 2**53 and int64 too) in orders, trades, fees and
evaluated_tickers alike, ``123`` and ``"123"`` the same text; an id that cannot be an exact
integer (``1.5``, ``1e20``, a boolean, an object) raises InvalidResponse naming the order."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from _synthetic import closed_order

from toolkit.errors import InvalidResponse
from toolkit.frames import build_frames

BIG = 2**60


def body(oid: Any, i: int = 0) -> bytes:
    order = closed_order(random.Random(i), i, trades=2, quotes=2)
    order["id"] = oid
    return json.dumps(order).encode()


def test_integer_ids_are_their_exact_text_in_every_frame() -> None:
    ids: list[Any] = [123, "124", BIG + 1, BIG + 2, 2**70, 125.0]
    frames = build_frames([body(oid, i) for i, oid in enumerate(ids)])
    want = ["123", "124", str(BIG + 1), str(BIG + 2), str(2**70), "125"]
    assert frames.orders["id"].tolist() == want
    for table in (frames.trades, frames.fees, frames.evaluated_tickers):
        assert sorted(set(table["orderId"])) == sorted(want)


@pytest.mark.parametrize("bad", ["1.5", "1e20", "true", '{"n": 1}'])
def test_an_id_that_is_no_exact_integer_is_refused(bad: str) -> None:
    text = body("X").replace(b'"id": "X"', b'"id": ' + bad.encode(), 1)
    with pytest.raises(InvalidResponse, match=r"order #1: its 'id' \(spec 2\.4\)"):
        build_frames([body("a"), text])
