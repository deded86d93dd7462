"""What a sync refuses to write and what a read refuses to guess at, fed the answers and files
the simulator never makes: fetchOrder bodies with a BOM, in UTF-16, with a lone surrogate,
with timestamps in the wrong unit or out of range, without a string status or type; part
files that are damaged or another dataset's; a state file of the wrong shape; bad
arguments (refused before the store's folder is made)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from toolkit.client._client import Client
from toolkit.errors import InvalidRequest, InvalidResponse
from toolkit.profile import DEFAULT_PROFILE
from toolkit.store import OrderStore
from toolkit.store._files import StoreFiles

BASE = "http://127.0.0.1:9"  # never dialled: the mock transport answers
DAY_MS = 86_400_000


def order(oid: str, **changes: Any) -> dict[str, Any]:
    """A closed market order body (spec 2.4), created yesterday."""
    created = int(time.time() * 1000) - DAY_MS
    return {
        "id": oid,
        "exchange": "X",
        "symbol": "BTC/BRL",
        "side": "buy",
        "type": "market",
        "status": "closed",
        "amount": "1",
        "createdAt": created,
        "updatedAt": created + 1_000,
        "trades": [],
        **changes,
    }


class Bodies:
    """fetchOrder answering the bytes given per order id (the listing is not read:
    ``listing=False``); records the ids fetched."""

    def __init__(self, bodies: dict[str, bytes | dict[str, Any]]) -> None:
        self.bodies = {
            oid: b if isinstance(b, bytes) else json.dumps(b).encode() for oid, b in bodies.items()
        }
        self.fetched: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/orders/fetchOrder", request.url
        oid = request.url.params["orderId"]
        self.fetched.append(oid)
        if oid not in self.bodies:
            return httpx.Response(404, json={"message": "Not Found"})
        return httpx.Response(200, content=self.bodies[oid])

    def client(self, **settings: Any) -> Client:
        return Client(base_url=BASE, transport=httpx.MockTransport(self), **settings)


def sync(service: Bodies, root: Path, **settings: Any) -> OrderStore:
    store = OrderStore(root)
    with service.client(**settings) as client:
        store.sync(client, ids=list(service.bodies), listing=False)
    return store


def parts(root: Path) -> list[Path]:
    return sorted(root.glob("month=*/part-*.parquet"))


# -- bodies -------------------------------------------------------------------------------


def test_a_body_with_a_bom_or_in_utf16_is_stored_as_the_utf8_json_it_is(tmp_path: Path) -> None:
    bodies = {oid: order(oid, info="café") for oid in ("M1", "M2", "M3")}
    service = Bodies(
        {
            "M1": json.dumps(bodies["M1"]).encode(),
            "M2": b"\xef\xbb\xbf" + json.dumps(bodies["M2"]).encode(),  # UTF-8 with a BOM
            "M3": json.dumps(bodies["M3"], ensure_ascii=False).encode("utf-16"),
        }
    )
    store = sync(service, tmp_path)
    # every stored body is the JSON that was read, with no BOM: the frames read it
    stored = StoreFiles(tmp_path).read(["id", "body"]).to_pylist()
    assert {row["id"]: json.loads(row["body"]) for row in stored} == bodies
    assert not any(row["body"].startswith("\ufeff") for row in stored)
    frames = store.frames()
    assert sorted(frames.orders["id"]) == ["M1", "M2", "M3"]
    assert set(frames.orders["status"]) == {"CLOSED"}


def test_a_body_with_a_lone_surrogate_is_refused_before_it_is_written(tmp_path: Path) -> None:
    text = json.dumps(order("M1", info="\ud800"))  # ensure_ascii: the escape \ud800
    service = Bodies({"M1": text.encode()})
    with pytest.raises(InvalidResponse, match=r"'M1'.*surrogate"):
        sync(service, tmp_path)
    assert parts(tmp_path) == []
    assert len(OrderStore(tmp_path).frames()) == 0  # the store stays readable


@pytest.mark.parametrize(
    ("field", "raw"),
    [
        ("createdAt", "CREATED * 1000"),  # microseconds
        ("createdAt", "CREATED * 1000000"),  # nanoseconds
        ("createdAt", "NaN"),
        ("createdAt", "1e300"),
        ("createdAt", '"nan"'),
        ("createdAt", "0"),
        ("createdAt", '"yesterday"'),
        ("updatedAt", "10000000000000000000"),
        ("updatedAt", '"yesterday"'),
    ],
)
def test_a_bad_timestamp_names_the_order_the_field_and_the_unit_setting(
    tmp_path: Path, field: str, raw: str
) -> None:
    body = order("M1")
    if raw.startswith("CREATED"):
        raw = str(body["createdAt"] * int(raw.split("*")[1]))
    text = json.dumps({**body, field: "@@"}).replace('"@@"', raw)
    service = Bodies({"M1": text.encode()})
    with pytest.raises(InvalidResponse) as info:
        sync(service, tmp_path)
    message = str(info.value)
    assert "'M1'" in message and field in message and "orders.timestamp_unit" in message
    assert "listing." not in message  # the body's field, not the listing's setting
    assert parts(tmp_path) == []


def test_a_profile_with_the_wrong_timestamp_unit_is_named(tmp_path: Path) -> None:
    service = Bodies({"M1": order("M1")})  # milliseconds
    seconds = DEFAULT_PROFILE.replace({"orders.timestamp_unit": "s"})
    with pytest.raises(InvalidResponse, match=r"createdAt .* year \d{5}.*timestamp_unit.*'s'"):
        sync(service, tmp_path, profile=seconds)
    assert parts(tmp_path) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("status", None), ("status", 3), ("status", ""), ("type", 5), ("symbol", 5)],
)
def test_a_body_without_a_string_status_or_type_is_refused_and_not_written(
    tmp_path: Path, field: str, value: object
) -> None:
    body = order("M1", **{field: value})
    if value is None:
        del body[field]
    service = Bodies({"M1": body, "M2": order("M2")})
    with pytest.raises(InvalidResponse, match=rf"'M1'.*'{field}'"):
        sync(service, tmp_path)
    assert "M1" not in set(OrderStore(tmp_path).frames().orders["id"])


def test_orders_fetched_before_a_failure_are_kept_and_not_fetched_again(tmp_path: Path) -> None:
    good = {f"M{i}": order(f"M{i}") for i in range(5)}
    bad = order("M9")
    del bad["status"]
    service = Bodies({**good, "M9": bad})
    with pytest.raises(InvalidResponse, match="'M9'"):
        sync(service, tmp_path, concurrency=1)  # one at a time: M0..M4 are fetched first
    assert set(OrderStore(tmp_path).frames().orders["id"]) == set(good)
    # the service is fixed: the next sync fetches only what it did not keep
    service.bodies["M9"] = json.dumps(order("M9")).encode()
    service.fetched.clear()
    sync(service, tmp_path)
    assert service.fetched == ["M9"]


# -- files of the store -------------------------------------------------------------------


@pytest.fixture
def filled(tmp_path: Path) -> tuple[OrderStore, Bodies, Path]:
    service = Bodies({f"M{i}": order(f"M{i}") for i in range(4)})
    store = sync(service, tmp_path)
    service.fetched.clear()
    (part,) = parts(tmp_path)
    return store, service, part


def _truncate(part: Path) -> Path:
    part.write_bytes(part.read_bytes()[:100])
    return part


def _empty(part: Path) -> Path:
    path = part.parent / "part-0-empty.parquet"
    path.write_bytes(b"")
    return path


def _foreign(part: Path) -> Path:
    path = part.parent / "part-0-foreign.parquet"
    pq.write_table(pa.table({"a": [1]}), path)
    return path


def _not_parquet(part: Path) -> Path:
    path = part.parent / "part-0-text.parquet"
    path.write_text("id,status\nM1,CLOSED\n" * 50, encoding="utf-8")
    return path


def _foreign_with_ids(part: Path) -> Path:
    # the user's own file, named like an older part, whose ids are all in the real part:
    # an interrupted compaction's leftover by ids alone, which repair would delete
    path = part.parent / "part-0-mine.parquet"
    pq.write_table(pa.table({"id": ["M1"], "note": ["my own notes"]}), path)
    return path


@pytest.mark.parametrize("damage", [_truncate, _empty, _foreign, _foreign_with_ids, _not_parquet])
def test_a_damaged_or_foreign_part_file_is_named_never_guessed_at(
    filled: tuple[OrderStore, Bodies, Path], damage: Any
) -> None:
    store, service, part = filled
    bad = damage(part)
    for read in (store.frames, lambda: len(store), store.coverage):
        with pytest.raises(InvalidRequest, match="not a readable part of this store") as info:
            read()
        assert str(bad) in str(info.value) and "move it out" in str(info.value)
    with service.client() as client, pytest.raises(InvalidRequest, match=str(bad)):
        store.sync(client, ids=["M9"], listing=False)
    assert service.fetched == []  # refused before any request
    assert bad.exists()  # never deleted


def test_a_state_file_of_the_wrong_shape_is_refused_before_any_request(
    filled: tuple[OrderStore, Bodies, Path], tmp_path: Path
) -> None:
    store, service, _ = filled
    state = tmp_path / "_store.json"
    good = json.loads(state.read_text())
    for key, value in (("syncs", "two"), ("missing", []), ("listing_newest_ms", "soon")):
        state.write_text(json.dumps({**good, key: value}))
        with service.client() as client, pytest.raises(InvalidRequest) as info:
            store.sync(client, ids=["M9"], listing=False)
        assert str(state) in str(info.value) and repr(key) in str(info.value)
        assert service.fetched == []
        with pytest.raises(InvalidRequest, match=repr(key)):
            store.coverage()


# -- arguments ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ids": ["a/b"]},
        {"ids": "M1"},
        {"ids": [1]},
        {"overlap_s": -1},
        {"overlap_s": float("nan")},
        {"page_rule": "nope"},
        {"concurrency": 0},
        {"listing": "no"},
        {"recordings": "rec"},
        {"chunk": 0},
    ],
)
def test_bad_arguments_are_refused_before_the_store_is_made(
    tmp_path: Path, kwargs: dict[str, Any]
) -> None:
    service = Bodies({"M1": order("M1")})
    root = tmp_path / "store"
    with service.client() as client, pytest.raises(InvalidRequest):
        OrderStore(root).sync(client, **{"listing": False, **kwargs})
    assert not root.exists() and service.fetched == []


def test_ids_and_recordings_are_lists_and_a_bad_id_is_named_by_position(tmp_path: Path) -> None:
    service = Bodies({"M1": order("M1")})
    store = OrderStore(tmp_path / "store")
    with service.client() as client:
        with pytest.raises(InvalidRequest, match="not a single string"):
            store.sync(client, ids="M1", listing=False)
        with pytest.raises(InvalidRequest, match=r"ids\[1\]: .*'/'"):
            store.sync(client, ids=["M1", "a/b"], listing=False)
        with pytest.raises(InvalidRequest, match="not one path"):
            store.sync(client, recordings=str(tmp_path), listing=False)


def test_frames_refuse_unknown_types_and_arguments_of_the_wrong_type(tmp_path: Path) -> None:
    service = Bodies(
        {
            "M1": order("M1"),
            "L1": order("L1", type="limit", status="OPEN"),
            "S1": order("S1", type="stop"),  # a type the service writes, not in spec 2.4
        }
    )
    store = sync(service, tmp_path)
    assert set(store.frames(types="MARKET").orders["id"]) == {"M1"}
    assert set(store.frames(types=["stop"]).orders["id"]) == {"S1"}  # held: known
    for types in ("markets", ["market", "lmit"]):
        with pytest.raises(InvalidRequest, match="no such order type; known: limit, market, stop"):
            store.frames(types=types)
    for kwargs in ({"types": 5}, {"symbols": 5}, {"types": b"limit"}):
        with pytest.raises(InvalidRequest, match="a string or a list of them"):
            store.frames(**kwargs)
