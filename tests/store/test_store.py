"""Tests of toolkit.store against the simulator (both profiles): the first sync equals a full
load, the next ones fetch only what can change, the listing stops past what the store holds,
sources and coverage are honest, and the dataset reads as is in DuckDB and Polars."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pandas as pd
import polars as pl
import pytest

import toolkit as tk
from toolkit.client import Client
from toolkit.errors import InvalidRequest
from toolkit.sim import Simulator
from toolkit.store import OrderStore, StoreLocked
from toolkit.store._files import FINAL_STATUSES, StoreFiles


class Fetches:
    """The order ids the client asked fetchOrder for, and the listing pages it read."""

    def __init__(self, sim: Simulator) -> None:
        self.param = sim.profile.rest.fetch_order_param
        self.fetch_path = sim.profile.rest.fetch_order_path
        self.list_path = sim.profile.rest.limit_orders_path
        self.ids: list[str] = []
        self.pages = 0

    async def __call__(self, request: httpx.Request) -> None:
        if request.url.path == self.fetch_path:
            self.ids.append(request.url.params[self.param])
        elif request.url.path == self.list_path and request.method == "GET":
            self.pages += 1

    def reset(self) -> None:
        self.ids.clear()
        self.pages = 0


@pytest.fixture
def counted(fresh_sim: Simulator) -> Iterator[tuple[Simulator, Client, Fetches]]:
    fetches = Fetches(fresh_sim)
    # small pages, so that stopping the listing early shows
    page = max(fresh_sim.profile.listing.page_min, 5)
    with fresh_sim.client(event_hooks={"request": [fetches]}, page_size=page) as client:
        yield fresh_sim, client, fetches


def ids_of(sim: Simulator, prefix: str) -> set[str]:
    # the ids as a client reads them (numeric ones too), by their type
    return set(sim.control.order_ids(type={"l-": "limit", "m-": "market"}[prefix]))


def test_first_sync_holds_every_listed_order_with_full_bodies(
    counted: tuple[Simulator, Client, Fetches], tmp_path: Path
) -> None:
    sim, client, fetches = counted
    store = OrderStore(tmp_path / "store")
    result = store.sync(client)
    limit = ids_of(sim, "l-")
    assert result.new == len(limit) and result.fetched == len(limit)
    assert sorted(fetches.ids) == sorted(limit)  # each fetched once
    frames = store.frames()
    assert set(frames.orders["id"]) == limit
    assert set(frames.orders["_source"]) == {"listing"}
    # the full fetchOrder detail, as load_orders gives it
    loaded = client.load_orders(progress=False)
    assert set(loaded.orders.columns) <= set(frames.orders.columns)
    assert len(frames.trades) == len(loaded.trades)
    assert frames.quote_fields == loaded.quote_fields  # built with the store's profile
    # Hive-partitioned by month of createdAt, one file per month
    months = sorted(p.name for p in (tmp_path / "store").glob("month=*"))
    assert months and all(len(m) == len("month=2026-11") for m in months)


def test_second_sync_fetches_only_what_can_change(
    counted: tuple[Simulator, Client, Fetches], tmp_path: Path
) -> None:
    _, client, fetches = counted
    store = OrderStore(tmp_path)
    store.sync(client)
    first_pages = fetches.pages
    active = set(store.frames().orders.query("status not in @FINAL_STATUSES")["id"])
    fetches.reset()
    files = sorted(tmp_path.glob("month=*/part-*.parquet"))
    stamps = [f.stat().st_mtime_ns for f in files]

    orders = store.frames().orders.set_index("id")
    result = store.sync(client)
    # finished orders are never fetched again; still-active market orders are re-read by
    # id; still-active limit orders only when the listing (filtered to the live statuses)
    # shows another status or updatedAt, or they changed within the overlap
    recent = pd.Timestamp.now(tz="UTC") - pd.Timedelta(minutes=11)
    live_limit = {i for i in active if orders.loc[i, "type"] == "limit"}
    must = {i for i in active if i not in live_limit or orders.loc[i, "updatedAt"] >= recent}
    assert must <= set(fetches.ids) <= active and result.fetched == len(fetches.ids)
    assert result.reconciled == len(live_limit) - len(set(fetches.ids) & live_limit)
    assert result.reconciled > 0
    assert result.new == 0 and result.changed == 0
    # the listing stopped past the newest stored order instead of paging it whole
    assert result.listing_stopped_early and fetches.pages < first_pages
    # idempotent: nothing changed, nothing rewritten
    assert [f.stat().st_mtime_ns for f in files] == stamps


def test_changes_new_orders_and_given_ids(
    counted: tuple[Simulator, Client, Fetches], tmp_path: Path
) -> None:
    sim, client, fetches = counted
    store = OrderStore(tmp_path)
    store.sync(client)
    before = store.frames().orders.set_index("id")
    open_ids = list(before.index[before["status"] == "OPEN"])
    assert open_ids
    client.cancel_limit_order(open_ids[0], reason="test")
    created = client.create_limit_order("BTC/BRL", "buy", "1000.00", amount="0.001")
    market = sim.control.market_order(symbol="ETH/BRL", side="buy", amount="0.1")["id"]
    older_market = sorted(ids_of(sim, "m-") - {market})[:3]
    fetches.reset()

    result = store.sync(client, ids=[market, *older_market])
    after = store.frames().orders.set_index("id")
    assert after.loc[open_ids[0], "status"] in {"CANCELLING", "CANCELLED"}
    assert after.loc[created["id"], "_source"] == "listing"
    assert set(after.loc[[market, *older_market], "_source"]) == {"ids"}
    assert result.new_by_source == {"listing": 1, "ids": 4}
    assert result.changed >= 1
    # finished orders were not asked for again
    finished = set(before.index[before["status"].isin(FINAL_STATUSES)])
    assert not finished & set(fetches.ids)
    # a given id the store already holds is fetched again only while it can still change
    fetches.reset()
    store.sync(client, ids=older_market)
    still_active = {i for i in older_market if after.loc[i, "status"] not in FINAL_STATUSES}
    assert set(older_market) & set(fetches.ids) == still_active
    coverage = store.frames().attrs["coverage"]
    assert coverage["by_source"]["ids"] == 4 and coverage["complete"] is False
    # changed orders were replaced in the file that held them: each order once on disk
    on_disk = StoreFiles(tmp_path).read(["id"]).column("id").to_pylist()
    assert len(on_disk) == len(set(on_disk)) == len(after)
    assert any("market orders" in w for w in coverage["warnings"])


def test_frames_filters(counted: tuple[Simulator, Client, Fetches], tmp_path: Path) -> None:
    sim, client, _ = counted
    store = OrderStore(tmp_path)
    markets = sorted(ids_of(sim, "m-"))[:20]
    store.sync(client, ids=markets)
    every = store.frames()
    created = every.orders["createdAt"].sort_values()
    middle = created.iloc[len(created) // 2]
    later = store.frames(since=middle.isoformat())
    assert set(later.orders["id"]) == set(
        every.orders.loc[every.orders["createdAt"] >= middle, "id"]
    )
    earlier = store.frames(until=middle.isoformat())
    assert len(earlier) + len(later) == len(every)
    btc = store.frames(symbols="BTC/BRL")
    assert len(btc) and set(btc.orders["symbol"]) == {"BTC/BRL"}
    market = store.frames(types="MARKET")
    assert set(market.orders["id"]) == set(markets)
    with pytest.raises(InvalidRequest):
        store.frames(since=float("nan"))
    with pytest.raises(InvalidRequest):
        store.frames(types=[])


def test_duckdb_and_polars_read_the_dataset_as_is(
    counted: tuple[Simulator, Client, Fetches], tmp_path: Path
) -> None:
    _, client, _ = counted
    store = OrderStore(tmp_path)
    store.sync(client)
    # an interrupted write's leftover must not be read as data
    (next(tmp_path.glob("month=*")) / ".part-1.parquet.x1.tmp").write_bytes(b"partial")
    n = len(store.frames())
    rows = (
        duckdb.connect()
        .execute(
            "select month, count(*) as n, count(distinct id) as ids from read_parquet(?, "
            "hive_partitioning=true) group by month",
            [f"{tmp_path}/*/*.parquet"],
        )
        .fetchall()
    )
    assert sum(r[1] for r in rows) == n and sum(r[2] for r in rows) == n
    assert all(r[0] == str(r[0]) and len(r[0]) == 7 for r in rows)
    # the bodies are month=*/ (the typed tables beside them, under _tables/, are others)
    df = pl.scan_parquet(f"{tmp_path}/month=*/*.parquet", hive_partitioning=True).collect()
    assert df.height == n and "month" in df.columns and df["id"].n_unique() == n
    assert str(df.schema["createdAt"]).startswith("Datetime")
    # the typed tables: typed columns without parsing a body, times in microseconds UTC
    fills = len(store.frames().fills)
    typed = pl.scan_parquet(f"{tmp_path}/_tables/fills/*/*.parquet", hive_partitioning=True)
    got = typed.collect()
    assert got.height == fills and got.schema["price"] == pl.Float64
    assert got.schema["timestamp"] == pl.Datetime("us", "UTC")
    orders = duckdb.connect().execute(
        "select count(*), typeof(any_value(createdAt)) from read_parquet(?)",
        [f"{tmp_path}/_tables/orders/*/*.parquet"],
    )
    assert orders.fetchone() == (n, "TIMESTAMP WITH TIME ZONE")


def test_one_writer_at_a_time(counted: tuple[Simulator, Client, Fetches], tmp_path: Path) -> None:
    _, client, fetches = counted
    store = OrderStore(tmp_path)
    with StoreFiles(tmp_path).lock(), pytest.raises(StoreLocked, match="another sync"):
        store.sync(client)
    assert fetches.ids == []  # refused before any request
    store.sync(client)  # the lock went with its holder
    assert len(store) > 0


def test_interrupted_sync_leaves_a_readable_store_and_the_next_completes_it(
    counted: tuple[Simulator, Client, Fetches], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, client, _ = counted
    reference = OrderStore(tmp_path / "reference")
    reference.sync(client)
    want = reference.frames().orders.set_index("id")["status"].sort_index()

    store = OrderStore(tmp_path / "store")
    real = StoreFiles.write_table
    calls: list[Path] = []

    def dies_on_second_file(self: StoreFiles, path: Path, rows: Any) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")  # mid-sync
        real(self, path, rows)

    monkeypatch.setattr(StoreFiles, "write_table", dies_on_second_file)
    with pytest.raises(OSError, match="No space"):
        store.sync(client, chunk=10)
    monkeypatch.setattr(StoreFiles, "write_table", real)
    partial = store.frames()  # readable: whole files only
    assert 0 < len(partial) < len(want)
    # the state goes last: only the store's identity (written before any request) is there,
    # no listing mark and no sync
    state = StoreFiles(tmp_path / "store").read_state()
    assert set(state) == {"version", "identity"}

    store.sync(client)
    got = store.frames().orders.set_index("id")["status"].sort_index()
    assert got.index.equals(want.index) and got.equals(want)
    assert len(store.frames().orders["id"].unique()) == len(want)


def test_month_files_are_replaced_durably(
    counted: tuple[Simulator, Client, Fetches], tmp_path: Path, spy_durability: Any
) -> None:
    from toolkit import _atomic

    _, client, _ = counted
    events = spy_durability(_atomic)
    OrderStore(tmp_path).sync(client)
    replaced = [name for kind, name in events if kind == "replace"]
    assert any(name.startswith("part-") for name in replaced)
    # the state is written after every part file (and once before, with the identity)
    last_month = max(i for i, name in enumerate(replaced) if name.startswith("part-"))
    assert max(i for i, name in enumerate(replaced) if name == "_store.json") > last_month
    # every replace of a month file follows an fsync of its temporary, then its folder
    for i, (kind, name) in enumerate(events):
        if kind == "replace" and name.startswith("part-"):
            assert events[i - 1][0] == "fsync" and events[i - 1][1].startswith(f".{name}.")
            assert events[i + 1][0] == "fsync" and events[i + 1][1].startswith("month=")


def test_store_profile_and_public_name(sim: Simulator, tmp_path: Path) -> None:
    assert tk.OrderStore is OrderStore
    store = OrderStore(tmp_path)
    assert len(store) == 0 and len(store.frames()) == 0  # empty store: typed empty frames
    with sim.client() as client:
        store.sync(client, ids=sorted(ids_of(sim, "m-"))[:2], listing=False)
    # the profile of the sync is kept beside the data and builds the frames
    assert OrderStore(tmp_path).profile == sim.profile
    with pytest.raises(InvalidRequest):
        store.sync(sim.client(), chunk=0)


KILLED_CHILD = """
import sys
from toolkit.client import Client
from toolkit.profile import load_profile
from toolkit.store import OrderStore
from toolkit.store._files import StoreFiles

