"""``DailyCompaction``: when a running recorder compacts its closed days (on a fake clock:
at once for what a previous run left, then once a day is over plus the grace, again later
when a write-ahead segment still holds a day open or a run failed), and each run as
crash-safe as ``compact_recording`` (same durability steps, a failed run leaves every row
once and the next finishes it)."""

from __future__ import annotations

import concurrent.futures
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from _tick_recording import HOUR, T0, content, write_tick_files

from toolkit.errors import InvalidRequest
from toolkit.recording import _compact, read_recording
from toolkit.recording._compact import GRACE_NS
from toolkit.recording._daily import RETRY_NS, DailyCompaction, check_compact

DAY = 24 * HOUR
MINUTE = 60 * 10**9
SECOND = 10**9


class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _files(root: Path, date: str) -> list[Path]:
    return sorted(root.glob(f"channel=watchticker/date={date}/*.parquet"))


@pytest.fixture
def two_days(tmp_path: Path) -> Path:
    # 60 s files of 5 rows: ten on 2026-11-21 and ten on 2026-11-22
    write_tick_files(tmp_path, T0 - DAY, 10, 5, 12 * SECOND)
    write_tick_files(tmp_path, T0, 10, 5, 12 * SECOND)
    return tmp_path


def _run(daily: DailyCompaction) -> bool:
    """Poke it; True when a run started (and wait for its end)."""
    future = daily.poke()
    if future is None:
        return False
    future.result(timeout=120)
    return True


def test_the_first_poke_runs_then_only_once_a_day_is_over_plus_the_grace() -> None:
    daily = DailyCompaction(Path("unused"), clock_ns=Clock(0))
    noon = T0 + 12 * HOUR
    assert daily.due(noon)  # the days a previous run left: at the start, at once
    daily.through = "2026-11-22"  # a run at noon closed every day before this one
    assert not daily.due(noon) and not daily.due(T0 + DAY - SECOND)
    assert not daily.due(T0 + DAY + GRACE_NS - SECOND)  # over, but late files may come
    assert daily.due(T0 + DAY + GRACE_NS)
    daily.next_try_ns = T0 + DAY + GRACE_NS + RETRY_NS  # a run came short
    assert not daily.due(T0 + DAY + GRACE_NS + SECOND)
    assert daily.due(T0 + DAY + GRACE_NS + RETRY_NS)
    # a run under way: none starts beside it
    daily._future = concurrent.futures.Future()
    assert not daily.due(T0 + 2 * DAY)
    daily._future.set_result(None)
    assert daily.due(T0 + 2 * DAY)


def test_a_closed_day_is_compacted_once_the_open_one_when_it_closes(two_days: Path) -> None:
    before = content(read_recording(two_days, columns="all").to_dict("records"))
    clock = Clock(T0 + DAY - MINUTE)  # 2026-11-22 23:59
    daily = DailyCompaction(two_days, clock_ns=clock)
    assert _run(daily)  # the start: the day before is over
    assert len(_files(two_days, "2026-11-21")) == 1 and len(_files(two_days, "2026-11-22")) == 10
    assert daily.through == "2026-11-22" and daily.partitions == 1
    clock.now = T0 + DAY + GRACE_NS - SECOND  # over, within the grace: nothing yet
    assert not _run(daily)
    clock.now = T0 + DAY + GRACE_NS
    assert _run(daily)
    assert len(_files(two_days, "2026-11-22")) == 1 and daily.partitions == 2
    assert content(read_recording(two_days, columns="all").to_dict("records")) == before
    assert not _run(daily)  # nothing more until the next day is over


def test_a_day_a_segment_may_still_write_is_tried_again_later(two_days: Path) -> None:
    clock = Clock(T0 + DAY + GRACE_NS + MINUTE)
    # a write-ahead segment opened before the grace ended, not converted yet
    wal = two_days / "_wal"
    wal.mkdir()
    segment = wal / f"{T0 + DAY + GRACE_NS - MINUTE:020d}-1-000001.wal"
    segment.write_bytes(b"")
    daily = DailyCompaction(two_days, clock_ns=clock)
    assert _run(daily)
    assert len(_files(two_days, "2026-11-22")) == 10  # left open: the segment may hold rows
    assert daily.through == "2026-11-22" and daily.next_try_ns == clock.now + RETRY_NS
    segment.unlink()  # converted
    assert not _run(daily)  # not before the retry
    clock.now += RETRY_NS
    assert _run(daily) and len(_files(two_days, "2026-11-22")) == 1


