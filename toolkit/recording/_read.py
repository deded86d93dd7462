"""Read-back of a recording made by ``toolkit.Recorder``: a typed pandas DataFrame from the
Hive-partitioned Parquet dataset, with partition pruning on channel and date.

The same dataset reads as is in DuckDB (``read_parquet('ROOT/*/*/*.parquet',
hive_partitioning=true)``), Polars and ``pyarrow.dataset``, and in pandas with
``partitioning=None`` (docs/src/recording.md).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.errors import InvalidRequest
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.recording._badfiles import (
    BadFile,
    _all_files,
    bad_file_error,
    check_on_bad_file,
    damaged_file,
    recording_files,
    warn_skipped,
)
from toolkit.recording._layout import listed_again
from toolkit.recording._rows import (
    COLUMNS,
    SESSION_CHANNEL,
    profile_from_metadata,
    recording_schema,
)
from toolkit.recording._tickers import (
    REREAD_CHANNELS,
    TICKERS_CHANNEL,
    explode_tickers,
    reread_columns,
)

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
#: what ``columns=`` takes: names, or ``"all"`` for every column of the schema
ColumnsArg = Sequence[str] | str | None

# Every row has where and when it was received, and its raw message; beyond those, the
# columns each channel fills (the others stay null for it).
_COMMON = ("received_at", "connection_id", "seq", "channel")
CHANNEL_COLUMNS: dict[str, tuple[str, ...]] = {
    "watchorders": ("symbol", "order_id", "status", "updated_at"),
    "watchticker": ("symbol", "updated_at", "bid", "ask", "last"),
    "watchtickers": ("symbol", "updated_at", "bid", "ask", "last"),
    "watchbalance": ("updated_at",),
    SESSION_CHANNEL: ("kind", "detail", "gap_start", "gap_end"),
}


def channel_columns(channels: Iterable[str]) -> list[str]:
    """The columns the given channels use, in the schema's order: the common ones
    (``received_at``, ``connection_id``, ``seq``, ``channel``), each channel's own, and
    ``raw``. A channel this version does not know keeps just the common ones and ``raw``."""
    used = set(_COMMON) | {"raw"}
    for name in channels:
        used.update(CHANNEL_COLUMNS.get(name, ()))
    return [c for c in COLUMNS if c in used]


def _wanted_columns(columns: ColumnsArg, names: list[str] | None) -> list[str]:
    if isinstance(columns, str):
        if columns != "all":
            raise InvalidRequest(f'columns must be a list of names or "all"; got {columns!r}')
        return list(COLUMNS)
    if columns is not None:
        return list(columns)
    return list(COLUMNS) if names is None else channel_columns(names)


def _timestamp_ns(value: TimeLike) -> int:
    """Nanoseconds since the epoch (UTC) of a str, datetime, pandas Timestamp, or number
    (a number is read as seconds, milliseconds or nanoseconds by magnitude)."""
    if isinstance(value, bool):
        raise InvalidRequest("a time cannot be a bool")
    if isinstance(value, int | float):
        magnitude = abs(value)
        if magnitude < 1e11:
            return int(value * 1_000_000_000)
        if magnitude < 1e14:
            return int(value * 1_000_000)
        return int(value)
    import pandas as pd

    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"not a time: {value!r} ({exc})") from None
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
            raise InvalidRequest(f"empty channel name {name!r}")
        out.append(base)
    return out


def recording_root(root: object) -> Path:
    """``root`` as the folder of a recording (its ``channel=*/`` folders, or the ``_wal/``
    of a recorder that has not written one yet), or InvalidRequest naming it: an empty
    path, a folder that does not exist or one that is no recording would otherwise read
    as a recording without rows."""
    from toolkit.recording._root import WAL_DIR

    if not isinstance(root, str | os.PathLike) or not str(os.fspath(root)).strip():
        raise InvalidRequest(f"a recording needs a folder path, not {root!r}")
    path = Path(root)
    if not path.is_dir():
        raise InvalidRequest(f"no recording at {path} (a folder written by toolkit record)")
    if not (path / WAL_DIR).is_dir() and not any(p.is_dir() for p in path.glob("channel=*")):
        raise InvalidRequest(
            f"{path} is not a recording: it has no channel=*/ folders (nor {WAL_DIR}/); give "
            "the folder toolkit record --out (or tk.Recorder) wrote"
        )
    return path


def _files(root: str | os.PathLike[str]) -> list[str]:
    return _all_files(root)


#: the column pyarrow adds for the file a row was read from
FILE_COLUMN = "__filename"


def file_profile(path: str) -> ServiceProfile:
    """The profile one file's columns were extracted under, as its metadata names it;
    the default for a file without it."""
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_schema(path).metadata
    except (OSError, ValueError):
        return DEFAULT_PROFILE
    found = profile_from_metadata(metadata)
    return DEFAULT_PROFILE if found is None else found


def file_profiles(paths: Iterable[str]) -> dict[str, ServiceProfile]:
    """Each file's profile (``file_profile``), equal profiles shared as one object."""
    shared: dict[str, ServiceProfile] = {}
    out = {}
    for path in paths:
        profile = file_profile(path)
        out[path] = shared.setdefault(_profile_key(profile), profile)
    return out