real = StoreFiles.write_table
written = []

def write_then_report(self, path, rows):
    real(self, path, rows)
    written.append(path)
    print("written", path, flush=True)
    if len(written) == 2:
        sys.stdin.read()  # wait here to be killed

StoreFiles.write_table = write_then_report
base_url, profile, root = sys.argv[1:4]
client = Client(base_url, api_key="demo", api_secret="demo-secret", profile_id="P1",
                profile=load_profile(profile))
OrderStore(root).sync(client, chunk=5)
"""


def test_sync_killed_by_sigkill_is_completed_by_the_next(
    counted: tuple[Simulator, Client, Fetches], tmp_path: Path, service_profile_file: Path
) -> None:
    import signal
    import subprocess
    import sys

    sim, client, _ = counted
    root = tmp_path / "store"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_CHILD, sim.base_url, str(service_profile_file), str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        lines = [child.stdout.readline(), child.stdout.readline()]
        assert all(line.startswith("written") for line in lines), lines
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    store = OrderStore(root)
    limit = ids_of(sim, "l-")
    partial = len(store.frames())
    assert 0 < partial < len(limit)  # whole files, readable
    result = store.sync(client)  # the dead writer's lock went with it
    frames = store.frames()
    assert set(frames.orders["id"]) == limit and frames.orders["id"].is_unique
    assert result.new == len(limit) - partial  # what the killed sync wrote is kept


def test_small_part_files_are_compacted_into_one_per_month(
    counted: tuple[Simulator, Client, Fetches], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.store import _sync

    sim, client, _ = counted
    monkeypatch.setattr(_sync, "MAX_FILES_PER_MONTH", 1)
    store = OrderStore(tmp_path)
    store.sync(client, chunk=3)  # a part file every 3 orders, then compaction
    for month in StoreFiles(tmp_path).months():
        assert len(list((tmp_path / f"month={month}").glob("part-*.parquet"))) == 1
    assert set(store.frames().orders["id"]) == ids_of(sim, "l-")


def test_an_interrupted_compaction_is_read_without_duplicates_and_repaired(
    counted: tuple[Simulator, Client, Fetches], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    from toolkit.store import _sync

    _, client, _ = counted
    monkeypatch.setattr(_sync, "MAX_FILES_PER_MONTH", 10_000)
    store = OrderStore(tmp_path)
    store.sync(client, chunk=4)
    files = StoreFiles(tmp_path)
    want = len(store)
    month = max(files.months(), key=lambda m: len(files.month_files([m])))
    old = files.month_files([month])
    assert len(old) > 1
    # the compaction wrote its merged file, then died before removing the old ones
    from toolkit.store._files import pa_concat

    files.add_part(month, pa_concat([pq.read_table(f) for f in old]))
    raw = pq.ParquetDataset([str(f) for f in files.month_files()]).read(columns=["id"])
    assert raw.num_rows > want  # a raw reader sees the duplicates until the next sync
    frames = store.frames()
    assert frames.orders["id"].is_unique and len(frames) == want

    store.sync(client)
    assert files.month_files([month]) == [f for f in files.month_files([month]) if f not in old]
    on_disk = files.read(["id"]).column("id").to_pylist()
    raw = pq.ParquetDataset([str(f) for f in files.month_files()]).read(columns=["id"])
    assert raw.num_rows == len(on_disk) == want


def test_inactive_listing_and_unknown_ids_are_said_not_hidden(
    counted: tuple[Simulator, Client, Fetches], tmp_path: Path
) -> None:
    sim, client, _ = counted
    sim.control.set_knobs(limit_routes_active=False)
    market = sorted(ids_of(sim, "m-"))[:3]
    store = OrderStore(tmp_path)
    result = store.sync(client, ids=[*market, "m-no-such-order"])
    assert result.new == 3 and result.listing_error and "not active" in result.listing_error
    assert result.missing == {"ids": ["m-no-such-order"]}
    assert any("could not read the listing" in w for w in result.warnings)
    assert any("not found by fetchOrder" in w for w in result.warnings)
    assert store.frames().missing == ["m-no-such-order"]
    # the listing mark is not moved by a sync that could not read the listing
    sim.control.set_knobs(limit_routes_active=True)
    again = store.sync(client)
    assert again.new_by_source == {"listing": len(ids_of(sim, "l-"))}


def test_sync_twin_has_the_async_parameters() -> None:
    import inspect

    sync = inspect.signature(OrderStore.sync).parameters
    async_ = inspect.signature(OrderStore.async_sync).parameters
    assert list(sync) == list(async_)
    assert all(sync[n].default == async_[n].default for n in sync)
