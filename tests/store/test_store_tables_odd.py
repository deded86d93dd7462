"""The store's typed tables fed what the simulator never makes, without a network (the
sync's writer fed bodies): a field of other JSON types in two part files, odd values whose
warnings a read must still give, a damaged or cut table file, a part file that is no
Parquet, another profile. Each read equals the JSON path on the same store."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from test_store_tables import assert_same, json_path, table_files

from toolkit.profile import DEFAULT_PROFILE
from toolkit.store import OrderStore
from toolkit.store._files import StoreFiles
from toolkit.store._tables import TABLE_NAMES, Tables, align, from_disk, part_token, to_disk
from toolkit.store._writer import Writer

DAY_MS = 86_400_000


def body(oid: str, created: int, **changes: Any) -> bytes:
    order = {
        "id": oid,
        "exchange": "X",
        "symbol": "BTC/BRL",
        "side": "buy",
        "type": "market",
        "status": "closed",
        "amount": "1",
        "createdAt": created,
        "updatedAt": created + 1_000,
        "trades": [{"id": f"{oid}-t", "price": "10.5", "amount": "1", "timestamp": created}],
        **changes,
    }
    return json.dumps(order).encode()


def write(root: Path, *parts: list[bytes]) -> OrderStore:
    """Each list of bodies as one part file and its tables, as a sync's writer does."""
    files = StoreFiles(root)
    writer = Writer(files, DEFAULT_PROFILE, 1_000, files.index())
    for bodies in parts:
        pending: dict[str, list[dict[str, Any]]] = {}
        for raw in bodies:
            oid = json.loads(raw)["id"]
            month, row = writer.row(oid, raw, "ids", int(time.time() * 1000))
            pending.setdefault(month, []).append(row)
        writer._write(pending)
        writer.index = files.index()
    return OrderStore(root)


NOW = int(time.time() * 1000) - DAY_MS


def test_a_field_of_other_types_in_two_parts_reads_as_text_like_the_json_path(
    tmp_path: Path,
) -> None:
    store = write(
        tmp_path,
        [body("a", NOW, extra=1), body("b", NOW + 1, extra=2)],
        [body("c", NOW + 2, extra="x")],
    )
    assert len(table_files(tmp_path)) == 2 * len(TABLE_NAMES)
    frames = store.frames()
    assert frames.orders.set_index("id")["extra"].to_dict() == {"a": "1", "b": "2", "c": "x"}
    assert_same(frames, json_path(store))


def test_odd_values_still_warn_when_read_from_the_tables(tmp_path: Path) -> None:
    odd = body("a", NOW, trades=[{"id": "t", "price": "abc", "amount": "1"}])
    store = write(tmp_path, [odd, body("b", NOW + 1)])
    with pytest.warns(RuntimeWarning, match=r"trades\[\]\.price") as said:
        frames = store.frames()
    with pytest.warns(RuntimeWarning, match=r"trades\[\]\.price") as before:
        want = json_path(store)
    assert [str(w.message) for w in said] == [str(w.message) for w in before]
    assert_same(frames, want)


def test_a_damaged_table_file_is_not_read(tmp_path: Path) -> None:
    store = write(tmp_path, [body("a", NOW), body("b", NOW + 1)])
    want = json_path(store)
    fills = next(p for p in table_files(tmp_path) if p.parts[-3] == "fills")
    fills.write_bytes(fills.read_bytes()[:-20])  # cut short
    assert_same(store.frames(), want)
    fills.write_bytes(b"not parquet")
    assert_same(store.frames(), want)


def test_tables_of_another_profile_are_not_read(tmp_path: Path) -> None:
    quotes = [{"venue": "X", "price": "10", "quotedAt": NOW}]
    store = write(tmp_path, [body("a", NOW, evaluatedTickers=quotes)])
    other = DEFAULT_PROFILE.replace({"orders.quote_venue_field": "venue"})
    with_other = OrderStore(tmp_path, profile=other)
    frames = with_other.frames()
    assert list(frames.evaluated_tickers["venue"]) == ["X"]
    assert_same(frames, json_path(with_other))
    # its own tables read "venue" as an unknown field, "exchange" as the venue
    assert store.frames().evaluated_tickers["exchange"].isna().all()


