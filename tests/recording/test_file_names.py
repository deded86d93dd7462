"""The files of a recording as engines read them and as reads find them: timestamps stored
in microseconds (UTC; Spark refuses nanoseconds), files of the old nanosecond unit still
read, a file named for its rows' time range, and a read or a replay of a window that lists
only the folders of its channels and dates and opens only the files of the window."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _tick_recording import HOUR, T0, tick_rows, write_tick_files

from toolkit.recording import _badfiles, _read
from toolkit.recording._files import write_rows
from toolkit.recording._layout import file_range, list_files
from toolkit.recording._read import read_recording
from toolkit.recording._replay import replay
from toolkit.recording._rows import recording_schema, row_from_message
from toolkit.recording._scan import scan_recording
from toolkit.stream._events import TickerEvent

MINUTE = 60 * 10**9


def _logical(path: Path, column: str) -> dict[str, Any]:
    import json

    schema = pq.ParquetFile(path).schema
    found = schema.column(schema.names.index(column)).logical_type.to_json()
    return json.loads(found)  # type: ignore[no-any-return]


def test_times_are_stored_in_microseconds_utc(tmp_path: Path) -> None:
    [path] = write_tick_files(tmp_path, T0 + 123_456_789, 1, 3, MINUTE)
    for column in ("received_at", "updated_at", "gap_start", "gap_end"):
        stored = _logical(path, column)
        assert stored["timeUnit"] == "microseconds" and stored["isAdjustedToUTC"], stored
    # read back as before: the same types, the sub-microsecond digits dropped
    df = read_recording(tmp_path, "watchticker")
    assert str(df["received_at"].dtype) == "datetime64[ns, UTC]"
    assert str(df["updated_at"].dtype) == "datetime64[ms, UTC]"
    assert df["received_at"].iloc[0].value == T0 + 123_456_000
    assert df["updated_at"].iloc[0].value == (T0 + 123_456_789) // 10**6 * 10**6


def test_a_file_of_the_old_nanosecond_unit_reads_beside_new_ones(tmp_path: Path) -> None:
    old = T0 + 7  # a nanosecond the new unit could not hold
    rows = tick_rows(old, 2, 1)
    schema = recording_schema()
    table = pa.Table.from_pylist([r._asdict() for r in rows])
    names = dict(zip(rows[0]._fields, schema.names, strict=True))
    table = table.rename_columns([names[n] for n in table.column_names])
    table = table.cast(schema.remove_metadata())
    folder = tmp_path / "channel=watchticker" / "date=2026-11-22"
    folder.mkdir(parents=True)
    pq.write_table(table, folder / "part-old.parquet")  # as older versions wrote it
    assert _logical(folder / "part-old.parquet", "received_at")["timeUnit"] == "nanoseconds"
    write_tick_files(tmp_path, T0 + HOUR, 1, 2, MINUTE)
    df = read_recording(tmp_path, "watchticker")
    assert df["received_at"].map(lambda t: t.value).tolist() == [
        old,
        old + 1,
        T0 + HOUR,
        T0 + HOUR + MINUTE,
    ]
    events = list(replay(tmp_path, channels="watchticker", end=T0 + HOUR))
    assert [e.received_at_ns for e in events] == [old, old + 1]
    lazy = scan_recording(tmp_path, "watchticker").to_table().sort_by("received_at")
    assert lazy.column("received_at").cast(pa.int64()).to_pylist()[:2] == [old, old + 1]


def test_a_file_is_named_for_its_rows_time_range(tmp_path: Path) -> None:
    [path] = write_tick_files(tmp_path, T0 + 1_500, 1, 3, MINUTE)
    assert file_range(path) == (T0 + 1_000, T0 + 2 * MINUTE + 1_999)
    assert file_range("part-old.parquet") is None


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every folder listed (``os.scandir``, which ``Path.glob`` uses too)."""
    seen: list[str] = []
    real = os.scandir

    def spy(path: Any = ".") -> Any:
        seen.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", spy)
    return seen


def _two_channels_three_days(root: Path) -> None:
    for day in range(3):
        start = T0 + day * 24 * HOUR
        write_tick_files(root, start, 2, 2, MINUTE)
        message = {"channel": "watchorders", "message": {"id": "o", "status": "OPEN"}}
        order = row_from_message(message, received_at_ns=start, connection_id="c1", seq=1)
        write_rows(root, [order], f"o{day}")


