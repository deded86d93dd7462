"""A sync takes an order's body from a recording of the store's own account instead of
fetching it, when the recorded notification (the fetchOrder schema, spec 2.4) is the
order's current state: a final state not older than the stored one, or the state the
listing shows. Everything else is fetched: another account's recording, a non-final
market order, a state the listing contradicts, a body the store cannot read."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from test_reconcile import Listing, synced

from toolkit.client._identity import account_of
from toolkit.profile import DEFAULT_PROFILE
from toolkit.recording._writer import RecordingWriter
from toolkit.sim import Simulator
from toolkit.store import OrderStore
from toolkit.store._files import StoreFiles

_seq = iter(range(1, 10**9))


def record(root: Path, client: Any, bodies: list[dict[str, Any]], *, account: Any = "own") -> Path:
    """A recording of ``watchorders`` notifications carrying ``bodies``, made with the
    client's account (``account="own"``), another one, or none."""
    named = account_of(client) if account == "own" else account
    with RecordingWriter(root, profile=DEFAULT_PROFILE, account=named) as writer:
        for body in bodies:
            n = next(_seq)
            text = json.dumps({"channel": "watchorders", "message": body})
            writer.add_raw(text, time.time_ns() + n, "c1", n)
    return root


def body(service: Listing, oid: str, **changes: Any) -> dict[str, Any]:
    """What fetchOrder answers for ``oid`` (with ``changes`` applied to the service)."""
    service.find(oid).update(changes)
    return {**service.find(oid), "amount": "1", "trades": []}


def stored(store: OrderStore, oid: str) -> dict[str, Any]:
    rows = StoreFiles(store.root).read(["id", "body"]).to_pylist()
    return next(json.loads(r["body"]) for r in rows if r["id"] == oid)


def test_a_recorded_final_state_is_taken_not_fetched(tmp_path: Path) -> None:
    service = Listing()
    store, client = synced(service, tmp_path / "store")
    cancelled = service.live()[0]
    later = service.find(cancelled)["updatedAt"] + 5
    final = body(service, cancelled, status="CANCELLED", updatedAt=later)
    rec = record(tmp_path / "rec", client, [final])
    with client:
        result = store.sync(client, recordings=[rec])
    assert cancelled not in service.fetched and result.from_recordings == 1
    assert result.changed == 1 and result.fetched == len(service.fetched)
    assert stored(store, cancelled) == final
    assert "1 taken from recordings" in result.summary()


def test_a_new_limit_order_in_the_state_the_listing_shows_is_taken(tmp_path: Path) -> None:
    service = Listing()
    store, client = synced(service, tmp_path / "store")
    now = int(time.time() * 1000)
    for i, oid in enumerate(["l-new-1", "l-new-2"]):
        service.orders.insert(
            0,
            {
                **service.orders[0],
                "id": oid,
                "status": "OPEN",
                "createdAt": now + i,
                "updatedAt": now + i,
            },
        )
    shown = body(service, "l-new-1")
    # the recording is behind: the listing shows a later state than the one recorded
    behind = {**body(service, "l-new-2"), "updatedAt": now - 50}
    rec = record(tmp_path / "rec", client, [shown, behind])
    with client:
        result = store.sync(client, recordings=[rec])
    assert "l-new-1" not in service.fetched and "l-new-2" in service.fetched
    assert result.from_recordings == 1 and result.new == 2
    assert stored(store, "l-new-1") == shown


def test_market_orders_final_taken_active_fetched(tmp_path: Path) -> None:
    service = Listing()
    store, client = synced(service, tmp_path / "store")
    now = int(time.time() * 1000)
    base = {"symbol": "BTC/BRL", "side": "buy", "type": "market", "createdAt": now}
    service.market += [
        {**base, "id": "m-done", "status": "closed", "updatedAt": now + 1},
        {**base, "id": "m-pending", "status": "pending", "updatedAt": now + 1},
    ]
    rec = record(tmp_path / "rec", client, [body(service, "m-done"), body(service, "m-pending")])
    with client:
        result = store.sync(client, recordings=[rec])
        assert "m-done" not in service.fetched and "m-pending" in service.fetched
        assert result.new_by_source == {"recording": 2} and result.from_recordings == 1
        # the next sync re-reads the still-active one by id, as before
        service.fetched.clear()
        store.sync(client)
    assert service.fetched == ["m-pending"]


