"""``scan_recording``: a recording as a lazy ``pyarrow.dataset.Dataset`` that pyarrow and
DuckDB scan, pruned by channel, date, window and symbol, without ``raw`` unless asked, with
the same rows and types as the eager read (old nanosecond files included)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from _tick_recording import HOUR, T0, write_tick_files

from toolkit.errors import InvalidRequest
from toolkit.recording import _badfiles, read_recording, scan_recording

SIX_S = 6 * 10**9


@pytest.fixture(scope="module")
def two_days(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # two days of 10-minute files, a row each 6 s (read only by the tests)
    root = tmp_path_factory.mktemp("rec")
    write_tick_files(root, T0, 2 * 24 * 6, 100, SIX_S)
    return root


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("received_at", "ascending"), ("seq", "ascending")])


def test_a_window_and_a_symbol_read_as_the_eager_read(two_days: Path) -> None:
    start, end = T0 + 30 * HOUR, T0 + 32 * HOUR
    lazy = scan_recording(two_days, "watchticker", start=start, end=end, symbols=["btc/brl"])
    assert isinstance(lazy, ds.Dataset)
    # only the files of those two hours, of that channel and day
    assert len(lazy.files) == 12
    assert all("channel=watchticker/date=2026-11-23" in f for f in lazy.files)
    assert "raw" not in lazy.schema.names and "date" in lazy.schema.names
    got = _sorted(lazy.to_table())
    eager = read_recording(two_days, "watchticker", start=start, end=end, symbols=["BTC/BRL"])
    assert got.num_rows == len(eager) == 2 * 600 // 3
    assert got.column("received_at").type == pa.timestamp("ns", tz="UTC")
    for column in ("received_at", "seq", "symbol", "bid", "ask", "last", "updated_at"):
        assert got.column(column).to_pylist() == eager[column].tolist(), column
    assert set(got.column("date").to_pylist()) == {"2026-11-23"}


def test_duckdb_scans_it_with_its_filters(two_days: Path) -> None:
    lazy = scan_recording(two_days, "watchticker", start=T0 + 30 * HOUR, end=T0 + 32 * HOUR)
    con = duckdb.connect()
    con.register("lazy", lazy)  # what duckdb.sql("... from lazy") finds by its name
    found = con.sql(
        "select symbol, count(*) as n, min(received_at) as first from lazy "
        "where symbol = 'ETH/BRL' group by symbol"
    ).fetchall()
    assert [(s, n) for s, n, _ in found] == [("ETH/BRL", 400)]
    assert found[0][2].timestamp() * 10**9 >= T0 + 30 * HOUR


def test_raw_and_every_column_only_when_asked(two_days: Path) -> None:
    assert "raw" in scan_recording(two_days, "watchticker", raw=True).schema.names
    every = scan_recording(two_days, columns="all").schema.names
    assert every[:-1] == list(read_recording(two_days, columns="all").columns)
    assert every[-1] == "date"


def test_it_opens_no_file_of_another_channel_or_day(
    two_days: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    check = _badfiles.file_problem

    def spy(path: str) -> Any:
        checked.append(path)
        return check(path)

    monkeypatch.setattr(_badfiles, "file_problem", spy)
    lazy = scan_recording(two_days, "_session", end=T0 + HOUR)
    assert lazy.to_table().num_rows == 1 and len(checked) == 1


def test_an_empty_window_is_an_empty_typed_dataset(two_days: Path) -> None:
    lazy = scan_recording(two_days, "watchticker", start=T0 + 100 * HOUR)
    table = lazy.to_table()
    assert table.num_rows == 0 and table.schema.field("bid").type == pa.float64()


def test_bad_arguments_are_refused_before_anything_is_read(two_days: Path) -> None:
    with pytest.raises(InvalidRequest, match="unknown recording columns: nope"):
        scan_recording(two_days, columns=["nope"])
    with pytest.raises(InvalidRequest, match="not a time"):
        scan_recording(two_days, start="soon")
    with pytest.raises(InvalidRequest, match="no recording"):
        scan_recording(two_days / "missing")
