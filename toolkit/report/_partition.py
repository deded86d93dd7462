"""The partition pass of the out-of-core report: the engine (DuckDB) reads a set's order,
trade and quote files where they lie, keeps each order id once as ``deduplicate`` does, and
writes them in chunks of consecutive orders, each chunk with the trades and quotes of its
orders, as Parquet folders (one pass per table, on every core, under its memory limit), so
the per-order code runs on one chunk at a time, in any process (:func:`read_chunk`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from toolkit.errors import InvalidRequest

if TYPE_CHECKING:  # pragma: no cover
    import duckdb
    import pyarrow as pa

#: the tables a chunk holds, with the column that names the order of each row
CHUNKED = {"orders": "id", "trades": "orderId", "evaluated_tickers": "orderId"}
#: the columns the pass adds to each row written (its input position, its chunk)
ROW, CHUNK = "__n", "__chunk"


@dataclass(frozen=True)
class Partition:
    """The chunks (a folder per table and chunk, :func:`chunk_rows`) and what the pass
    learnt of the whole set on the way."""

    folder: Path  # <table>/__chunk=<i>/: the rows of that table in that chunk
    chunks: int
    orders: int  # kept (deduplicated) orders
    duplicates: pd.Series  # orderId -> rows dropped, as ``deduplicate`` counts them
    schemas: Mapping[str, pa.Schema]  # per table, as read (no table: no schema)
    quote_rows: int
    quote_counts: dict[str, int]  # values per evaluated_tickers column, in column order


def _listed(files: Sequence[Path]) -> str:
    return ", ".join("'" + os.fspath(f).replace("'", "''") + "'" for f in files)


def _checked(files: Sequence[Path]) -> tuple[pa.Schema, list[int]]:
    """The schema (unified) and row counts of ``files``; InvalidRequest naming a file that
    is damaged or not Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schemas, rows = [], []
    for f in files:
        try:
            meta = pq.ParquetFile(f)
            schemas.append(meta.schema_arrow)
            rows.append(meta.metadata.num_rows)
        except (OSError, pa.ArrowException) as exc:
            raise InvalidRequest(f"{f} is damaged or not Parquet ({exc})") from None
    try:
        schema = pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowException, TypeError) as exc:
        names = ", ".join(os.fspath(f) for f in files)
        raise InvalidRequest(f"the files {names} do not hold one table ({exc})") from None
    return schema.remove_metadata(), rows


def file_rows(files: Sequence[Path]) -> int:
    """The rows of ``files`` by their footers (0 when one is unreadable: the pass names
    it as it reads it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    except (OSError, pa.ArrowException):
        return 0


def _source(
    con: duckdb.DuckDBPyConnection,
    name: str,
    files: Sequence[Path],
    columns: Sequence[str] | None = None,
) -> pa.Schema:
    """A temp view ``src_<name>`` of ``files`` (only ``columns`` of them, those present)
    with each row's input position ``__n``; its schema."""
    import pyarrow as pa

    schema, rows = _checked(files)
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in schema.names if c in set(columns)])
    listed = ", ".join('r."' + c.replace('"', '""') + '"' for c in schema.names)
    offsets = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype("int64")
    con.register(
        f"files_{name}",
        pa.table(
            {
                "filename": pa.array([os.fspath(f) for f in files], pa.string()),
                "offset": pa.array(offsets),
            }
        ),
    )
    con.execute(
        f"CREATE TEMP VIEW src_{name} AS SELECT {listed + ', ' if listed else ''}"
        f"f.offset + r.file_row_number AS {ROW} FROM read_parquet([{_listed(files)}], "
        "union_by_name = true, filename = true, file_row_number = true) r "
        f"JOIN files_{name} f ON r.filename = f.filename"
    )
    return schema


