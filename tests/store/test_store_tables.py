"""The store's typed tables (``ROOT/_tables``): kept by each sync from the orders it wrote
only, read by ``store.frames()`` instead of the bodies (the same frames as the JSON path),
windows on createdAt/updatedAt, symbols and columns, an older store without them, and every
table file written whole (write, fsync, rename, fsync the folder)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import toolkit._atomic as atomic
from toolkit.client import Client
from toolkit.errors import InvalidRequest
from toolkit.frames import OrderFrames, build_frames
from toolkit.sim import Simulator
from toolkit.store import OrderStore
from toolkit.store import _tables as tables_module
from toolkit.store._files import StoreFiles
from toolkit.store._tables import TABLE_NAMES, TABLES_DIR


class Derived:
    """The bodies the store parsed (``_tables.derive``), call by call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[int] = []
        real = tables_module.derive

        def derive(bodies: Any, profile: Any, *, exact: bool = False) -> Any:
            self.calls.append(len(bodies))
            return real(bodies, profile, exact=exact)

        monkeypatch.setattr(tables_module, "derive", derive)
        import toolkit.store._read as read_module

        monkeypatch.setattr(read_module, "derive", derive)

    @property
    def bodies(self) -> int:
        return sum(self.calls)

    def reset(self) -> None:
        self.calls.clear()


@pytest.fixture
def synced(fresh_sim: Simulator, tmp_path: Path) -> Iterator[tuple[Simulator, Client, OrderStore]]:
    with fresh_sim.client() as client:
        store = OrderStore(tmp_path / "store")
        markets = sorted(i for i in fresh_sim.control.order_ids() if i.startswith("m-"))[:30]
        store.sync(client, ids=markets)
        yield fresh_sim, client, store


def json_path(store: OrderStore, *, exact: bool = False) -> OrderFrames:
    """What ``store.frames()`` gave before the typed tables: every body parsed at once."""
    rows = StoreFiles(store.root).read(["id", "_source", "body"])
    frames = build_frames(rows.column("body").to_pylist(), exact=exact, profile=store.profile)
    ids, kinds = rows.column("id").to_pylist(), rows.column("_source").to_pylist()
    sources = dict(zip(ids, kinds, strict=True))
    orders = frames.orders
    orders.insert(list(orders.columns).index("id") + 1, "_source", orders["id"].map(sources))
    return frames


def assert_same(got: OrderFrames, want: OrderFrames) -> None:
    for name in TABLE_NAMES:
        pd.testing.assert_frame_equal(getattr(got, name), getattr(want, name), obj=name)
    assert got.quote_fields == want.quote_fields


def table_files(root: Path) -> list[Path]:
    return sorted((root / TABLES_DIR).glob("*/month=*/part-*.parquet"))


# -- the full read ------------------------------------------------------------------------


