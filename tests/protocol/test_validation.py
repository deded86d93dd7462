"""Bad input is refused with InvalidRequest before anything is sent: a table of bad calls,
each checked against a request counter on the client's own HTTP hooks."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.errors import InvalidRequest
from toolkit.sim import Simulator

Case = Callable[[Client], Any]

PAST = datetime.now(UTC) - timedelta(days=1)
NAIVE = datetime(2030, 1, 1)
OK = "l-000001-abcd"

BAD_CALLS: dict[str, Case] = {
    "status lowercase": lambda c: c.aiter_limit_orders(status="open"),
    "status market-only PENDING": lambda c: c.aiter_limit_orders(status="PENDING"),
    "status unknown": lambda c: c.alist_limit_orders(status="BOGUS"),
    "status one unknown in comma list": lambda c: c.alist_limit_orders(status="OPEN,bogus"),
    "status lowercase in list": lambda c: c.alist_limit_orders(status=["OPEN", "closed"]),
    "status empty": lambda c: c.alist_limit_orders(status=""),
    "status empty item": lambda c: c.alist_limit_orders(status="OPEN,,CLOSED"),
    "status shortcut mixed": lambda c: c.alist_limit_orders(status="ACTIVE,OPEN"),
    "status not a string": lambda c: c.alist_limit_orders(status=5),  # type: ignore[arg-type]
    "limit zero": lambda c: c.alist_limit_orders(limit=0),
    "limit above max": lambda c: c.alist_limit_orders(limit=c.profile.listing.page_max + 1),
    "limit negative": lambda c: c.alist_limit_orders(limit=-3),
    "limit as string": lambda c: c.alist_limit_orders(limit="50"),  # type: ignore[arg-type]
    "limit bool": lambda c: c.alist_limit_orders(limit=True),
    "page budget zero": lambda c: c.alist_limit_orders(max_pages=0),
    "order id empty": lambda c: c.afetch_order(""),
    "order id dot-dot": lambda c: c.afetch_order("../etc"),
    "order id slash": lambda c: c.afetch_order("a/b"),
    "order id backslash": lambda c: c.afetch_order("a\\b"),
    "order id query": lambda c: c.afetch_order("a?x=1"),
    "order id fragment": lambda c: c.afetch_order("a#frag"),
    "order id newline": lambda c: c.afetch_order("a\nb"),
    "order id NUL": lambda c: c.afetch_order("a\x00b"),
    "order id too long": lambda c: c.afetch_order("x" * 200),
    "order id not a string": lambda c: c.afetch_order(123),  # type: ignore[arg-type]
    "order id surrounding space": lambda c: c.afetch_order(" a"),
    "order id pre-encoded slash": lambda c: c.afetch_order("a%2Fb"),
    "cancel dot-dot id": lambda c: c.acancel_limit_order("..", profile_id="P1"),
    "cancel empty profile": lambda c: c.acancel_limit_order(OK, profile_id=""),
    "cancel missing profile": lambda c: c.acancel_limit_order(OK),
    "cancel blank profile": lambda c: c.acancel_limit_order(OK, profile_id="   "),
    "cancel reason not a string": lambda c: c.acancel_limit_order(OK, profile_id="P1", reason=5),  # type: ignore[arg-type]
    "create lowercase symbol": lambda c: c.acreate_limit_order(
        "btc/brl", "buy", "1", amount="1", profile_id="P1"
    ),
    "create symbol without slash": lambda c: c.acreate_limit_order(
        "BTCBRL", "buy", "1", amount="1", profile_id="P1"
    ),
    "create symbol three parts": lambda c: c.acreate_limit_order(
        "BTC/BRL/X", "buy", "1", amount="1", profile_id="P1"
    ),
    "create side uppercase": lambda c: c.acreate_limit_order(
        "BTC/BRL", "BUY", "1", amount="1", profile_id="P1"
    ),
    "create zero price": lambda c: c.acreate_limit_order(
        "BTC/BRL", "buy", 0, amount="1", profile_id="P1"
    ),
    "create negative price": lambda c: c.acreate_limit_order(
        "BTC/BRL", "buy", "-1", amount="1", profile_id="P1"
    ),
    "create price not a number": lambda c: c.acreate_limit_order(
        "BTC/BRL", "buy", "abc", amount="1", profile_id="P1"
    ),
    "create NaN price": lambda c: c.acreate_limit_order(
        "BTC/BRL", "buy", float("nan"), amount="1", profile_id="P1"
    ),
    "create infinite amount": lambda c: c.acreate_limit_order(
        "BTC/BRL", "buy", "1", amount="Infinity", profile_id="P1"
    ),
    "create both amounts": lambda c: c.acreate_limit_order(
        "BTC/BRL", "buy", "1", amount="1", quote_amount="2", profile_id="P1"
    ),
    "create no amount": lambda c: c.acreate_limit_order("BTC/BRL", "buy", "1", profile_id="P1"),
    "create expiry in the past": lambda c: c.acreate_limit_order(
        "BTC/BRL", "buy", "1", amount="1", expires_at=PAST, profile_id="P1"
    ),
    "create naive expiry": lambda c: c.acreate_limit_order(
        "BTC/BRL", "buy", "1", amount="1", expires_at=NAIVE, profile_id="P1"
    ),
    "create missing profile": lambda c: c.acreate_limit_order("BTC/BRL", "buy", "1", amount="1"),
    "batch ids as one string": lambda c: c.acancel_limit_orders("abc", profile_id="P1"),
    "batch one bad id": lambda c: c.acancel_limit_orders([OK, "a/b"], profile_id="P1"),
    "batch missing profile": lambda c: c.acancel_limit_orders([OK]),
    "load lowercase status": lambda c: c.aload_orders(status="open", progress=False),
    "load bad since": lambda c: c.aload_orders(since="not a date", progress=False),
    "load since after until": lambda c: c.aload_orders(
        since="2026-11-02", until="2026-11-01", progress=False
    ),
    "load bad symbol": lambda c: c.aload_orders(symbols=["btc"], progress=False),
    "load bad id": lambda c: c.aload_orders(ids=["a/b"], progress=False),
    "load ids with status": lambda c: c.aload_orders(ids=[OK], status="OPEN", progress=False),
}


def counting_client(sim: Simulator, **kwargs: Any) -> tuple[Client, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    async def on_request(request: httpx.Request) -> None:
        sent.append(request)

    client = Client(
        sim.base_url,
        api_key="demo",
        api_secret="demo-secret",
        event_hooks={"request": [on_request]},
        profile=sim.profile,
        **kwargs,
    )
    return client, sent


async def _call(case: Case, client: Client) -> None:
    result = case(client)
    if inspect.isawaitable(result):
        await result
    elif hasattr(result, "__anext__"):
        await anext(result)


def test_the_table_is_large_enough() -> None:
    assert len(BAD_CALLS) >= 30


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_input_is_refused_before_sending(sim: Simulator, name: str) -> None:
    client, sent = counting_client(sim)

    async def main() -> None:
        with pytest.raises(InvalidRequest) as info:
            await _call(BAD_CALLS[name], client)
        assert str(info.value)
        await client.aclose()

    asyncio.run(main())
    assert sent == []


def test_the_counter_sees_a_valid_call(sim: Simulator) -> None:
    client, sent = counting_client(sim)
    order_id = sim.control.order_ids()[0]

    async def main() -> None:
        order = await client.afetch_order(order_id)
        assert order["id"] == order_id
        await client.aclose()

    asyncio.run(main())
    profile = sim.profile
    assert [r.url.path for r in sent] == [profile.signin.path, profile.rest.fetch_order_path]


def test_unknown_status_message_lists_the_valid_values(sim: Simulator) -> None:
    client, _ = counting_client(sim)
    with pytest.raises(InvalidRequest, match="OPEN, TRIGGERED") as info:
        client.aiter_limit_orders(status="open")
    assert "'OPEN'" in str(info.value)  # the uppercase hint