def test_a_read_lists_only_the_folders_of_its_channels_and_dates(
    tmp_path: Path, listed: list[str]
) -> None:
    _two_channels_three_days(tmp_path)
    listed.clear()
    df = read_recording(tmp_path, "watchticker", start=T0 + 24 * HOUR, end=T0 + 25 * HOUR)
    assert len(df) == 4
    folders = {Path(p).relative_to(tmp_path).as_posix() for p in listed if Path(p) != tmp_path}
    # the channel's folder (for its dates) and one date's folder; no other channel's
    assert folders == {"channel=watchticker", "channel=watchticker/date=2026-11-23"}


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file a read checks or reads (each is opened first by its check)."""
    seen: list[str] = []
    check = _badfiles.file_problem
    dataset = _read._dataset

    def spy_check(path: str) -> str | None:
        seen.append(Path(path).name)
        return check(path)

    def spy_dataset(root: Any, files: Any = None) -> Any:
        seen.extend(Path(f).name for f in files or ())
        return dataset(root, files)

    monkeypatch.setattr(_badfiles, "file_problem", spy_check)
    monkeypatch.setattr(_read, "_dataset", spy_dataset)
    return seen


def test_a_replay_window_opens_only_the_files_it_overlaps(
    tmp_path: Path, opened: list[str]
) -> None:
    # four hours of 60 s files (10 rows each): the hour from 02:00:30 is in 61 of them
    files = write_tick_files(tmp_path, T0, 4 * 60, 10, 6 * 10**9)
    assert len(files) == 4 * 60
    start, end = T0 + 2 * HOUR + 30 * 10**9, T0 + 3 * HOUR + 30 * 10**9
    events = list(replay(tmp_path, start=start, end=end))
    assert {type(e) for e in events} == {TickerEvent}
    assert [e.received_at_ns for e in events] == list(range(start, end, 6 * 10**9))
    wanted = {f.name for f in files[2 * 60 : 3 * 60 + 1]}
    assert set(opened) == wanted


def test_an_eager_read_of_a_window_opens_only_the_files_it_overlaps(
    tmp_path: Path, opened: list[str]
) -> None:
    files = write_tick_files(tmp_path, T0, 48, 10, 6 * 10**9)
    df = read_recording(tmp_path, "watchticker", start=T0 + 5 * MINUTE, end=T0 + 7 * MINUTE)
    assert len(df) == 20
    assert set(opened) == {f.name for f in files[5:7]}


def test_the_listing_never_opens_a_file_without_a_compacted_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tick_files(tmp_path, T0, 3, 2, MINUTE)

    def no_open(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a file was opened")

    monkeypatch.setattr(pq, "read_schema", no_open)
    assert len(list_files(tmp_path, ["watchticker"], start_ns=T0, end_ns=T0 + MINUTE)) == 1
    assert len(list_files(tmp_path)) == 4  # and the session row's


def test_a_segment_converted_again_leaves_one_file_whatever_named_the_first(
    tmp_path: Path,
) -> None:
    from toolkit.recording._writer import RecordingWriter

    text = '{"channel":"watchticker","message":{"symbol":"BTC/BRL","bid":"1","ask":"2"}}'
    writer = RecordingWriter(tmp_path)
    writer.open()
    for seq in range(1, 6):
        writer.add_raw(text, T0 + seq * 1000, "c1", seq)
    closed = writer.roll()
    assert closed is not None
    # converted once by an older version (a crash before the segment was deleted)
    folder = tmp_path / "channel=watchticker" / "date=2026-11-22"
    folder.mkdir(parents=True)
    legacy = folder / f"part-{closed.path.stem}.parquet"
    write_tick_files(tmp_path / "other", T0, 1, 5, 1000)
    [made] = (tmp_path / "other").glob("channel=watchticker/*/*.parquet")
    made.rename(legacy)
    writer.convert(closed)
    writer.close()
    [only] = folder.glob("*.parquet")
    assert file_range(only) == (T0 + 1000, T0 + 5999)
    assert read_recording(tmp_path, "watchticker")["seq"].tolist() == [1, 2, 3, 4, 5]
