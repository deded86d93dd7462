"""Bodies that span several of the JSON reader's blocks (``_parse._BLOCK_SIZE``; the wire
table then comes in one chunk per block): every trade, fee and evaluated ticker stays with
its own order. Each order's trades, quotes and fee carry values derived from the order's
number, and orders hold 0 to 3 trades and 0 to 5 quotes, so the rows of the exploded
frames do not line up with the orders' rows: a chunk offset lost or taken twice attaches
them to another order. Both the fast read and the repair pass (ids as JSON numbers)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from _synthetic import closed_order

from toolkit.frames import build_frames
from toolkit.frames._parse import _BLOCK_SIZE, _parse


def _order(i: int, numeric_id: bool) -> dict[str, Any]:
    trades, quotes = i % 4, (i * 7) % 6
    order = closed_order(random.Random(i), i, trades=max(trades, 1), quotes=quotes)
    oid = f"o-{i:06d}"
    order["id"] = 10_000_000 + i if numeric_id else oid
    order["trades"] = order["trades"][:trades]
    for k, trade in enumerate(order["trades"]):
        trade["id"] = f"t-{i}-{k}"
        trade["price"] = f"{i}.{k:02d}"
        trade["fee"]["cost"] = f"{i}.{k + 50:02d}"
    for rank, quote in enumerate(order["evaluatedTickers"]):
        quote["price"] = f"{i}.{rank:02d}"
    order["fee"]["cost"] = f"{i}.99"
    return order


def _bodies(numeric_id: bool) -> list[bytes]:
    """Orders until they fill more than three blocks."""
    out: list[bytes] = []
    size, i = 0, 0
    while size <= 3 * _BLOCK_SIZE + _BLOCK_SIZE // 4:
        out.append(json.dumps(_order(i, numeric_id)).encode())
        size += len(out[-1]) + 1
        i += 1
    return out


def _number(order_id: str) -> int:
    return int(order_id) - 10_000_000 if order_id.isdigit() else int(order_id[2:])


@pytest.mark.parametrize("numeric_id", [False, True], ids=["fast-read", "repair-pass"])
def test_every_row_stays_with_its_order_across_blocks(numeric_id: bool) -> None:
    bodies = _bodies(numeric_id)
    assert _parse(bodies).column("trades").num_chunks >= 3  # the reader did split it
    frames = build_frames(bodies)
    orders = frames.orders
    assert len(orders) == len(bodies)
    numbers = [_number(oid) for oid in orders["id"]]
    assert numbers == list(range(len(bodies)))

    trades = frames.trades
    assert len(trades) == sum(i % 4 for i in numbers)
    for oid, tid, price, fee in zip(
        trades["orderId"], trades["id"], trades["price"], trades["fee.cost"], strict=True
    ):
        i = _number(oid)
        k = int(tid.rsplit("-", 1)[1])
        assert tid == f"t-{i}-{k}", (oid, tid)
        assert (round(price, 2), round(fee, 2)) == (i + k / 100, i + (k + 50) / 100), tid

    fills = frames.fills
    symbol = dict(zip(orders["id"], orders["symbol"], strict=True))
    assert list(fills["id"]) == list(trades["id"])
    assert all(symbol[o] == s for o, s in zip(fills["orderId"], fills["symbol"], strict=True))

    quotes = frames.evaluated_tickers
    assert len(quotes) == sum((i * 7) % 6 for i in numbers)
    for oid, rank, price in zip(quotes["orderId"], quotes["rank"], quotes["price"], strict=True):
        assert round(price, 2) == _number(oid) + rank / 100, (oid, rank)

    fees = frames.fees
    assert len(fees) == len(bodies)
    for oid, cost in zip(fees["orderId"], fees["cost"], strict=True):
        assert round(cost, 2) == _number(oid) + 0.99, oid
