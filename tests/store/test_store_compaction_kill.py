"""A sync killed at any point of a month's compaction: raw DuckDB and Polars reads (which
store.md promises read the store as it is) see each order once and every order, as soon
as the store is opened again (``OrderStore(root)``). Between the merged file and the
last removal of an old part the files alone hold those orders twice; the compaction's
plan (``ROOT/_compaction.json``) says which files to remove."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pytest

from toolkit import _atomic
from toolkit.sim import Simulator
from toolkit.store import OrderStore
from toolkit.store import _files as files_module
from toolkit.store._files import COMPACTION_NAME, StoreFiles, schema

MONTH = "2026-11"
T0_MS = 1_795_305_600_000  # 2026-11-22T00:00:00Z
PARTS = 5
PER_PART = 3


class Killed(BaseException):
    """The process dying at this step (nothing of the toolkit handles a BaseException)."""


def rows(first: int, n: int, t0: int = T0_MS) -> pa.Table:
    """``n`` closed orders' rows from id ``o-<first>`` (shared by the store's tests)."""
    ids = [f"o-{first + i:03d}" for i in range(n)]
    ts = [t0 + first + i for i in range(n)]
    return pa.table(
        {
            "id": ids,
            "type": ["market"] * n,
            "symbol": ["BTC/BRL"] * n,
            "status": ["CLOSED"] * n,
            "createdAt": ts,
            "updatedAt": ts,
            "_source": ["ids"] * n,
            "_synced_at": ts,
            "body": [json.dumps({"id": i, "status": "CLOSED"}) for i in ids],
        }
    ).cast(schema())


def _store(root: Path) -> StoreFiles:
    files = StoreFiles(root)
    for p in range(PARTS):
        files.add_part(MONTH, rows(p * PER_PART, PER_PART))
    return files


def _raw_counts(root: Path) -> dict[str, tuple[int, int]]:
    """(rows, distinct ids) as DuckDB and Polars read the store's files, as store.md does."""
    query = (
        "select count(*), count(distinct id) from "
        f"read_parquet('{root}/*/*.parquet', hive_partitioning = true)"
    )
    found = duckdb.sql(query).fetchall()[0]
    scan = pl.scan_parquet(f"{root}/month=*/*.parquet", hive_partitioning=True)
    polars = scan.select(pl.len(), pl.col("id").n_unique()).collect().row(0)
    return {"duckdb": (found[0], found[1]), "polars": (polars[0], polars[1])}


def _kill_at(monkeypatch: pytest.MonkeyPatch, step: int, only: str = "") -> list[str]:
    """Make the ``step``-th change to the store's files (a rename into place or a
    removal, named ``replace <file>`` or ``unlink <file>``; 0 for the first), counting
    those whose name starts with ``only``, raise :class:`Killed` instead of happening.
    Returns the changes counted that were made."""
    made: list[str] = []
    real_replace, real_unlink = os.replace, Path.unlink

    def change(what: str, do: Callable[[], Any]) -> Any:
        if not what.startswith(only):
            return do()
        if len(made) == step:
            raise Killed(what)
        made.append(what)
        return do()

    def replace(src: Any, dst: Any) -> None:
        change(f"replace {Path(dst).name}", lambda: real_replace(src, dst))

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if self.name.endswith(".tmp"):  # the cleanup of a write a kill would not run
            return real_unlink(self, missing_ok=missing_ok)
        change(f"unlink {self.name}", lambda: real_unlink(self, missing_ok=missing_ok))

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(Path, "unlink", unlink)
    return made


def test_a_compaction_killed_at_any_step_reads_once_when_the_store_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = PARTS * PER_PART
    # the steps of one compaction: its plan, the merged file, each old part, the plan
    counted = _store(tmp_path / "count")
    steps = _kill_at(monkeypatch, 10**6)
    counted.compact(MONTH, 1)
    monkeypatch.undo()
    assert len(steps) == 2 + PARTS + 1, steps
    for step in range(len(steps)):
        root = tmp_path / f"kill-{step}"
        files = _store(root)
        made = _kill_at(monkeypatch, step)
        with pytest.raises(Killed):
            files.compact(MONTH, 1)
        monkeypatch.undo()
        assert len(made) == step
        OrderStore(root)  # opened again: the compaction is finished (or was never begun)
        counts = _raw_counts(root)
        assert counts == {"duckdb": (want, want), "polars": (want, want)}, (step, made)
        assert not (root / COMPACTION_NAME).exists()
        merged = step >= 2  # the merged file was in place: the month is one file
        assert len(files.month_files([MONTH])) == (1 if merged else PARTS), step