def _profile_key(profile: ServiceProfile) -> str:
    return repr((profile.name, profile.payloads, profile.orders))


def recording_profile(root: str | os.PathLike[str]) -> ServiceProfile:
    """The profile a recording's columns were extracted under, as its files' metadata
    name it (payload mapping and time unit); the default for files without it. When the
    files disagree, the most recent one's, with a warning (``read_recording`` and
    ``replay`` read each file under its own). InvalidRequest when ``root`` is no
    recording."""
    import pyarrow.parquet as pq

    recording_root(root)
    found: dict[str, tuple[str, ServiceProfile]] = {}
    for path in _files(root):
        try:
            metadata = pq.read_schema(path).metadata
        except (OSError, ValueError):
            continue
        profile = profile_from_metadata(metadata)
        if profile is not None:
            key = _profile_key(profile)
            name = Path(path).name  # part-<clock ns>-...: time order
            if key not in found or found[key][0] < name:
                found[key] = (name, profile)
    if not found:
        return DEFAULT_PROFILE
    latest = max(found.values(), key=lambda item: item[0])[1]
    if len(found) > 1:
        _log.warning(
            "recording %s was written under %d different profiles; the latest is %r (its "
            "reads and replay take each file's own)",
            root,
            len(found),
            latest.name,
        )
    return latest