def test_a_failed_run_leaves_every_row_once_and_the_next_finishes_it(
    two_days: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    before = content(read_recording(two_days, columns="all").to_dict("records"))
    clock = Clock(T0 + DAY + GRACE_NS)

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_compact, "_delete", full)  # renamed into place, then the disk failed
    daily = DailyCompaction(two_days, clock_ns=clock)
    with caplog.at_level(logging.WARNING, "toolkit.recording"):
        assert _run(daily)  # never raised: the recording goes on
    assert "daily compaction failed" in caplog.text and isinstance(daily.error, OSError)
    assert content(read_recording(two_days, columns="all").to_dict("records")) == before
    monkeypatch.undo()
    assert not _run(daily)
    clock.now += RETRY_NS
    assert _run(daily)
    assert len(_files(two_days, "2026-11-21")) == len(_files(two_days, "2026-11-22")) == 1
    assert content(read_recording(two_days, columns="all").to_dict("records")) == before


def test_a_run_makes_each_file_durable_before_the_old_ones_go(
    two_days: Path, spy_durability: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = spy_durability(_compact, "_fsync_path")
    real_unlink = Path.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        steps.append(("unlink", self.name))
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    assert _run(DailyCompaction(two_days, clock_ns=Clock(T0 + DAY - MINUTE)))
    assert steps[0] == ("fsync", f".part-compact-{os.getpid()}.tmp")
    assert steps[1][0] == "replace" and "-compact-" in steps[1][1]
    assert steps[2] == ("fsync", "date=2026-11-21")
    assert [s[0] for s in steps[3:]] == ["unlink"] * 10 + ["fsync"]


def test_another_compaction_postpones_a_run_and_a_closed_one_starts_none(two_days: Path) -> None:
    clock = Clock(T0 + DAY + GRACE_NS)
    daily = DailyCompaction(two_days, clock_ns=clock)
    with _compact._locked(two_days):  # toolkit record compact, say
        assert _run(daily)
    assert daily.partitions == 0 and daily.next_try_ns == clock.now + RETRY_NS
    clock.now += RETRY_NS
    assert daily.close() is None  # the recorder stops: nothing runs after
    assert daily.poke() is None and len(_files(two_days, "2026-11-21")) == 10
    daily.open()  # started again
    assert _run(daily) and len(_files(two_days, "2026-11-21")) == 1
    assert not daily.due(clock.now)
    daily.close()
    daily.open()  # and again: files may have come meanwhile, its start runs at once
    assert daily.due(clock.now)


def test_a_stop_ends_a_run_after_its_partition(
    two_days: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    daily = DailyCompaction(two_days, clock_ns=Clock(T0 + DAY + GRACE_NS))
    real = _compact._merge

    def merge_then_stop(*args: Any) -> int:
        rows = real(*args)
        daily.close()  # the recorder stops while this partition is compacted
        return rows

    monkeypatch.setattr(_compact, "_merge", merge_then_stop)
    assert _run(daily)
    # that partition finished, the next day left whole, the day not marked done
    assert len(_files(two_days, "2026-11-21")) == 1 and len(_files(two_days, "2026-11-22")) == 10
    assert daily.through == "" and daily.poke() is None


def test_a_run_in_a_process_of_its_own_compacts_and_says_so(two_days: Path) -> None:
    # the recorder's way with its converter process: no GIL shared with the receiving
    before = content(read_recording(two_days, columns="all").to_dict("records"))
    clock = Clock(T0 + DAY - 5 * MINUTE)
    daily = DailyCompaction(two_days, clock_ns=clock, process=True)
    with _compact._locked(two_days):  # another compaction: the process says so
        assert _run(daily)
    assert daily.partitions == 0 and daily.next_try_ns == clock.now + RETRY_NS
    clock.now += RETRY_NS
    assert _run(daily)
    assert daily.partitions == 1 and daily.through == "2026-11-22" and daily.error is None
    assert len(_files(two_days, "2026-11-21")) == 1 and len(_files(two_days, "2026-11-22")) == 10
    assert content(read_recording(two_days, columns="all").to_dict("records")) == before


def test_no_process_starts_when_no_closed_day_has_work(
    two_days: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.recording import _daily

    started: list[object] = []
    real = _daily.subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(_daily.subprocess, "Popen", popen)
    clock = Clock(T0 + DAY - 5 * MINUTE)  # the day before is closed: work
    daily = DailyCompaction(two_days, clock_ns=clock, process=True)
    assert _run(daily) and len(started) == 1
    daily.open()  # a restart: the day before is one file now, the day is open
    assert _run(daily) and len(started) == 1 and daily.through == "2026-11-22"
    # a temporary a killed compaction left is work: swept
    leftover = two_days / "channel=watchticker" / "date=2026-11-21" / ".part-compact-1.tmp"
    leftover.write_bytes(b"")
    daily.open()
    assert _run(daily) and len(started) == 2 and not leftover.exists()


def test_compact_takes_daily_or_off_only() -> None:
    assert check_compact("daily") == "daily" and check_compact("off") == "off"
    with pytest.raises(InvalidRequest, match="compact must be 'daily' or 'off'; got 'weekly'"):
        check_compact("weekly")
