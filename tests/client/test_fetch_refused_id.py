"""An order id refused before anything is sent still names the order the call was about
(``exc.order_id``), as the cancel calls do (docs/src/guide/errors.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.errors import InvalidRequest

BASE = "http://127.0.0.1:9"  # never dialled: the transport below refuses every request


def _never(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"nothing should be sent, got {request.method} {request.url}")


@pytest.mark.parametrize(
    "call",
    [
        lambda c, oid: c.fetch_order(oid),
        lambda c, oid: c.fetch_order_raw(oid),
        lambda c, oid: asyncio.run(c.afetch_order(oid)),
    ],
    ids=["fetch_order", "fetch_order_raw", "afetch_order"],
)
@pytest.mark.parametrize("order_id", ["a/b", " o-1", "o?x=1", "."])
def test_a_refused_order_id_is_named_on_the_error(
    call: Callable[[Client, str], Any], order_id: str
) -> None:
    client = Client(base_url=BASE, transport=httpx.MockTransport(_never))
    with client, pytest.raises(InvalidRequest) as info:
        call(client, order_id)
    assert info.value.order_id == order_id


def test_a_non_string_order_id_names_none() -> None:
    client = Client(base_url=BASE, transport=httpx.MockTransport(_never))
    with client, pytest.raises(InvalidRequest, match="non-empty string") as info:
        client.fetch_order(123)  # type: ignore[arg-type]
    assert info.value.order_id is None
