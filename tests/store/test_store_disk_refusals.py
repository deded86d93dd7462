"""A sync whose disk refuses a file of the store: the error names the store's file (never
its temporary name) and what to do, and what was written before stays readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from toolkit.errors import WriteError
from toolkit.sim import Simulator
from toolkit.store import OrderStore


def test_a_full_disk_mid_sync_names_the_stores_file(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pq.write_table
    calls: list[str] = []

    def write_table(table: Any, where: Any, **kwargs: Any) -> None:
        calls.append(str(where))
        if len(calls) == 2:  # pyarrow's words: the errno only in the text
            raise OSError("Error writing bytes to file. Detail: [errno 28] No space left")
        real(table, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", write_table)
    store = OrderStore(tmp_path / "store")
    with sim.client() as client, pytest.raises(WriteError) as caught:
        store.sync(client, chunk=10)
    meant = Path(str(caught.value.filename))
    assert meant.is_relative_to(tmp_path / "store") and meant.suffix == ".parquet"
    assert not meant.name.startswith(".") and not meant.name.endswith(".tmp")
    assert str(caught.value).startswith(f"cannot write {meant}: the disk is full (ENOSPC)")
    monkeypatch.setattr(pq, "write_table", real)
    assert len(store.frames().orders) > 0  # the first file, whole
