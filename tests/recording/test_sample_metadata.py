"""The shipped data/sample-recording is what docs/src/recording.md describes: every file's
metadata names the service profile its columns were extracted under, and a
``watchtickers`` row holds one whole message (its pairs in ``raw``, no ``symbol`` nor
prices) that ``read_recording`` splits into one row per pair."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from toolkit.recording._read import read_recording
from toolkit.recording._rows import profile_from_metadata

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample-recording"


def test_every_file_of_the_sample_names_its_profile() -> None:
    files = sorted(SAMPLE.glob("channel=*/date=*/*.parquet"))
    assert files
    for path in files:
        profile = profile_from_metadata(pq.read_schema(path).metadata)
        assert profile is not None and profile.name == "default", path


def test_watchtickers_columns_are_as_documented() -> None:
    glob = f"{SAMPLE}/channel=*/date=*/*.parquet"
    rows = duckdb.sql(
        "select count(*), count(symbol), count(bid), count(ask), count(last), "
        f"count(updated_at) from read_parquet('{glob}', hive_partitioning = true) "
        "where channel = 'watchtickers'"
    ).fetchall()[0]
    messages, symbols, bids, asks, lasts, times = rows
    assert messages > 0 and symbols == bids == asks == lasts == 0 and times == messages
    pairs = read_recording(SAMPLE, channel="watchtickers")
    assert len(pairs) > messages and pairs[["symbol", "bid", "ask", "last"]].notna().all().all()


def test_the_sample_is_compacted_with_microsecond_times_every_engine_reads() -> None:
    """One file per channel and day, times as Parquet TIMESTAMP(MICROS, UTC): Spark
    refuses nanoseconds (PARQUET_TYPE_ILLEGAL), as the sample once was."""
    import pyarrow as pa

    files = sorted(SAMPLE.glob("channel=*/date=*/*.parquet"))
    assert len(files) == len({p.parent for p in files})
    for path in files:
        for field in pq.read_schema(path):
            if pa.types.is_timestamp(field.type):
                assert (field.type.unit, field.type.tz) == ("us", "UTC"), (path, field)