def _key(schema: pa.Schema, column: str) -> str:
    """The SQL of a row's order id as the per-order code reads it (text, missing: '')."""
    if column not in schema.names:
        return "''"
    return f"coalesce(CAST(\"{column}\" AS VARCHAR), '')"


def _updated_ns(files: Sequence[Path], schema: pa.Schema) -> np.ndarray:
    """Each order row's ``updatedAt`` in ns (NaT: the smallest), read as the per-order code
    reads it (any unit, text or number), one column at a time."""
    import pyarrow.parquet as pq

    from toolkit.report._columns import _time

    if "updatedAt" not in schema.names:
        return np.array([], dtype="int64")
    parts = []
    for f in files:
        pf = pq.ParquetFile(f)
        if "updatedAt" not in pf.schema_arrow.names:
            parts.append(np.full(pf.metadata.num_rows, np.iinfo("int64").min))
            continue
        col = pf.read(columns=["updatedAt"]).to_pandas()
        t = _time(col, "updatedAt").to_numpy(dtype="datetime64[ns]").view("int64")
        parts.append(t)  # NaT is int64's smallest: sorts first, as na_position="first"
    return np.concatenate(parts) if parts else np.array([], dtype="int64")


def partition(
    con: duckdb.DuckDBPyConnection,
    files: Mapping[str, Sequence[Path]],
    chunk_orders: int,
    folder: Path,
) -> Partition:
    """Split the set of ``files`` (per table of :data:`CHUNKED`; ``orders`` needed) into
    chunks of ``chunk_orders`` consecutive kept orders, written into ``folder`` (a new
    one): a folder of Parquet files per table and chunk (:func:`chunk_rows` names one,
    :func:`read_chunk` reads it in the input's order).

    An order id present more than once is kept at its latest ``updatedAt`` (else its last
    row), at that row's position, as ``deduplicate`` keeps it; a trade or quote goes with
    its order's chunk, one whose order is not in the set with the last chunk.

    Raises
    ------
    InvalidRequest
        A file damaged or not Parquet, or files of one table that do not fit together.
    """
    import duckdb
    import pyarrow as pa

    from toolkit.report._per_order import MAKER_FIELDS, ORDER_FIELDS, TRADE_FIELDS

    schemas: dict[str, pa.Schema] = {}
    folder.mkdir()
    try:
        schema = schemas["orders"] = _source(con, "orders", files["orders"], ORDER_FIELDS)
        has_id = "id" in schema.names
        updated = _updated_ns(files["orders"], schema)
        if len(updated):
            con.register(
                "updated",
                pa.table({"n": pa.array(np.arange(len(updated), dtype="int64")), "u": updated}),
            )
            u_join, u_col = f"LEFT JOIN updated u ON u.n = s.{ROW}", "u.u"
        else:
            u_join, u_col = "", "NULL::BIGINT"
        con.execute(
            f"CREATE TEMP TABLE keys AS SELECT s.{ROW} AS n, {_key(schema, 'id')} AS key, "
            f"{u_col} AS u FROM src_orders s {u_join}"
        )
        # an order id present more than once: its latest updatedAt, else its last row
        rank = (
            "row_number() OVER (PARTITION BY key ORDER BY u DESC NULLS LAST, n DESC)"
            if has_id
            else "1"
        )
        # without an id column no order is told from another: one chunk holds them all
        size = int(chunk_orders) if has_id else 2**62
        con.execute(
            f"CREATE TEMP TABLE kept AS SELECT n, key, "
            f"((row_number() OVER (ORDER BY n)) - 1) // {size} AS chunk "
            f"FROM (SELECT n, key, {rank} AS r FROM keys) WHERE r = 1"
        )
        kept = int(con.execute("SELECT count(*) FROM kept").fetchall()[0][0])
        chunks = max(1, -(-kept // size))
        duplicates = _duplicates(con) if has_id else pd.Series(dtype="int64")
        _table(
            con,
            folder,
            "orders",
            f"SELECT s.*, k.chunk AS {CHUNK} FROM src_orders s JOIN kept k ON k.n = s.{ROW}",
        )
        quote_rows, quote_counts = 0, dict[str, int]()
        for name in ("trades", "evaluated_tickers"):
            if not files.get(name):
                continue
            # a quote loaded twice is told by all its columns: they are all read
            wanted = (*TRADE_FIELDS, *MAKER_FIELDS) if name == "trades" else None
            schema = schemas[name] = _source(con, name, files[name], wanted)
            key = _key(schema, CHUNKED[name])
            # the order ids are unique among the kept orders: one chunk per trade or quote
            _table(
                con,
                folder,
                name,
                f"SELECT s.*, coalesce(k.chunk, {chunks - 1}) AS {CHUNK} FROM src_{name} s "
                f"LEFT JOIN kept k ON k.key = {key if has_id else 'NULL'}",
            )
            if name == "evaluated_tickers":
                quote_rows, quote_counts = _counts(con, schema)
    except duckdb.Error as exc:
        raise InvalidRequest(f"the set's files could not be read: {exc}") from None
    return Partition(folder, chunks, kept, duplicates, schemas, quote_rows, quote_counts)


def _duplicates(con: duckdb.DuckDBPyConnection) -> pd.Series:
    """orderId -> rows dropped, in the order ``deduplicate``'s value_counts gives them."""
    got = con.execute(
        "SELECT key, count(*) AS c, min(n) AS first FROM keys GROUP BY key "
        "HAVING count(*) > 1 ORDER BY first"
    ).fetchnumpy()
    if not len(got["key"]):
        return pd.Series(dtype="int64")
    # the ids of the duplicated rows in first-seen order, counted as deduplicate counts them
    ids = pd.Series(np.repeat(np.asarray(got["key"], dtype=object), got["c"]), dtype="str")
    return ids.rename("id").value_counts().sub(1).astype("int64")


def _counts(con: duckdb.DuckDBPyConnection, schema: pa.Schema) -> tuple[int, dict[str, int]]:
    """Rows of evaluated_tickers and values per column (for ``counted_quote_problems``)."""
    names = [n for n in schema.names]
    listed = ", ".join(f'count("{n}")' for n in names)
    got = con.execute(
        f"SELECT count(*){', ' + listed if listed else ''} FROM src_evaluated_tickers"
    ).fetchall()[0]
    return int(got[0]), {n: int(v) for n, v in zip(names, got[1:], strict=True)}


def _table(con: duckdb.DuckDBPyConnection, folder: Path, name: str, query: str) -> None:
    """The rows of ``query`` written as ``folder/<name>/__chunk=<i>/`` Parquet files, one
    folder per chunk (a chunk without rows: none), in no particular order: each row
    carries its input position (:func:`read_chunk` restores the order)."""
    con.execute(
        f"COPY ({query}) TO {_listed([folder / name])} "
        f"(FORMAT parquet, PARTITION_BY ({CHUNK}), COMPRESSION lz4_raw)"
    )


def chunk_rows(part: Partition, name: str, chunk: int) -> Path | pa.Table | None:
    """The rows of table ``name`` in ``chunk``: the folder of its files (for
    :func:`read_chunk`), an empty table of the columns as read when the chunk has no such
    rows, None when the set has no such table."""
    schema = part.schemas.get(name)
    if schema is None:
        return None
    path = part.folder / name / f"{CHUNK}={int(chunk)}"
    return path if path.is_dir() else schema.empty_table()


def read_chunk(path: Path) -> pa.Table:
    """A chunk's rows of one table (a folder :func:`partition` wrote) in input order,
    without the pass's own column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    if ROW in table.column_names:
        row = table.column(ROW).to_numpy()
        if (np.diff(row) < 0).any():  # the rows are most often in order already
            table = table.take(pa.array(np.argsort(row, kind="stable")))
        table = table.drop_columns([ROW])
    return table
