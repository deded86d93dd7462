"""The partition pass writes each chunk of each table as a folder of Parquet files, in no
particular row order (toolkit/report/_partition.py): a chunk is read back in the input's
order whatever order its rows were written in, and a chunk without rows of a table is an
empty table of that table's columns."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from toolkit.report._engine import connection
from toolkit.report._partition import CHUNK, ROW, chunk_rows, partition, read_chunk


def test_a_chunk_written_out_of_order_is_read_in_input_order(tmp_path: Path) -> None:
    # the engine may write a chunk's rows in any order, in several files (one a thread)
    folder = tmp_path / f"{CHUNK}=0"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["d", "b"], ROW: [3, 1]}), folder / "data_0.parquet")
    pq.write_table(pa.table({"id": ["c", "a"], ROW: [2, 0]}), folder / "data_1.parquet")
    got = read_chunk(folder)
    assert got.column_names == ["id"]  # the pass's own column is not the user's
    assert got.column("id").to_pylist() == ["a", "b", "c", "d"]


def _read(rows: object) -> list[str]:
    assert isinstance(rows, Path)  # a chunk with rows is a folder
    return list(read_chunk(rows).column("id").to_pylist())


def _export(tmp_path: Path) -> dict[str, list[Path]]:
    orders = pa.table({"id": ["o1", "o2", "o3", "o2"], "status": ["closed"] * 4})
    # trades of o1 and o3 only (chunk 1 has none), written in an order of their own
    trades = pa.table({"orderId": ["o3", "o1", "o3"], "id": ["t3", "t1", "t4"]})
    quotes = pa.table({"orderId": pa.array([], pa.string()), "price": pa.array([], pa.float64())})
    files = {}
    for name, table in (("orders", orders), ("trades", trades), ("evaluated_tickers", quotes)):
        files[name] = [tmp_path / f"{name}.parquet"]
        pq.write_table(table, files[name][0])
    return files


def test_each_chunk_of_each_table_is_a_folder(tmp_path: Path) -> None:
    files = _export(tmp_path)
    with connection() as con:
        part = partition(con, files, 1, tmp_path / "chunks")
    assert part.chunks == 3 and part.orders == 3  # o2 kept once, at its last row
    assert [_read(chunk_rows(part, "orders", i)) for i in range(3)] == [["o1"], ["o3"], ["o2"]]
    assert _read(chunk_rows(part, "trades", 0)) == ["t1"]
    assert _read(chunk_rows(part, "trades", 1)) == ["t3", "t4"]
    # no trade in chunk 2, no quote at all: empty tables of the columns as read
    for name, i in (("trades", 2), ("evaluated_tickers", 0)):
        empty = chunk_rows(part, name, i)
        assert isinstance(empty, pa.Table) and empty.num_rows == 0
        assert empty.schema == part.schemas[name]


def test_a_set_without_a_table_has_no_chunk_of_it(tmp_path: Path) -> None:
    files = _export(tmp_path)
    del files["evaluated_tickers"]
    with connection() as con:
        part = partition(con, files, 2, tmp_path / "chunks")
    assert chunk_rows(part, "evaluated_tickers", 0) is None


def test_the_chunks_folder_must_be_new(tmp_path: Path) -> None:
    files = _export(tmp_path)
    (tmp_path / "chunks").mkdir()
    with connection() as con, pytest.raises(FileExistsError):
        partition(con, files, 2, tmp_path / "chunks")