@pytest.mark.parametrize(
    "account",
    [None, {"base_url": "http://127.0.0.1:9", "api_key": "sha256:0000000000000000"}],
    ids=["no account (an older recording)", "another account"],
)
def test_a_recording_not_made_with_the_stores_account_gives_ids_only(
    tmp_path: Path, account: Any
) -> None:
    service = Listing()
    store, client = synced(service, tmp_path / "store")
    cancelled = service.live()[0]
    final = body(service, cancelled, status="CANCELLED")
    service.market.append({**final, "id": "m-1", "type": "market", "status": "closed"})
    rec = record(tmp_path / "rec", client, [final, body(service, "m-1")], account=account)
    with client:
        result = store.sync(client, recordings=[rec])
    assert {cancelled, "m-1"} <= set(service.fetched) and result.from_recordings == 0


def test_a_recorded_state_older_than_the_stored_one_or_unreadable_is_fetched(
    tmp_path: Path,
) -> None:
    """Contract breaks: a final state stamped before the stored one, a body without
    createdAt. Each is fetched, never stored, never an error."""
    service = Listing()
    store, client = synced(service, tmp_path / "store")
    old, broken, *_ = service.live()
    stale = {**body(service, old), "status": "CANCELLED", "updatedAt": 1}
    service.find(old)["updatedAt"] += 9  # the service moved on: the listing shows it
    unreadable = {k: v for k, v in body(service, broken, status="EXPIRED").items()}
    unreadable.pop("createdAt")
    rec = record(tmp_path / "rec", client, [stale, unreadable])
    with client:
        result = store.sync(client, recordings=[rec])
    assert {old, broken} <= set(service.fetched) and result.from_recordings == 0
    assert stored(store, old)["status"] == "OPEN" and stored(store, broken)["status"] == "EXPIRED"


def test_against_the_simulator_a_recorded_session_saves_the_fetches(
    fresh_sim: Simulator, tmp_path: Path
) -> None:
    """Notifications of the store's account, recorded as they came while orders changed;
    the next sync takes their current states from them: the expired and the new limit
    order, the executed market order. What it stores equals what fetchOrder answers."""
    from toolkit.stream import OrderEvent

    fetched: list[str] = []

    async def hook(request: Any) -> None:
        if request.url.path == "/orders/fetchOrder":
            # the id's query parameter is the profile's rest.fetch_order_param
            fetched.extend(request.url.params.values())

    store = OrderStore(tmp_path / "store")
    with fresh_sim.client(event_hooks={"request": [hook]}) as client:
        store.sync(client)
        orders = store.frames(types="limit").orders
        open_id = str(orders.loc[orders["status"] == "OPEN", "id"].iloc[0])

        # a service that publishes outcomes only (limit_events = "outcome_only") sends
        # neither the new limit order's OPEN nor the EXPIRED: those two are fetched
        every_event = fresh_sim.served.stream.limit_events == "all"  # the service's

        async def trade() -> tuple[dict[str, str], list[tuple[str, int, str, int]]]:
            texts: list[tuple[str, int, str, int]] = []
            async with client.stream() as session:
                session.add_raw_callback(lambda *message: texts.append(message))
                await session.subscribe("watchOrders")  # confirmed: nothing is missed
                fresh_sim.control.advance(open_id, "EXPIRED")
                market = fresh_sim.control.market_order(
                    symbol="BTC/BRL", side="buy", amount="0.001"
                )
                limit = await client.acreate_limit_order("ETH/BRL", "buy", "1000.00", amount="0.01")
                wanted = {market["id"]: "CLOSED"}
                if every_event:
                    wanted.update({open_id: "EXPIRED", limit["id"]: "OPEN"})
                done: set[str] = set()
                async for event in session:
                    if isinstance(event, OrderEvent) and wanted.get(event.order_id) == event.status:
                        done.add(event.order_id)
                    if done == set(wanted):
                        break
            return {open_id: "limit", market["id"]: "market", limit["id"]: "limit"}, texts

        ids, texts = client._run(trade())
        with RecordingWriter(
            tmp_path / "rec", profile=client.profile, account=account_of(client)
        ) as writer:
            for message in texts:
                writer.add_raw(*message)
        fetched.clear()
        result = store.sync(client, recordings=[tmp_path / "rec"])
        taken = [oid for oid in ids if every_event or ids[oid] == "market"]
        assert result.from_recordings == len(taken), result.summary()
        assert not set(taken) & set(fetched) and set(ids) - set(taken) <= set(fetched)
        for oid in ids:
            assert stored(store, oid) == client.fetch_order(oid)