def _dataset(
    root: str | os.PathLike[str], files: Sequence[str] | None = None
) -> pads.Dataset | None:
    """The dataset of ``files`` (default: every file) of the recording at ``root``."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    path = Path(root)
    files = _files(root) if files is None else list(files)
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
    columns: ColumnsArg = None,
    dates: Sequence[str] | None = None,
    per_pair: bool | None = None,
    profile: ServiceProfile | None = None,
    on_bad_file: str = "raise",
) -> pa.Table:
    """The rows of a recording as an Arrow table sorted by (received_at, connection_id,
    seq); same filters as :func:`read_recording`, plus ``dates`` (``YYYY-MM-DD``
    partitions to read). ``per_pair``: one row per pair of each ``watchtickers`` message
    instead of one per message (as recorded); by default when ``channel`` names
    ``watchtickers``. Pairs are read under each file's own profile; ``profile`` overrides
    it, and the columns of the ticker and balance channels are then extracted again from
    ``raw`` under it. ``on_bad_file`` as in :func:`read_recording` (the files skipped are
    only warned about here)."""
    skipped: list[BadFile] = []
    table = read_table(
        root,
        channel,
        start=start,
        end=end,
        symbols=symbols,
        columns=columns,
        dates=dates,
        per_pair=per_pair,
        profile=profile,
        on_bad_file=on_bad_file,
        skipped=skipped,
    )
    warn_skipped(root, skipped, stacklevel=2)
    return table


def read_table(
    root: str | os.PathLike[str],
    channel: str | Iterable[str] | None = None,
    *,
    files: Sequence[str] | None = None,
    skipped: list[BadFile] | None = None,
    **kwargs: Any,
) -> pa.Table:
    """:func:`_read_table`; when it lists the files itself (no ``files``), listing them
    again if one is deleted before it is read (:func:`~toolkit.recording._layout.
    listed_again`: a compaction replaced it)."""
    if files is not None:
        return _read_table(root, channel, files=files, skipped=skipped, **kwargs)

    def read() -> tuple[pa.Table, list[BadFile]]:
        left_out: list[BadFile] = []
        return _read_table(root, channel, skipped=left_out, **kwargs), left_out

    table, left_out = listed_again(read)
    if skipped is not None:
        skipped.extend(left_out)
    return table


def _read_table(
    root: str | os.PathLike[str],
    channel: str | Iterable[str] | None = None,
    *,
    start: TimeLike | None = None,
    end: TimeLike | None = None,
    symbols: Sequence[str] | None = None,
    columns: ColumnsArg = None,
    dates: Sequence[str] | None = None,
    per_pair: bool | None = None,
    profile: ServiceProfile | None = None,
    with_file: bool = False,
    on_bad_file: str = "raise",
    skipped: list[BadFile] | None = None,
    files: Sequence[str] | None = None,
) -> pa.Table:
    """``read_recording_table``; ``with_file``: plus the ``__filename`` column, the file
    each row was read from (for its profile). The files read are checked first
    (``toolkit.recording._badfiles``): a damaged or foreign one raises InvalidRequest
    naming it, or with ``on_bad_file="skip"`` is left out and added to ``skipped``.
    ``files``: the files to read, checked already (default: those of the channels and
    dates asked for)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    recording_root(root)
    check_on_bad_file(on_bad_file)
    names = _channels(channel)
    wanted = _wanted_columns(columns, names)
    unknown = sorted(set(wanted) - set(COLUMNS))
    if unknown:
        raise InvalidRequest(f"unknown recording columns: {', '.join(unknown)}")
    # every argument is checked, also when there is nothing to read yet
    start_ns = None if start is None else _timestamp_ns(start)
    end_ns = None if end is None else _timestamp_ns(end)
    schema = recording_schema()
    left_out = skipped if skipped is not None else []
    if files is None:
        files, bad = recording_files(
            root,
            names,
            dates,
            first_date=None if start_ns is None else _date(start_ns),
            last_date=None if end_ns is None else _date(end_ns),
            start_ns=start_ns,
            end_ns=end_ns,
            on_bad_file=on_bad_file,
        )
        left_out.extend(bad)
    files = list(files)
    dataset = _dataset(root, files)
    if dataset is None:
        return _empty(schema, wanted, with_file)

    expr: Any = None

    def both(e: Any) -> None:
        nonlocal expr
        expr = e if expr is None else expr & e

    if per_pair is None:
        per_pair = names is not None and TICKERS_CHANNEL in names
    if names is not None:
        # directories hold the percent-encoded form of odd names; pyarrow decodes it
        both(ds.field("channel").isin(names))
    if dates is not None:
        both(ds.field("date").isin(list(dates)))
    if start_ns is not None:
        both(ds.field("date") >= _date(start_ns))
        both(ds.field("received_at") >= pc.scalar(start_ns).cast(schema.field("received_at").type))
    if end_ns is not None:
        both(ds.field("date") <= _date(end_ns))
        both(ds.field("received_at") < pc.scalar(end_ns).cast(schema.field("received_at").type))
    # under another profile, these channels' columns are read again from ``raw``
    reread = [*REREAD_CHANNELS, *(() if per_pair else (TICKERS_CHANNEL,))]
    wanted_symbols = None
    keep_symbols: Any = None
    if symbols is not None:
        # pairs match whatever their case: the service may send ``stETH/BRL`` (the
        # subscription confirmation itself names pairs in lowercase, spec 2.2)
        wanted_symbols = [s.strip().upper() for s in symbols]
        upper = pc.utf8_upper(pa.array([s.strip() for s in symbols], pa.string()))
        # session rows carry no symbol but say where data may be missing: keep them;
        # watchtickers rows get theirs per pair below
        keep = pc.utf8_upper(ds.field("symbol")).isin(upper) | (
            ds.field("channel") == SESSION_CHANNEL
        )
        if per_pair:
            keep = keep | (ds.field("channel") == TICKERS_CHANNEL)
        if profile is None:
            both(keep)
        else:  # the symbols recorded may be wrong: filtered once read again
            both(keep | ds.field("channel").isin(reread))
            keep_symbols = keep
    sort_keys = ["received_at", "connection_id", "seq"]
    extra = ["channel", "raw"] if per_pair or profile is not None else []
    if keep_symbols is not None:
        extra.append("symbol")
    if with_file or (per_pair and profile is None):
        extra.append(FILE_COLUMN)
    read_cols = list(dict.fromkeys([*wanted, *sort_keys, *extra]))
    while True:
        try:
            table = dataset.to_table(columns=read_cols, filter=expr)
            break
        except (OSError, ValueError) as exc:
            if isinstance(exc, OSError) and exc.errno is not None:
                raise  # the system's error (permission, I/O), not the file's
            # every footer read, a page did not: name the file
            found = damaged_file(files, read_cols)
            if found is None:
                raise
            if on_bad_file != "skip":
                raise bad_file_error(root, found) from exc
            left_out.append(found)
            files.remove(found.path)
            dataset = _dataset(root, files)
            if dataset is None:
                return _empty(schema, wanted, with_file)
    if profile is not None:
        table = reread_columns(table, profile, reread)
        if keep_symbols is not None:
            table = table.filter(keep_symbols)
    if per_pair:
        if profile is None:
            table = _explode_per_file(table, wanted_symbols)
        else:
            table = explode_tickers(table, profile, wanted_symbols)
    table = table.sort_by([(k, "ascending") for k in sort_keys])
    # files from an older writer could differ in nullability or order: cast to the schema
    out = table.select(wanted).cast(_select_schema(schema, wanted))
    return out.append_column(FILE_COLUMN, table.column(FILE_COLUMN)) if with_file else out