def test_frames_read_the_typed_tables_and_equal_the_json_path(
    synced: tuple[Simulator, Client, OrderStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, store = synced
    parts = StoreFiles(store.root).month_files()
    assert len(table_files(store.root)) == len(TABLE_NAMES) * len(parts)
    derived = Derived(monkeypatch)
    frames = store.frames()
    assert derived.calls == []  # not one body parsed
    assert len(frames.orders) == len(store) and len(frames.fills) > 0
    assert_same(frames, json_path(store))
    assert frames.orders["createdAt"].dtype == "datetime64[ms, UTC]"
    # exact decimals are parsed from the bodies, as before
    assert_same(store.frames(exact=True), json_path(store, exact=True))
    # on disk: microseconds UTC, float64 decimals, the frames' column names
    fills = pq.read_schema(next((store.root / TABLES_DIR / "fills").glob("*/*.parquet")))
    assert str(fills.field("timestamp").type) == "timestamp[us, tz=UTC]"
    assert str(fills.field("fee.cost").type) == "double"


def test_a_sync_derives_only_the_orders_it_wrote(
    synced: tuple[Simulator, Client, OrderStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    sim, client, store = synced
    before = store.frames().orders.set_index("id")
    open_ids = list(before.index[before["status"] == "OPEN"])[:2]
    assert open_ids
    for oid in open_ids:
        client.cancel_limit_order(oid, reason="test")
    client.create_limit_order("BTC/BRL", "buy", "1000.00", amount="0.001")
    market = sim.control.market_order(symbol="ETH/BRL", side="buy", amount="0.1")["id"]
    derived = Derived(monkeypatch)
    result = store.sync(client, ids=[market])
    assert result.new >= 2 and result.changed >= len(open_ids)
    # only the new and the changed orders' bodies were parsed, not their part files'
    assert derived.bodies == result.new + result.changed < len(store)
    derived.reset()
    after = store.frames()
    assert derived.calls == []
    assert set(after.orders.set_index("id").loc[open_ids, "status"]) <= {
        "CANCELLING",
        "CANCELLED",
    }
    assert_same(after, json_path(store))


def test_compaction_merges_the_tables(
    fresh_sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = OrderStore(tmp_path)
    with fresh_sim.client() as client:
        store.sync(client, chunk=3)  # many small part files, merged per month
    files = StoreFiles(tmp_path)
    assert all(len(files.month_files([m])) <= 8 for m in files.months())
    # one table file per part file left, nothing of the merged ones
    assert len(table_files(tmp_path)) == len(TABLE_NAMES) * len(files.month_files())
    derived = Derived(monkeypatch)
    assert_same(store.frames(), json_path(store))
    assert derived.calls == []


# -- stores without the tables ------------------------------------------------------------


def test_an_older_store_reads_from_its_bodies_and_the_next_sync_derives_the_tables(
    synced: tuple[Simulator, Client, OrderStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, client, store = synced
    want = json_path(store)
    import shutil

    shutil.rmtree(store.root / TABLES_DIR)  # as an older toolkit left it
    derived = Derived(monkeypatch)
    assert_same(OrderStore(store.root).frames(), want)
    parts = StoreFiles(store.root).month_files()
    # one part's bodies at a time, never the whole store's at once
    assert len(derived.calls) == len(parts) and derived.bodies == len(store)
    store.sync(client)
    assert len(table_files(store.root)) == len(TABLE_NAMES) * len(parts)
    derived.reset()
    assert_same(store.frames(), want)
    assert derived.calls == []


def test_tables_of_another_version_of_the_part_are_never_read(
    synced: tuple[Simulator, Client, OrderStore],
) -> None:
    _, _, store = synced
    files = StoreFiles(store.root)
    part = files.month_files()[0]
    # a sync killed after it replaced a part file and before its tables: an order changed
    rows = files.read_part(part)
    oid = rows.column("id")[0].as_py()
    body = rows.column("body")[0].as_py().replace('"symbol":', '"note":"changed","symbol":', 1)
    import pyarrow as pa

    one = rows.slice(0, 1).set_column(
        rows.schema.get_field_index("body"), "body", pa.array([body], pa.string())
    )
    files.replace_in_part(part, one)
    frames = store.frames()
    assert frames.orders.set_index("id").loc[oid, "note"] == "changed"
    assert_same(frames, json_path(store))


# -- windows ------------------------------------------------------------------------------


def test_windows_on_created_or_updated_symbols_and_columns(
    synced: tuple[Simulator, Client, OrderStore],
) -> None:
    _, _, store = synced
    every = store.frames()
    orders = every.orders
    for on in ("createdAt", "updatedAt"):
        times = orders[on].sort_values()
        since, until = times.iloc[len(times) // 4], times.iloc[3 * len(times) // 4]
        window = store.frames(since=since.isoformat(), until=until.isoformat(), on=on)
        keep = orders.loc[(orders[on] >= since) & (orders[on] < until), "id"]
        assert set(window.orders["id"]) == set(keep) and len(keep)
        assert set(window.fills["orderId"]) == set(every.fills["orderId"]) & set(keep)
        assert window.attrs["on"] == on
    btc = store.frames(symbols="BTC/BRL", columns=["symbol", "fee.cost", "price"])
    assert list(btc.orders.columns) == ["id", "_source", "symbol", "price", "fee.cost"]
    # each frame keeps the names it has (the fees frame calls the fee's cost "cost")
    assert list(btc.fees.columns) == ["orderId", "symbol"]
    fill_columns = ["orderId", "price", "fee.cost", "symbol"]
    assert list(btc.fills.columns) == fill_columns
    assert set(btc.orders["symbol"]) == {"BTC/BRL"}
    want = every.fills.loc[every.fills["symbol"] == "BTC/BRL", fill_columns]
    pd.testing.assert_frame_equal(btc.fills, want.reset_index(drop=True))


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"on": "executedAt"}, "on= takes 'createdAt' or 'updatedAt'"),
        ({"columns": ["nope"]}, "columns= 'nope': no frame has such a column"),
        ({"columns": 5}, "columns= takes column names"),
        ({"columns": [""]}, "columns= takes column names"),
        ({"exact": "yes"}, "exact"),
    ],
)
def test_bad_window_arguments_are_refused(
    tmp_path: Path, kwargs: dict[str, Any], words: str
) -> None:
    store = OrderStore(tmp_path)
    with pytest.raises(InvalidRequest, match=words):
        store.frames(**kwargs)


# -- files whole or not at all ------------------------------------------------------------


def test_every_table_file_is_written_then_fsynced_then_renamed(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[tuple[str, str, str]] = []
    real_replace, real_fsync, real_write = os.replace, atomic.fsync_path, pq.write_table

    def replace(src: Any, dst: Any) -> None:
        steps.append(("rename", str(src), str(dst)))
        real_replace(src, dst)

    def fsync_path(path: Any) -> None:
        steps.append(("fsync", str(path), ""))
        real_fsync(path)

    def write_table(table: Any, where: Any, **kwargs: Any) -> None:
        steps.append(("write", str(where), ""))
        real_write(table, where, **kwargs)

    monkeypatch.setattr(atomic.os, "replace", replace)
    monkeypatch.setattr(atomic, "fsync_path", fsync_path)
    monkeypatch.setattr(pq, "write_table", write_table)
    with sim.client() as client:
        OrderStore(tmp_path).sync(client)
    finals = table_files(tmp_path)
    assert finals
    for final in map(str, finals):
        renames = [i for i, s in enumerate(steps) if s[0] == "rename" and s[2] == final]
        assert renames, final
        i = renames[-1]
        tmp = steps[i][1]
        assert Path(tmp).parent == Path(final).parent and Path(tmp).name.startswith(".")
        assert ("write", tmp, "") in steps[:i] and ("fsync", tmp, "") in steps[:i]
        assert steps.index(("write", tmp, "")) < steps.index(("fsync", tmp, ""))
        assert ("fsync", str(Path(final).parent), "") in steps[i + 1 :]
    # never written in place
    assert not any(s[0] == "write" and s[1] in map(str, finals) for s in steps)


def test_table_files_derive_what_is_missing_and_an_engine_reads_them(
    synced: tuple[Simulator, Client, OrderStore],
) -> None:
    import shutil

    import duckdb

    from toolkit.store import StoreLocked

    _, _, store = synced
    frames = store.frames()
    shutil.rmtree(store.root / TABLES_DIR)  # as an older toolkit left it
    with StoreFiles(store.root).lock(), pytest.raises(StoreLocked):
        store.table_files()  # a sync is writing
    found = store.table_files()
    parts = StoreFiles(store.root).month_files()
    assert set(found) == set(TABLE_NAMES) and all(len(v) == len(parts) for v in found.values())
    con = duckdb.connect()
    fills = con.execute(
        "select count(*), sum(cost) from read_parquet(?)", [[str(p) for p in found["fills"]]]
    ).fetchone()
    assert fills is not None and fills[0] == len(frames.fills)
    assert fills[1] == pytest.approx(frames.fills["cost"].sum())