# -- sans I/O -----------------------------------------------------------------------------


def test_the_token_of_what_is_no_parquet_file_matches_no_table(tmp_path: Path) -> None:
    short, junk = tmp_path / "short", tmp_path / "junk"
    short.write_bytes(b"PAR1")
    junk.write_bytes(b"x" * 100 + b"\x10\x00\x00\x00PAR1")
    assert part_token(short) == "" and part_token(junk) != ""
    huge = tmp_path / "huge"
    huge.write_bytes(b"x" * 20 + b"\xff\xff\xff\x7fPAR1")  # a footer longer than the file
    assert part_token(huge) == ""
    tables = Tables(StoreFiles(tmp_path / "store"), DEFAULT_PROFILE)
    # no table is ever taken for a part whose version cannot be told
    part = tmp_path / "store" / "month=2026-01" / "part-1.parquet"
    assert tables.meta("orders", part, "") is None


def test_times_go_to_disk_in_microseconds_and_come_back_in_milliseconds() -> None:
    ms = pa.timestamp("ms", tz="UTC")
    table = pa.table(
        {
            "createdAt": pa.array([1_793_491_200_123], ms),
            "local": pa.array([1], pa.timestamp("s")),
            "n": [1],
        }
    )
    disk, cast = to_disk(table)
    assert cast == ["createdAt"] and disk.schema.field("createdAt").type.unit == "us"
    assert disk.schema.field("local").type == pa.timestamp("s")
    assert from_disk(disk, cast).equals(table)


def test_align_orders_rows_as_the_part_file_and_keeps_each_orders_items_in_order() -> None:
    tables = {
        "orders": pa.table({"id": ["b", "a", "z"]}),
        "trades": pa.table({"orderId": ["a", "b", "a", "b"], "n": [1, 2, 3, 4]}),
    }
    out = align(tables, pa.array(["a", "b"]))
    assert out["orders"].column("id").to_pylist() == ["a", "b"]  # z: not in the part
    assert out["trades"].column("n").to_pylist() == [1, 3, 2, 4]


def test_the_writer_runs_in_a_thread_of_a_sync_too(tmp_path: Path) -> None:
    # the same writer under asyncio (as run_sync drives it): flush writes part and tables
    files = StoreFiles(tmp_path)
    writer = Writer(files, DEFAULT_PROFILE, 1, {})
    month, row = writer.row("a", body("a", NOW), "ids", NOW)
    asyncio.run(writer.add(month, row))
    assert len(table_files(tmp_path)) == len(TABLE_NAMES)


def test_a_changed_order_whose_field_changed_type_rederives_its_part(tmp_path: Path) -> None:
    store = write(tmp_path, [body("a", NOW, extra=1), body("b", NOW + 1, extra=2)])
    # "a" comes back with text where it had a number: its part's kept rows do not join
    write(tmp_path, [body("a", NOW, extra="x", status="closed", updatedAt=NOW + 5_000)])
    files = StoreFiles(tmp_path)
    tables = Tables(files, DEFAULT_PROFILE)
    part = files.month_files()[0]
    assert tables.read(part, part_token(part)) is None  # not written: the bodies are read
    assert_same(store.frames(), json_path(store))
    assert tables.backfill() == 1  # as the end of every sync does
    assert tables.read(part, part_token(part)) is not None
    frames = store.frames()
    assert frames.orders.set_index("id")["extra"].to_dict() == {"a": "x", "b": "2"}
    assert_same(frames, json_path(store))


def test_a_window_on_updated_at_finds_orders_of_earlier_months(tmp_path: Path) -> None:
    october, november = 1_790_812_800_000, 1_793_491_200_000  # 2026-10-01, 2026-11-01 UTC
    store = write(
        tmp_path,
        [body("old", october, updatedAt=november + 60_000), body("new", november + 1)],
    )
    assert len(StoreFiles(tmp_path).months()) == 2
    changed = store.frames(since=november, on="updatedAt")
    assert set(changed.orders["id"]) == {"old", "new"}
    created = store.frames(since=november)  # on createdAt: only November is read
    assert set(created.orders["id"]) == {"new"}