def test_compaction_steps_are_durable_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _store(tmp_path)
    events: list[tuple[str, str]] = []
    real_replace, real_unlink = os.replace, Path.unlink
    real_fsync = _atomic.fsync_path

    def fsync(path: Any) -> None:
        events.append(("fsync", Path(path).name))
        real_fsync(path)

    def replace(src: Any, dst: Any) -> None:
        events.append(("replace", Path(dst).name))
        real_replace(src, dst)

    def unlink(self: Path, missing_ok: bool = False) -> None:
        events.append(("unlink", self.name))
        real_unlink(self, missing_ok=missing_ok)

    for module in (_atomic, files_module):
        monkeypatch.setattr(module, "fsync_path", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(Path, "unlink", unlink)
    old = [p.name for p in files.month_files([MONTH])]
    assert files.compact(MONTH, 1)
    monkeypatch.undo()

    def at(event: tuple[str, str]) -> int:
        return events.index(event)

    plan = at(("replace", COMPACTION_NAME))
    merged = next(
        i
        for i, (kind, name) in enumerate(events)
        if kind == "replace" and name not in old and name != COMPACTION_NAME
    )
    removed = [at(("unlink", name)) for name in old]
    done = at(("unlink", COMPACTION_NAME))
    # the plan is durable (its folder fsynced) before the merged file appears, which is
    # durable before any old part goes; every removal is durable before the plan goes
    assert plan < at(("fsync", tmp_path.name)) < merged
    assert events[merged + 1] == ("fsync", f"month={MONTH}")
    assert merged + 1 < min(removed)
    last_fsync = max(i for i, e in enumerate(events) if e == ("fsync", f"month={MONTH}"))
    assert max(removed) < last_fsync < done
    assert events[-1] == ("fsync", tmp_path.name)


def test_a_plan_is_left_to_the_sync_that_holds_the_lock(tmp_path: Path) -> None:
    files = _store(tmp_path)
    merged = files.month_dir(MONTH) / "part-9999999999999999999-ffffffff.parquet"
    old = files.month_files([MONTH])
    files.write_table(merged, rows(0, PARTS * PER_PART))
    plan = {"month": MONTH, "merged": merged.name, "parts": [p.name for p in old]}
    (tmp_path / COMPACTION_NAME).write_text(json.dumps(plan))
    with files.lock():  # a sync runs (its own compaction): the store opened leaves it
        OrderStore(tmp_path)
        assert all(p.exists() for p in old) and (tmp_path / COMPACTION_NAME).exists()
    assert len(OrderStore(tmp_path)) == PARTS * PER_PART  # once no writer runs
    assert files.month_files([MONTH]) == [merged]


@pytest.mark.parametrize(
    "plan",
    [
        "{not json",
        json.dumps({"month": MONTH, "merged": "part-x.parquet", "parts": ["../../etc.parquet"]}),
        json.dumps({"month": "../x", "merged": "part-x.parquet", "parts": []}),
    ],
    ids=["unreadable", "a path", "a bad month"],
)
def test_a_plan_compact_never_writes_removes_nothing(tmp_path: Path, plan: str) -> None:
    files = _store(tmp_path)
    (tmp_path / COMPACTION_NAME).write_text(plan)
    before = files.month_files()
    OrderStore(tmp_path)
    assert files.month_files() == before and not (tmp_path / COMPACTION_NAME).exists()


def test_a_sync_killed_while_compacting_reads_once_once_opened(
    fresh_sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.store import _sync

    root = tmp_path / "store"
    monkeypatch.setattr(_sync, "MAX_FILES_PER_MONTH", 3)
    ids = [fresh_sim.control.market_order(symbol="BTC/BRL", side="buy")["id"] for _ in range(5)]
    with fresh_sim.client() as client:
        store = OrderStore(root)
        for oid in ids[:3]:  # a part file each: three, not yet compacted
            store.sync(client, ids=[oid], listing=False)
        months = StoreFiles(root).months()
        # the fourth part makes a compaction, killed at its second removal of an old part
        made = _kill_at(monkeypatch, 1, only="unlink part-")
        with pytest.raises(Killed):
            store.sync(client, ids=ids[3:4], listing=False)
        monkeypatch.undo()
        assert len(made) == 1
        assert len(OrderStore(root).frames().orders) == 4
        assert _raw_counts(root) == {"duckdb": (4, 4), "polars": (4, 4)}
        assert StoreFiles(root).months() == months and len(StoreFiles(root).month_files()) == 1
        store.sync(client, ids=ids[4:], listing=False)
    assert _raw_counts(root)["duckdb"] == (5, 5)