def _empty(schema: pa.Schema, wanted: Sequence[str], with_file: bool) -> pa.Table:
    import pyarrow as pa

    empty = schema.empty_table().select(list(wanted))
    return empty.append_column(FILE_COLUMN, pa.array([], pa.string())) if with_file else empty


def _explode_per_file(table: pa.Table, symbols: Sequence[str] | None) -> pa.Table:
    """``explode_tickers`` with each ``watchtickers`` row read under the profile of the
    file it came from (a root recorded under two profiles reads right)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    files = table.column(FILE_COLUMN)
    is_ts = pc.equal(table.column("channel"), TICKERS_CHANNEL)
    profiles = file_profiles(pc.unique(files.filter(is_ts)).to_pylist())
    groups: dict[int, tuple[ServiceProfile, list[str]]] = {}
    for path, profile in profiles.items():
        groups.setdefault(id(profile), (profile, []))[1].append(path)
    if len(groups) <= 1:
        only = next(iter(groups.values()))[0] if groups else DEFAULT_PROFILE
        return explode_tickers(table, only, symbols)
    parts = [table.filter(pc.invert(is_ts))]
    for profile, paths in groups.values():
        mine = pc.and_(is_ts, pc.is_in(files, value_set=pa.array(paths, pa.string())))
        parts.append(explode_tickers(table.filter(mine), profile, symbols))
    return pa.concat_tables(parts)


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
    columns: ColumnsArg = None,
    profile: ServiceProfile | None = None,
    on_bad_file: str = "raise",
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
    these pairs, matched whatever their case (``steth/brl`` finds the ``stETH/BRL`` the
    service sent), plus session rows.

    ``columns``: with a ``channel``, only the columns those channels use by default (the
    common ``received_at``, ``connection_id``, ``seq``, ``channel``, ``raw``, plus
    ``symbol``/``order_id``/``status``/``updated_at`` for ``watchorders``,
    ``symbol``/``updated_at``/``bid``/``ask``/``last`` for the ticker channels,
    ``updated_at`` for ``watchbalance``, ``kind``/``detail``/``gap_start``/``gap_end`` for
    ``_session``); without one, every column. ``"all"`` gives every column, a list of
    names exactly those.

    An empty result is an empty frame with its columns typed: ``received_at``/``gap_*``
    ``datetime64[ns, UTC]``, ``updated_at`` ``datetime64[ms, UTC]``, ``bid``/``ask``/
    ``last`` float64, ``seq`` int64, ``raw`` the JSON text of the message.

    Parameters
    ----------
    root : str or os.PathLike
        The recording's folder (``ROOT/channel=<name>/date=<YYYY-MM-DD>/*.parquet``).
    channel : str or iterable of str, optional
        Channel names (any case; ``"watchTicker:BTC/BRL"`` reads as ``watchticker``).
    start, end : str, datetime, pandas.Timestamp or number, optional
        Half-open window on ``received_at``.
    symbols : sequence of str, optional
        Pairs to keep, in any case (session rows are kept too).
    columns : list of str or "all", optional
        The columns to return; default: those the channels use.
    profile : ServiceProfile, optional
        Read the ticker and balance payloads under this profile instead of the
        recording's own: their columns (``symbol``, ``bid``, ``ask``, ``last``,
        ``updated_at``) are extracted again from ``raw``, e.g. after a recording whose
        ``payloads.*`` did not match the service. A mapped field still missing is warned
        about, naming its setting.
    on_bad_file : {"raise", "skip"}
        What a file of the channels and dates read does when it is no part of a
        recording (empty, truncated, not Parquet, another dataset's Parquet, or data
        that does not read): ``"raise"`` (default) stops with InvalidRequest naming it;
        ``"skip"`` reads the rest, warns once (how many, the first) and lists those left
        out in ``df.attrs["skipped_files"]`` (``{"path", "problem"}`` each).

    Returns
    -------
    pandas.DataFrame
        One row per message (per pair for ``watchtickers``), oldest first;
        ``attrs["skipped_files"]`` the files ``on_bad_file="skip"`` left out.

    Raises
    ------
    InvalidRequest
        ``root`` is empty, does not exist or is no recording (no ``channel=*/`` folders
        nor ``_wal/``); an unknown column name, or ``columns`` a string other than
        ``"all"``; a ``start``/``end`` that is no time; a damaged or foreign file
        (naming it and what is wrong with it), unless ``on_bad_file="skip"``. (A
        ``ValueError`` too.)

    Examples
    --------
    >>> ticks = tk.read_recording("data/recordings", channel="watchticker")  # doctest: +SKIP
    >>> ticks.columns.tolist()  # doctest: +SKIP
    ['received_at', 'connection_id', 'seq', 'channel', 'symbol', 'updated_at', 'bid', 'ask',
     'last', 'raw']
    >>> tk.read_recording("data/recordings", channel="watchticker", columns="all")  # doctest: +SKIP
    """
    skipped: list[BadFile] = []
    table = read_table(
        root,
        channel,
        start=start,
        end=end,
        symbols=symbols,
        columns=columns,
        profile=profile,
        on_bad_file=on_bad_file,
        skipped=skipped,
    )
    warn_skipped(root, skipped, stacklevel=2)
    df = table.to_pandas()
    df.attrs["skipped_files"] = [{"path": b.path, "problem": b.problem} for b in skipped]
    return df


def order_ids_in_recording(root: str | os.PathLike[str]) -> list[str]:
    """Every order id seen on ``watchorders`` in a recording, in order of first sight
    (for ``toolkit load --ids-from ROOT``)."""
    table = read_recording_table(root, "watchorders", columns=["order_id"], per_pair=False)
    ids = table.column("order_id").to_pylist()
    return [i for i in dict.fromkeys(ids) if i]
