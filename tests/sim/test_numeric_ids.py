"""The simulator's knob ``numeric_ids``: ids as JSON numbers in the listing (``listing``),
in fetchOrder bodies, notifications and cancel answers too (``all``), their decimal text
taken back by every route; distinct for every order, exact beyond 2**53."""

from __future__ import annotations

import httpx

from toolkit.profile import DEFAULT_PROFILE
from toolkit.sim import Simulator
from toolkit.sim._ids import internal_ids, number_of, wire_value


def test_numbers_are_distinct_and_map_back() -> None:
    ids = ["l-000001-ffff", "m-000002-0000", "l-000002-0001", "l-123456-abcd"]
    for base in (0, 2**60):
        numbers = [number_of(i, base) for i in ids]
        assert len(set(numbers)) == len(ids)
        for oid, n in zip(ids, numbers, strict=True):
            assert oid in internal_ids(str(n), base)
    assert wire_value("l-000001-ffff", "listing", 0, listing=False) == str(65536 + 0xFFFF)
    assert wire_value("l-000001-ffff", "off", 0, listing=True) == "l-000001-ffff"


def test_all_serves_numbers_and_takes_their_text_back() -> None:
    with Simulator(
        seed=3, engine=False, history_orders=60, numeric_ids="all", numeric_id_base=2**60,
        profile=DEFAULT_PROFILE,
    ) as sim, sim.client() as client:  # fmt: skip
        items = client.list_limit_orders()
        assert items and all(isinstance(i["id"], str) for i in items)
        raw = httpx.get(
            f"{sim.base_url}/orders/fetchOrder",
            params={"orderId": items[0]["id"]},
            headers={"Authorization": f"Bearer {_token(sim)}"},
        ).json()
        assert raw["id"] == int(items[0]["id"]) and raw["id"] > 2**53
        assert sim.control.events(items[0]["id"]) is not None
        assert set(sim.control.order_ids(type="limit")) == {i["id"] for i in items}


def _token(sim: Simulator) -> str:
    answer = httpx.post(
        f"{sim.base_url}{DEFAULT_PROFILE.signin.path}",
        json={"apiKey": "demo", "apiSecret": "demo-secret"},
    )
    return str(answer.json()["token"])
