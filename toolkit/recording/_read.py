"""Read-back of a recording made by ``toolkit.Recorder``: a typed pandas DataFrame from the
Hive-partitioned Parquet dataset, with partition pruning on channel and date.

The same dataset reads as is in DuckDB (``read_parquet('ROOT/*/*/*.parquet',
hive_partitioning=true)``), Polars and Spark.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.recording._rows import (
    COLUMNS,
    SESSION_CHANNEL,
    profile_from_metadata,
    recording_schema,
)
from toolkit.recording._tickers import TICKERS_CHANNEL, explode_tickers

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa
    import pyarrow.dataset as pads

__all__ = [
    "order_ids_in_recording",
    "read_recording",
    "read_recording_table",
    "recording_profile",
]

_log = logging.getLogger("toolkit.recording")

TimeLike = str | int | float | datetime | Any


def _timestamp_ns(value: TimeLike) -> int:
    """Nanoseconds since the epoch (UTC) of a str, datetime, pandas Timestamp, or number
    (a number is read as seconds, milliseconds or nanoseconds by magnitude)."""
    if isinstance(value, bool):
        raise TypeError("a time cannot be a bool")
    if isinstance(value, int | float):
        magnitude = abs(value)
        if magnitude < 1e11:
            return int(value * 1_000_000_000)
        if magnitude < 1e14:
            return int(value * 1_000_000)
        return int(value)
    import pandas as pd

    ts = pd.Timestamp(value)
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return int(ts.tz_convert("UTC").value)


def _date(ns: int) -> str:
    return datetime.fromtimestamp(ns // 1_000_000_000, UTC).strftime("%Y-%m-%d")


def _channels(channel: str | Iterable[str] | None) -> list[str] | None:
    if channel is None:
        return None
    names = [channel] if isinstance(channel, str) else list(channel)
    out = []
    for name in names:
        # "watchTicker:BTC/BRL" names the channel; the symbol is for ``symbols``
        base = name.strip().partition(":")[0].lower()
        if not base:
            raise ValueError(f"empty channel name {name!r}")
        out.append(base)
    return out


def _files(root: str | os.PathLike[str]) -> list[str]:
    # only the dataset's own files: a README or a live recorder's temporaries beside
    # them are not data
    return sorted(str(f) for f in Path(root).glob("channel=*/date=*/*.parquet"))


def recording_profile(root: str | os.PathLike[str]) -> ServiceProfile:
    """The profile a recording's columns were extracted under, as its files' metadata
    name it (payload mapping and time unit); the default for files without it. When the
    files disagree, the most recent one's, with a warning."""
    import pyarrow.parquet as pq

    found: dict[str, tuple[str, ServiceProfile]] = {}
    for path in _files(root):
        try:
            metadata = pq.read_schema(path).metadata
        except (OSError, ValueError):
            continue
        profile = profile_from_metadata(metadata)
        if profile is not None:
            key = repr((profile.name, profile.payloads, profile.orders))
            name = Path(path).name  # part-<clock ns>-...: time order
            if key not in found or found[key][0] < name:
                found[key] = (name, profile)
    if not found:
        return DEFAULT_PROFILE
    latest = max(found.values(), key=lambda item: item[0])[1]
    if len(found) > 1:
        _log.warning(
            "recording %s was written under %d different profiles; reading it under the "
            "latest (%r)",
            root,
            len(found),
            latest.name,
        )
    return latest


def _dataset(root: str | os.PathLike[str]) -> pads.Dataset | None:
    import pyarrow as pa
    import pyarrow.dataset as ds

    path = Path(root)
    files = _files(root)
    if not files:
        return None
    partitioning = ds.partitioning(
        pa.schema([pa.field("channel", pa.string()), pa.field("date", pa.string())]),
        flavor="hive",
    )
    schema = recording_schema().append(pa.field("date", pa.string()))
    return ds.dataset(
        files,
        format="parquet",
        partitioning=partitioning,
        partition_base_dir=str(path),
        schema=schema,
    )


