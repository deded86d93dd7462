"""Spark (local mode) reads a recording as the recorder writes it: the Hive partitions typed
(``channel`` text, ``date`` a date), every timestamp a Spark timestamp (microseconds; the
nanoseconds of older versions were refused, PARQUET_TYPE_ILLEGAL), every row once, and a
compacted recording in one file per day. Skipped without pyspark or a Java runtime (the
``spark`` extra: ``pip install 'toolkit[spark]'`` and a JRE)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _tick_recording import HOUR, T0, write_tick_files

from toolkit.recording import compact_recording, read_recording
from toolkit.recording._files import write_rows
from toolkit.recording._rows import row_from_message

pyspark = pytest.importorskip("pyspark")
# a Spark session takes about a minute to start on a busy 2-core machine
pytestmark = pytest.mark.timeout(600)
if not (shutil.which("java") or os.environ.get("JAVA_HOME")):  # pragma: no cover
    pytest.skip("Spark needs a Java runtime", allow_module_level=True)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("toolkit-recording")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    # two days: ticker files around midnight, a session row, an order
    write_tick_files(tmp_path, T0 + 23 * HOUR, 12, 5, 120 * 10**9)
    message = {"channel": "watchorders", "message": {"id": "o1", "status": "OPEN", "updatedAt": 5}}
    order = row_from_message(message, received_at_ns=T0 + HOUR, connection_id="c1", seq=1)
    write_rows(tmp_path, [order], "order")
    return tmp_path


def test_spark_reads_a_recording_as_written(spark: Any, recording: Path) -> None:
    from pyspark.sql import types as T

    df = spark.read.parquet(str(recording))
    types = {f.name: f.dataType for f in df.schema.fields}
    assert isinstance(types["channel"], T.StringType)
    assert isinstance(types["date"], T.DateType)
    for column in ("received_at", "updated_at", "gap_start", "gap_end"):
        assert isinstance(types[column], T.TimestampType), (column, types[column])
    assert isinstance(types["seq"], T.LongType) and isinstance(types["bid"], T.DoubleType)
    expected = len(read_recording(recording))
    assert df.count() == expected == 12 * 5 + 2
    ticks = df.filter("channel = 'watchticker'")
    first = ticks.agg({"received_at": "min"}).collect()[0][0]
    assert first.replace(tzinfo=UTC) == datetime.fromtimestamp((T0 + 23 * HOUR) / 1e9, UTC)
    by_date = {r["date"].isoformat(): r["count"] for r in ticks.groupBy("date").count().collect()}
    assert by_date == {"2026-11-22": 30, "2026-11-23": 30}


def test_spark_reads_a_compacted_recording_in_one_file_a_day(spark: Any, recording: Path) -> None:
    before = spark.read.parquet(str(recording)).count()
    compact_recording(recording, clock_ns=lambda: T0 + 3 * 24 * HOUR)
    df = spark.read.parquet(str(recording))
    assert df.count() == before
    ticks = [f for f in df.inputFiles() if "channel=watchticker" in f]
    assert len(ticks) == 2  # one per day
