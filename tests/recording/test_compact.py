"""``compact_recording``: a closed day's many small files merged into few large ones,
without losing or duplicating a row (content equality), idempotent, crash-safe (each file
fsynced before its rename, the folder after, the old files deleted only then), and readers
that see the old files or the new, never both; open days are left alone."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _tick_recording import HOUR, T0, content, tick_rows, write_tick_files

from toolkit.errors import InvalidRequest
from toolkit.profile import load_profile
from toolkit.recording import _compact, _layout, compact_recording, read_recording, replay
from toolkit.recording._files import write_rows
from toolkit.recording._rows import row_from_message
from toolkit.recording._scan import scan_recording

DAY = 24 * HOUR
LATER = T0 + 3 * DAY  # "now": the two days recorded are over
MINUTE = 60 * 10**9
TICKS = 60 * 5
ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")


def _now() -> int:
    return LATER


def _files(root: Path) -> list[Path]:
    return sorted(root.glob("channel=*/date=*/*.parquet"))


def _everything(root: Path) -> list[str]:
    df = read_recording(root, columns="all")
    return content(df.to_dict("records"))


@pytest.fixture
def two_days(tmp_path: Path) -> Path:
    # 60 s files of 5 rows each from 23:30 to 00:30, a session row, orders on both days
    write_tick_files(tmp_path, T0 + 23 * HOUR + 30 * MINUTE, 60, 5, 12 * 10**9)
    for day in range(2):
        message = {"channel": "watchorders", "message": {"id": f"o{day}", "status": "OPEN"}}
        for n in range(3):
            order = row_from_message(
                message, received_at_ns=T0 + day * DAY + n * MINUTE, connection_id="c", seq=n
            )
            write_rows(tmp_path, [order], f"{T0 + day * DAY + n * MINUTE:020d}-2-{n:06d}")
    return tmp_path


def test_a_closed_day_is_merged_with_every_row_once(two_days: Path) -> None:
    before = _everything(two_days)
    count = len(_files(two_days))
    stats = compact_recording(two_days, clock_ns=_now)
    after = _files(two_days)
    # the session's one file stays as it is
    assert stats.partitions == 4 and stats.files_before == count - 1
    assert stats.files_after == 4 and len(after) == 5
    assert stats.rows == len(before) - 1  # all but the session row
    assert _everything(two_days) == before
    # each compacted file names its rows' range, and holds its time order
    for path in after:
        first, last = _layout.file_range(path) or (0, 0)
        read = pq.read_table(path, columns=["received_at"]).column(0)
        times = read.cast(pa.timestamp("ns", tz="UTC")).cast(pa.int64())
        assert first <= times[0].as_py() and times[-1].as_py() <= last
    # what engines see: same rows through the lazy scan and replay
    assert scan_recording(two_days, "watchticker").count_rows() == TICKS
    assert len(list(replay(two_days, channels="watchticker"))) == TICKS


def test_compacting_again_changes_nothing(two_days: Path) -> None:
    compact_recording(two_days, clock_ns=_now)
    files = _files(two_days)
    stats = compact_recording(two_days, clock_ns=_now)
    assert stats.partitions == 0 and _files(two_days) == files


def test_max_rows_cuts_between_files_never_inside_one(two_days: Path) -> None:
    before = _everything(two_days)
    stats = compact_recording(two_days, "watchticker", max_rows=50, clock_ns=_now)
    ticks = sorted(two_days.glob("channel=watchticker/date=*/*.parquet"))
    assert [pq.read_metadata(p).num_rows for p in ticks] == [50] * 6
    assert stats.files_after == 6 and _everything(two_days) == before
    # files of half max_rows or more stay whole on the next run
    assert compact_recording(two_days, max_rows=50, clock_ns=_now).partitions == 2  # orders


def test_an_open_day_and_a_day_a_segment_may_still_write_are_left_alone(two_days: Path) -> None:
    files = _files(two_days)
    # "now" is the second day: only the first is over
    stats = compact_recording(two_days, clock_ns=lambda: T0 + DAY + HOUR)
    assert stats.partitions == 2  # watchticker and watchorders of the first day
    assert all(p in _files(two_days) for p in files if "date=2026-11-23" in str(p))
    # a write-ahead segment opened before the end of the second day: it may hold its rows
    wal = two_days / "_wal"
    wal.mkdir(exist_ok=True)
    (wal / f"{T0 + 2 * DAY - MINUTE:020d}-1-000001.wal").write_bytes(b"")
    assert compact_recording(two_days, clock_ns=_now).partitions == 0
    (wal / f"{T0 + 2 * DAY - MINUTE:020d}-1-000001.wal").unlink()
    assert compact_recording(two_days, clock_ns=_now).partitions == 2


def test_each_file_is_durable_before_the_old_ones_go(
    two_days: Path, spy_durability: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = spy_durability(_compact, "_fsync_path")
    real_unlink = Path.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        steps.append(("unlink", self.name))
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    compact_recording(two_days, "watchorders", clock_ns=_now)
    folder = [i for i, step in enumerate(steps) if step == ("fsync", "date=2026-11-22")]
    day = steps[: folder[1] + 1]  # the first day's: its three files into one
    assert day[0] == ("fsync", f".part-compact-{os.getpid()}.tmp")
    assert day[1][0] == "replace" and "-compact-" in day[1][1]
    assert day[2] == ("fsync", "date=2026-11-22")
    assert [s[0] for s in day[3:]] == ["unlink"] * 3 + ["fsync"]


@pytest.mark.parametrize("fails", ["replace", "delete"])
def test_a_crash_mid_way_loses_and_doubles_nothing(
    two_days: Path, monkeypatch: pytest.MonkeyPatch, fails: str
) -> None:
    before = _everything(two_days)

    class Crash(BaseException):
        pass

    def crash(*args: Any, **kwargs: Any) -> None:
        raise Crash

    if fails == "replace":
        monkeypatch.setattr(_compact.os, "replace", crash)
    else:  # renamed into place, then killed before deleting what it replaces
        monkeypatch.setattr(_compact, "_delete", crash)
    with pytest.raises(Crash):
        compact_recording(two_days, "watchticker", clock_ns=_now)
    monkeypatch.undo()
    # the toolkit's readers: every row once, old files or new
    assert _everything(two_days) == before
    assert len(list(replay(two_days, channels="watchticker"))) == TICKS
    compact_recording(two_days, clock_ns=_now)  # the next run finishes it
    assert _everything(two_days) == before and len(_files(two_days)) == 5
    assert not list(two_days.rglob(".part-*"))


def test_a_read_listed_before_a_compaction_lists_again(
    two_days: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.recording import _badfiles

    before = read_recording(two_days, "watchticker")
    real = _badfiles.list_files
    ran: list[int] = []

    def list_then_compact(*args: Any, **kwargs: Any) -> list[str]:
        found = real(*args, **kwargs)
        if not ran:  # the files listed are replaced before they are read
            ran.append(compact_recording(two_days, clock_ns=_now).partitions)
        return found

    monkeypatch.setattr(_badfiles, "list_files", list_then_compact)
    after = read_recording(two_days, "watchticker")
    assert ran == [4]
    assert after.equals(before)


def test_files_of_another_profile_stay_apart_and_old_unit_files_are_converted(
    tmp_path: Path,
) -> None:
    from toolkit.recording._files import write_parts
    from toolkit.recording._rows import profile_metadata, recording_schema

    write_tick_files(tmp_path, T0, 4, 5, MINUTE)
    # between the second and the third file: a file recorded under another profile
    alt = tick_rows(T0 + 9 * MINUTE, 3, 10**9, seq0=100)
    mid = f"{T0 + 9 * MINUTE:020d}-9-000000"
    write_parts(tmp_path, {("watchticker", T0 // DAY): [alt]}, mid, metadata=profile_metadata(ALT))
    # first of all: a file of an older version (nanoseconds, no range in its name)
    rows = tick_rows(T0 - MINUTE, 2, 1000, seq0=200)
    table = pa.Table.from_pylist([r._asdict() for r in rows])
    table = table.rename_columns(recording_schema().names).cast(recording_schema())
    old = tmp_path / "channel=watchticker" / "date=2026-11-22" / "part-0.parquet"
    pq.write_table(table, old)
    before = _everything(tmp_path)
    stats = compact_recording(tmp_path, "watchticker", clock_ns=_now)
    assert _everything(tmp_path) == before
    ticks = sorted(tmp_path.glob("channel=watchticker/date=*/*.parquet"))
    profiles = [(pq.read_schema(p).metadata or {}).get(b"toolkit.profile") for p in ticks]
    # the old file and the two before the other profile's, that one, the two after it
    assert stats.files_after == len(ticks) == 3 and profiles == [None, b"alt", None]
    for path in ticks:  # every file now in the unit Spark reads
        unit = json.loads(pq.ParquetFile(path).schema.column(0).logical_type.to_json())
        assert unit["timeUnit"] == "microseconds"


def test_bad_arguments_and_a_second_compaction_are_refused(two_days: Path) -> None:
    with pytest.raises(InvalidRequest, match="max_rows"):
        compact_recording(two_days, max_rows=0)
    with pytest.raises(InvalidRequest, match="no recording"):
        compact_recording(two_days / "nope")
    with _compact._locked(two_days), pytest.raises(InvalidRequest, match="another compaction"):
        compact_recording(two_days, clock_ns=_now)


def test_a_replay_under_way_reads_the_compacted_files_of_its_next_days(two_days: Path) -> None:
    before = [e.received_at_ns for e in replay(two_days, channels="watchticker")]
    events = iter(replay(two_days, channels="watchticker"))
    got = [next(events).received_at_ns]  # the first day is read, the second only listed
    compact_recording(two_days, clock_ns=_now)
    got.extend(e.received_at_ns for e in events)
    assert got == before and len(got) == TICKS
