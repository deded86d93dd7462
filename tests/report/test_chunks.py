"""The chunks of a pass in a pool of worker processes (toolkit/report/_chunks.py): the
same parts as in one process, merged in the set's order; a chunk failing in a worker
stops the pass with its own error, leaves no part, and every worker is reaped."""

from __future__ import annotations

import multiprocessing
import os
import re
from pathlib import Path

import _pool_faults
import pandas as pd
import pytest
from _parts_cases import CASES, export, market_frame, write_recording
from test_parts import assert_same, whole_set

from toolkit.errors import InvalidRequest
from toolkit.report import _chunks
from toolkit.report._inputs import export_frames
from toolkit.report._parts import order_parts
from toolkit.report._scratch import LOCK


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> None:
    # a pool for any set of several chunks (by default only from POOL_MIN_ORDERS orders)
    monkeypatch.setattr(_chunks, "POOL_MIN_ORDERS", 0)


def test_the_pool_size_follows_the_set() -> None:
    big = _chunks.POOL_MIN_ORDERS
    assert _chunks.pool_workers(big, big) == 0  # one chunk: in this process
    assert _chunks.pool_workers(big - 1, 10) == 0  # a small set: in this process
    assert _chunks.pool_workers(big, 10) == min(_chunks.POOL_WORKERS, os.cpu_count() or 1)


@pytest.mark.usefixtures("pooled")
def test_chunks_in_worker_processes_give_todays_tables(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "duplicates")
    folder = export(case.frames(), tmp_path / "export")
    root = write_recording(tmp_path / "rec")
    want = whole_set(export_frames(folder), root)
    assert want["per_order"]["creation_mid"].notna().any()
    parts = order_parts(folder, root, chunk_orders=2, folder=tmp_path)
    try:
        assert len(parts.per_order) > 2
        assert_same(parts, want)
        # the chunks' inputs handed to the workers as files are gone, the parts stay
        assert parts.folder is not None
        left = [p.name for p in parts.folder.iterdir() if not p.name.endswith(".parquet")]
        assert left == [LOCK]  # and the file that says the parts are in use
    finally:
        parts.close()
    assert multiprocessing.active_children() == []


def _routing_export(tmp_path: Path) -> tuple[Path, Path]:
    """The routing case exported, and an empty folder for its parts."""
    folder = export(next(c for c in CASES if c.name == "routing").frames(), tmp_path / "x")
    parts = tmp_path / "parts"
    parts.mkdir()
    return folder, parts


@pytest.mark.usefixtures("pooled")
def test_a_chunk_failing_in_a_worker_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_chunks, "CHUNK_WORK", _pool_faults.second_chunk_fails)
    folder, parts = _routing_export(tmp_path)
    with pytest.raises(InvalidRequest, match="chunk 2 is broken") as caught:
        order_parts(folder, chunk_orders=1, folder=parts)
    # raised in a worker, given here as it was: one error, no pool machinery around it
    pid = re.search(r"in process (\d+)", str(caught.value))
    assert pid is not None and int(pid.group(1)) != os.getpid()
    assert list(parts.iterdir()) == []
    assert multiprocessing.active_children() == []


@pytest.mark.usefixtures("pooled")
def test_a_worker_that_dies_is_said_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_chunks, "CHUNK_WORK", _pool_faults.worker_dies)
    folder, parts = _routing_export(tmp_path)
    with pytest.raises(InvalidRequest, match=r"worker process .* ended abruptly"):
        order_parts(folder, chunk_orders=1, folder=parts)
    assert list(parts.iterdir()) == []
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("text", ["two", "-1", "1.5"])
def test_a_workers_setting_that_is_no_count_is_named(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_chunks.WORKERS_ENV, text)
    folder, parts = _routing_export(tmp_path)
    with pytest.raises(InvalidRequest, match=rf"\$TOOLKIT_REPORT_WORKERS='{re.escape(text)}'"):
        order_parts(folder, chunk_orders=1, folder=parts)
    assert list(parts.iterdir()) == []


@pytest.mark.usefixtures("pooled")
@pytest.mark.parametrize("text", ["0", "1"])
def test_no_workers_runs_the_chunks_here(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = export(next(c for c in CASES if c.name == "routing").frames(), tmp_path / "x")
    monkeypatch.setenv(_chunks.WORKERS_ENV, text)
    monkeypatch.setattr(_chunks, "CHUNK_WORK", _pool_faults.second_chunk_fails)
    with pytest.raises(InvalidRequest, match=rf"in process {os.getpid()}\)"):
        order_parts(folder, chunk_orders=1)


@pytest.mark.usefixtures("pooled")
def test_a_market_frame_in_memory_is_not_copied_into_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = export(next(c for c in CASES if c.name == "routing").frames(), tmp_path / "x")
    monkeypatch.setattr(_chunks, "CHUNK_WORK", _pool_faults.second_chunk_fails)
    with pytest.raises(InvalidRequest, match=rf"in process {os.getpid()}\)"):
        order_parts(folder, market_frame(), chunk_orders=1)


def test_a_workers_engine_runs_on_one_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the pool runs a process per core: a worker's engine on every core would contend
    from toolkit.report import _engine
    from toolkit.report._chunks import ChunkSetting

    monkeypatch.setattr(_engine, "THREADS", None)  # both restored after the test
    monkeypatch.setattr(_chunks, "_SETTING", None)
    with _engine.connection() as con:
        assert con.execute("SELECT current_setting('threads')").fetchone() == (os.cpu_count(),)
    setting = ChunkSetting(None, 60.0, None, pd.Series(dtype="int64"), True, tmp_path)
    _chunks._start_worker(setting)  # as a worker process starts
    assert _engine.THREADS == 1
    with _engine.connection() as con:
        assert con.execute("SELECT current_setting('threads')").fetchone() == (1,)
