"""The portable query without an engine: each input brought to one shape (absent columns
NULL, times as BIGINT ns whatever the unit, Spark's integer nanoseconds as they are), time
columns that are no timestamps named, and the transpilation to Spark (backticks, unix
microseconds for DuckDB's epoch_ns, NULLs sorted as DuckDB sorts them, IGNORE NULLS kept)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from toolkit.errors import InvalidRequest
from toolkit.report._core import kinds
from toolkit.report._portable import (
    ORDER_COLUMNS,
    TICK_COLUMNS,
    Source,
    Sources,
    core_sql,
    staging,
    to_spark,
)

TICK_SCHEMA = {
    "symbol": pa.string(),
    "received_at": pa.timestamp("ns", tz="UTC"),
    "updated_at": pa.timestamp("ms", tz="UTC"),
    "bid": pa.float64(),
    "seq": pa.int64(),
}


def test_a_nanosecond_column_is_a_timestamp_on_duckdb_and_an_integer_on_spark() -> None:
    duck = kinds(TICK_SCHEMA, TICK_COLUMNS, "f.parquet")
    spark = kinds(TICK_SCHEMA, TICK_COLUMNS, "f.parquet", ns_as_long=True)
    assert duck["received_at"] == "timestamp" and spark["received_at"] == "ns"
    # a millisecond (or microsecond) timestamp is one on every engine
    assert duck["updated_at"] == spark["updated_at"] == "timestamp"
    micro = {**TICK_SCHEMA, "received_at": pa.timestamp("us", tz="UTC")}
    assert kinds(micro, TICK_COLUMNS, "f", ns_as_long=True)["received_at"] == "timestamp"
    sql = staging(Source("t", spark), TICK_COLUMNS)
    assert 'CAST("received_at" AS BIGINT) AS "received"' in sql
    assert 'epoch_ns("updated_at") AS "updated"' in sql
    # absent from the files: NULL of the column's type
    assert 'CAST(NULL AS DOUBLE) AS "ask"' in sql
    assert 'CAST(NULL AS VARCHAR) AS "connection_id"' in sql


@pytest.mark.parametrize(
    ("column", "dtype", "match"),
    [
        ("createdAt", pa.int64(), "column createdAt is int64, not a timestamp"),
        ("createdAt", pa.string(), "column createdAt is string, not a timestamp"),
        ("average", pa.string(), "column average is string, not a number"),
    ],
)
def test_a_column_of_the_wrong_type_is_named_with_its_file(
    column: str, dtype: pa.DataType, match: str
) -> None:
    with pytest.raises(InvalidRequest, match=f"orders.parquet: {match}"):
        kinds({"id": pa.int64(), column: dtype}, ORDER_COLUMNS, "x/orders.parquet")


def test_numeric_ids_are_text() -> None:
    found = kinds({"id": pa.int64()}, ORDER_COLUMNS, "o")
    assert 'CAST("id" AS VARCHAR) AS "id"' in staging(Source("o", found), ORDER_COLUMNS)


def test_the_spark_text_of_the_query() -> None:
    orders = Source("orders_file", {"id": "value", "fee.cost": "value", "createdAt": "timestamp"})
    ticks = Source("ticks_0", {"received_at": "ns", "updated_at": "timestamp"})
    sources = Sources(orders, None, None, [ticks], "gaps", (1, 2))
    duck = core_sql(sources, 60.0)
    spark = to_spark(duck)
    assert "epoch_ns" in duck and "EPOCH_NS" not in spark.upper()
    assert "UNIX_MICROS(`createdAt`) AS BIGINT) * 1000" in spark.replace("CAST(", "")
    assert "`markout_-60s_bp`" in spark and '"' not in spark
    # the window keeps the last ticker seen (IGNORE NULLS); under a max_quote_age the
    # ASOF may be a bucket join (integer division), never without one
    assert "IGNORE NULLS" in spark
    buckets = to_spark(core_sql(sources, 60.0, "buckets"))
    assert "DIV 60000000000" in buckets and "IGNORE NULLS" not in buckets
    assert "IGNORE NULLS" in to_spark(core_sql(sources, None, "buckets"))
    # a bucket is never narrower than a second (max_quote_age=0 divides by it)
    assert "// 1000000000" in core_sql(sources, 0.0, "buckets")
    # Spark sorts NULLs first ascending, DuckDB last: the transpiled order says which
    assert "NULLS LAST" in spark
    # max_quote_age in ns, exactly (a float of seconds rounded once)
    assert "<= 60000000000" in duck
    assert "<= 59999000000" in core_sql(sources, 59.999)
    assert "w.t - w.tick_t" not in core_sql(sources, None)