def read_recording_table(
    root: str | os.PathLike[str],
    channel: str | Iterable[str] | None = None,
    *,
    start: TimeLike | None = None,
    end: TimeLike | None = None,
    symbols: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    dates: Sequence[str] | None = None,
    per_pair: bool | None = None,
    profile: ServiceProfile | None = None,
) -> pa.Table:
    """The rows of a recording as an Arrow table sorted by (received_at, connection_id,
    seq); same filters as :func:`read_recording`, plus ``dates`` (``YYYY-MM-DD``
    partitions to read). ``per_pair``: one row per pair of each ``watchtickers`` message
    instead of one per message (as recorded); by default when ``channel`` names
    ``watchtickers``."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    wanted = list(columns) if columns is not None else list(COLUMNS)
    unknown = sorted(set(wanted) - set(COLUMNS))
    if unknown:
        raise ValueError(f"unknown recording columns: {', '.join(unknown)}")
    schema = recording_schema()
    dataset = _dataset(root)
    if dataset is None:
        return schema.empty_table().select(wanted)

    expr: Any = None

    def both(e: Any) -> None:
        nonlocal expr
        expr = e if expr is None else expr & e

    names = _channels(channel)
    if per_pair is None:
        per_pair = names is not None and TICKERS_CHANNEL in names
    if names is not None:
        # directories hold the percent-encoded form of odd names; pyarrow decodes it
        both(ds.field("channel").isin(names))
    if dates is not None:
        both(ds.field("date").isin(list(dates)))
    if start is not None:
        start_ns = _timestamp_ns(start)
        both(ds.field("date") >= _date(start_ns))
        both(ds.field("received_at") >= pc.scalar(start_ns).cast(schema.field("received_at").type))
    if end is not None:
        end_ns = _timestamp_ns(end)
        both(ds.field("date") <= _date(end_ns))
        both(ds.field("received_at") < pc.scalar(end_ns).cast(schema.field("received_at").type))
    wanted_symbols = None
    if symbols is not None:
        wanted_symbols = [s.strip().upper() for s in symbols]
        # session rows carry no symbol but say where data may be missing: keep them;
        # watchtickers rows get theirs per pair below
        keep = ds.field("symbol").isin(wanted_symbols) | (ds.field("channel") == SESSION_CHANNEL)
        if per_pair:
            keep = keep | (ds.field("channel") == TICKERS_CHANNEL)
        both(keep)
    sort_keys = ["received_at", "connection_id", "seq"]
    extra = ["channel", "raw"] if per_pair else []
    read_cols = list(dict.fromkeys([*wanted, *sort_keys, *extra]))
    table = dataset.to_table(columns=read_cols, filter=expr)
    if per_pair:
        if profile is None:
            profile = recording_profile(root)
        table = explode_tickers(table, profile, wanted_symbols)
    table = table.sort_by([(k, "ascending") for k in sort_keys])
    # files from an older writer could differ in nullability or order: cast to the schema
    return table.select(wanted).cast(_select_schema(schema, wanted))


def _select_schema(schema: pa.Schema, names: Sequence[str]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([schema.field(n) for n in names])


def read_recording(
    root: str | os.PathLike[str],
    channel: str | Iterable[str] | None = None,
    *,
    start: TimeLike | None = None,
    end: TimeLike | None = None,
    symbols: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    profile: ServiceProfile | None = None,
) -> pd.DataFrame:
    """A recording as a typed DataFrame, sorted by (received_at, connection_id, seq).

    When ``channel`` names ``watchtickers``, each of its messages gives one row per pair
    (``symbol``, ``bid``, ``ask``, ``last``, ``updated_at`` of that pair; ``raw``, ``seq``
    the whole message's), read where the profile the recording was made under says (its
    files' metadata; ``profile`` overrides). Read without ``channel``, every message is
    one row, as recorded.

    ``channel``: one name or several, as in data messages (``"watchticker"``, case-
    insensitive; ``"_session"`` for connects, disconnects, subscriptions, gaps and drops).
    ``start``/``end``: a half-open window on ``received_at`` (str, datetime, Timestamp or
    Unix number); only the date partitions it spans are read. ``symbols``: keep rows of
    these symbols (plus session rows). An empty result is an empty frame with every
    column typed: ``received_at``/``gap_*`` ``datetime64[ns, UTC]``, ``updated_at``
    ``datetime64[ms, UTC]``, ``bid``/``ask``/``last`` float64, ``seq`` int64, ``raw`` the
    JSON text of the message.
    """
    table = read_recording_table(
        root, channel, start=start, end=end, symbols=symbols, columns=columns, profile=profile
    )
    return table.to_pandas()


def order_ids_in_recording(root: str | os.PathLike[str]) -> list[str]:
    """Every order id seen on ``watchorders`` in a recording, in order of first sight
    (for ``toolkit load --ids-from ROOT``)."""
    table = read_recording_table(root, "watchorders", columns=["order_id"], per_pair=False)
    ids = table.column("order_id").to_pylist()
    return [i for i in dict.fromkeys(ids) if i]
