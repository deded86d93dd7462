"""Tests of the recording writer: crash recovery (including kill -9 of a recording process
at random moments), the root's lock, bounded buffering with counted drops, rotation."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from toolkit.recording._read import read_recording
from toolkit.recording._rows import SESSION_CHANNEL, row_from_message, session_row
from toolkit.recording._wal import Row, encode_row
from toolkit.recording._writer import RecorderBusy, RecordingWriter, recover

T0 = 1_795_305_600 * 10**9
#: a microsecond: the unit of the recorded times
US = 1000


def _tick(seq: int, t: int | None = None) -> Row:
    msg = {
        "channel": "watchticker",
        "message": {"symbol": "BTC/BRL", "bid": "1.5", "ask": "2", "last": "1.7", "timestamp": 1},
    }
    return row_from_message(
        msg, received_at_ns=T0 + seq if t is None else t, connection_id="c1", seq=seq
    )


def _wal_files(root: Path) -> list[Path]:
    return sorted((root / "_wal").glob("*.wal"))


def test_close_converts_everything_and_leaves_no_segment(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path) as writer:
        for i in range(1, 101):
            writer.add(_tick(i))
        writer.flush()
        writer.add(_tick(101))  # still pending at close: close flushes it too
    assert _wal_files(tmp_path) == []
    assert read_recording(tmp_path)["seq"].tolist() == list(range(1, 102))
    assert writer.stats.messages == 101
    assert writer.stats.files == 1


def test_a_second_writer_on_the_same_root_is_refused(tmp_path: Path) -> None:
    first = RecordingWriter(tmp_path)
    first.open()
    try:
        with pytest.raises(RecorderBusy, match="another recorder"):
            RecordingWriter(tmp_path).open()
    finally:
        first.close()
    RecordingWriter(tmp_path).open()  # the lock went with the first writer's close


def test_segment_left_by_a_crash_is_recovered_on_open(tmp_path: Path) -> None:
    crashed = RecordingWriter(tmp_path)
    crashed.open()
    for i in range(1, 11):
        crashed.add(_tick(i))
    crashed.flush()
    crashed.add(_tick(11))  # never flushed: lost with the process
    segment = _wal_files(tmp_path)[0]
    # the crash tore the record being written
    with segment.open("ab") as f:
        f.write(encode_row(_tick(12))[:17])
    crashed._unlock()  # the dead process's lock goes with it

    writer = RecordingWriter(tmp_path)
    recovered = writer.open()
    assert len(recovered) == 1 and writer.stats.recovered == 1
    assert segment.exists() is False
    writer.close()
    assert read_recording(tmp_path)["seq"].tolist() == list(range(1, 11))


def test_open_without_converting_adopts_a_crash_s_segment_into_the_backlog(
    tmp_path: Path,
) -> None:
    """What a recorder opens with: nothing converted before it receives; the leftover is
    backlog, converted like any closed segment, its files counted as recovered."""
    crashed = RecordingWriter(tmp_path)
    crashed.open()
    for i in range(1, 6):
        crashed.add(_tick(i))
    crashed.flush()
    segment = _wal_files(tmp_path)[0]
    crashed._unlock()  # the dead process's lock goes with it

    writer = RecordingWriter(tmp_path)
    assert writer.open(convert_leftovers=False) == []
    assert [c.path for c in writer.adopted] == [segment] and segment.exists()
    assert writer.backlog_bytes() >= segment.stat().st_size
    assert writer.stats.recovered == 0
    writer.convert(writer.adopted[0])
    assert writer.stats.recovered == 1 and not segment.exists()
    writer.close()
    assert read_recording(tmp_path)["seq"].tolist() == list(range(1, 6))


def test_recovery_twice_does_not_duplicate_rows(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    writer = RecordingWriter(root)
    writer.open()
    for i in range(1, 6):
        writer.add(_tick(i))
    writer.flush()
    segment = _wal_files(root)[0]
    keep = tmp_path / "copy.wal"
    shutil.copy(segment, keep)
    writer._unlock()
    recover(root)  # converted, segment deleted ...
    shutil.copy(keep, segment)  # ... but say the crash came before the delete
    recover(root)
    assert read_recording(root)["seq"].tolist() == [1, 2, 3, 4, 5]


def test_stale_temporaries_are_removed_and_never_read(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path) as writer:
        writer.add(_tick(1))
    part_dir = next(tmp_path.glob("channel=watchticker/date=*"))
    stale = part_dir / ".part-x.parquet.tmp"
    stale.write_bytes(b"half a parquet file")
    assert read_recording(tmp_path)["seq"].tolist() == [1]
    RecordingWriter(tmp_path).open()
    assert not stale.exists()


# a whole ticker: one without a mapped field would add a ``mismatch`` session row
TEXT = (
    '{"channel":"watchticker","message":{"symbol":"BTC/BRL","bid":"1","ask":"2",'
    '"last":"1","timestamp":1}}'
)
SIZE = len(TEXT)


def test_full_backlog_drops_and_records_the_loss(tmp_path: Path) -> None:
    # the backlog is what is not in Parquet yet: closed segments, the open one, the chunk
    assert SIZE == 101
    limit = 2_000
    with RecordingWriter(tmp_path, max_backlog_bytes=limit, max_pending_rows=3) as writer:
        seq = 0
        while True:
            seq += 1
            if not writer.add_raw(TEXT, T0 + seq * US, "c1", seq):
                break
            assert writer.backlog_bytes() <= limit
        # dropped exactly when the message would have taken the backlog past its limit
        assert writer.backlog_bytes() + SIZE > limit
        first_drop = seq
        assert writer.stats.messages == first_drop - 1 and writer.stats.dropped == 1
        closed = writer.roll()  # closed, not converted: still backlog
        assert closed is not None and writer.stats.backlog_bytes >= closed.size
        assert not writer.add_raw(TEXT, T0 + (seq + 1) * US, "c1", seq + 1)
        writer.convert(closed)  # converted: room again
        assert writer.stats.backlog_bytes < limit
        assert writer.add_raw(TEXT, T0 + (seq + 2) * US, "c1", seq + 2)
        assert writer.stats.dropped == 2
    df = read_recording(tmp_path)
    drops = df[df["channel"] == SESSION_CHANNEL]
    assert drops["kind"].tolist() == ["dropped"]
    assert "2 messages dropped" in drops["detail"].iloc[0]
    assert drops["gap_start"].iloc[0].value == T0 + first_drop * US
    assert drops["gap_end"].iloc[0].value == T0 + (first_drop + 1) * US
    ticks = df[df["channel"] == "watchticker"]["seq"].tolist()
    assert ticks == [*range(1, first_drop), first_drop + 2]


def test_a_loss_still_open_at_close_is_recorded(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path, max_backlog_bytes=1_000, max_pending_rows=2) as writer:
        results = [writer.add_raw(TEXT, T0 + seq * US, "c1", seq) for seq in range(1, 30)]
        assert results[0] and not results[-1]
    drops = read_recording(tmp_path, SESSION_CHANNEL)
    assert drops["kind"].tolist() == ["dropped"]
    assert f"{results.count(False)} messages dropped" in drops["detail"].iloc[0]
    assert drops["gap_end"].iloc[0].value == T0 + 29 * US


def test_session_rows_are_kept_even_when_the_backlog_is_full(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path, max_backlog_bytes=100) as writer:
        big = row_from_message(
            {"channel": "watchorders", "message": {"id": "x", "pad": "a" * 600}},
            received_at_ns=T0,
            connection_id="c",
            seq=1,
        )
        assert not writer.add(big)
        assert writer.add(session_row("gap", received_at_ns=T0 + 1, gap_start_ns=T0))
        assert writer.stats.dropped == 1 and writer.stats.gaps == 1


@pytest.mark.parametrize(("max_rows", "max_bytes"), [(37, 10**9), (10_000, 9_000)])
def test_chunks_reach_the_segment_at_their_bounds_with_exact_counts(
    tmp_path: Path, max_rows: int, max_bytes: int
) -> None:
    from toolkit.recording._raw import read_segment_items

    per_chunk = min(max_rows, -(-max_bytes // SIZE))  # the byte bound: reached, not exceeded
    with RecordingWriter(tmp_path, max_pending_rows=max_rows, max_pending_bytes=max_bytes) as w:
        for seq in range(1, 301):
            assert w.add_raw(TEXT, T0 + seq, "c1", seq)
            # counts are exact at every moment, though the fast lane counts in bulk
            assert w.stats.messages == seq and w.stats.bytes == SIZE * seq
            assert w.pending <= per_chunk
        segment = next((tmp_path / "_wal").glob("*.wal"))
        w.flush_buffers()
        _, batches = read_segment_items(segment)
        # the full chunks, then the rest appended by the flush
        assert [b.num_rows for b in batches[:-1]] == [per_chunk] * (299 // per_chunk)
        assert sum(b.num_rows for b in batches) == 300
    df = read_recording(tmp_path)
    assert df["seq"].tolist() == list(range(1, 301))
    assert (df["raw"] == TEXT).all()


def test_a_new_connection_starts_a_new_chunk(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path) as writer:
        for seq in range(1, 4):
            writer.add_raw(TEXT, T0 + seq, "c1", seq)
        for seq in range(1, 3):
            writer.add_raw(TEXT, T0 + 10 + seq, "c2", seq)
    df = read_recording(tmp_path)
    assert list(zip(df["connection_id"], df["seq"], strict=True)) == [
        ("c1", 1),
        ("c1", 2),
        ("c1", 3),
        ("c2", 1),
        ("c2", 2),
    ]


def test_flush_fsyncs_the_segment_after_appending_the_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    synced: list[tuple[int, int]] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append((fd, os.fstat(fd).st_size))
        real(fd)

    with RecordingWriter(tmp_path) as writer:
        for seq in range(1, 6):
            writer.add_raw(TEXT, T0 + seq, "c1", seq)
        segment = next((tmp_path / "_wal").glob("*.wal"))
        monkeypatch.setattr(os, "fsync", spy)
        writer.flush()
        # the fsync came after the chunk reached the file, and only then are they durable
        assert synced and synced[-1][1] == segment.stat().st_size > 8
        assert writer.stats.flushed_rows == 5
        closed = writer.roll()  # a rolled segment is fsynced before it can be converted
        assert closed is not None and len(synced) == 2
        monkeypatch.setattr(os, "fsync", real)


def test_segments_roll_as_chunks_come_when_asked(tmp_path: Path) -> None:
    rolled: list[object] = []
    with RecordingWriter(tmp_path, rotate_rows=10, max_pending_rows=4) as writer:
        writer.on_roll = rolled.append
        for seq in range(1, 31):
            writer.add_raw(TEXT, T0 + seq, "c1", seq)
        assert len(rolled) == 2  # after 12 and 24 rows: chunks of 4
        writer.on_roll = None
        for closed, segment, count in rolled:  # type: ignore[misc]
            assert count == 12 and closed.path.exists()
            writer.close_segment(segment, count)
            writer.convert(closed)
    assert read_recording(tmp_path)["seq"].tolist() == list(range(1, 31))


def test_an_empty_root_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.errors import InvalidRequest

    monkeypatch.chdir(tmp_path)
    for root in ("", "  "):
        with pytest.raises(InvalidRequest, match="empty"):
            RecordingWriter(root)
    assert list(tmp_path.iterdir()) == []


def test_stats_start_time_is_wall_clock_utc() -> None:
    from datetime import UTC, datetime, timedelta

    stats = RecordingWriter("somewhere").stats
    assert stats.started_at.tzinfo is UTC
    assert abs(datetime.now(UTC) - stats.started_at) < timedelta(days=1)
    assert "messages 0" in stats.line()


def test_rotation_by_size_and_by_time(tmp_path: Path) -> None:
    writer = RecordingWriter(tmp_path, rotate_bytes=2000, rotate_interval=3600)
    writer.open()
    writer.add(_tick(1))
    writer.flush()
    assert not writer.rotation_due()
    for i in range(2, 30):
        writer.add(_tick(i))
    writer.flush()
    assert writer.rotation_due()
    files = writer.rotate()
    assert len(files) == 1 and pq.read_table(files[0]).num_rows == 29
    assert len(_wal_files(tmp_path)) == 1  # a fresh segment
    writer.rotate_interval = 0.0
    assert writer.rotation_due()
    writer.close()
    assert read_recording(tmp_path)["seq"].tolist() == list(range(1, 30))


def test_session_rows_count_gaps(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path) as writer:
        writer.add(
            session_row("gap", received_at_ns=T0, gap_start_ns=T0 - 5, gap_end_ns=T0, detail="x")
        )
        writer.add(session_row("connected", received_at_ns=T0 + 1))
    assert writer.stats.gaps == 1 and writer.stats.session_rows == 2
    assert writer.stats.messages == 0


# ------------------------------------------------------------ kill -9 at random moments

CHILD = textwrap.dedent(
    """
    import sys, time
    from toolkit.recording._rows import row_from_message
    from toolkit.recording._writer import RecordingWriter

    root, flush_s = sys.argv[1], float(sys.argv[2])
    writer = RecordingWriter(root, rotate_interval=0.15, rotate_bytes=60_000)
    writer.open()
    print("ready", flush=True)
    seq = 0
    next_flush = time.monotonic() + flush_s
    while True:
        seq += 1
        msg = {"channel": "watchorders",
               "message": {"id": f"o-{seq}", "status": "closed", "updatedAt": seq}}
        writer.add(row_from_message(msg, received_at_ns=time.time_ns(),
                                    connection_id="k", seq=seq))
        if seq % 20 == 0:
            time.sleep(0.0005)
        if time.monotonic() >= next_flush:
            writer.flush()
            print(f"durable {seq} {time.time_ns()}", flush=True)
            if writer.rotation_due():
                writer.rotate()
            next_flush = time.monotonic() + flush_s
    """
)


def test_kill_9_at_random_moments_loses_at_most_the_last_flush(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    root = tmp_path / "rec"
    rng = random.Random(20261122)
    flush_s = 0.05
    last_durable = 0
    for trial in range(10):
        child = subprocess.Popen(
            [sys.executable, str(script), str(root), str(flush_s)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        try:
            assert child.stdout.readline().strip() == "ready"
            # recovery of the previous trial's leftovers happened in open(): its rows
            # are in Parquet before this child writes anything
            if trial:
                assert read_recording(root)["seq"].max() >= last_durable
            wanted = rng.randint(1, 6)
            reported: list[int] = []
            while len(reported) < wanted:
                line = child.stdout.readline()
                assert line, "child died"
                reported.append(int(line.split()[1]))
            # land anywhere inside the next flush interval (mid-write, mid-rotation ...)
            deadline = time.monotonic() + rng.uniform(0, flush_s)
            while time.monotonic() < deadline:
                pass
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
            # what the child reported after the signal was sent also counts
            for line in child.stdout:
                reported.append(int(line.split()[1]))
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        last_durable = reported[-1]
        # every file on disk is complete at any moment, even right after the kill
        for path in root.rglob("*.parquet"):
            pq.read_table(path)
        # recovery: a new writer converts the dead one's segments
        writer = RecordingWriter(root)
        writer.open()
        writer.close()
        assert _wal_files(root) == []
        assert list(root.rglob("*.tmp")) == []
        df = read_recording(root, "watchorders")
        seqs = df[df["connection_id"] == "k"]["seq"]
        # each trial restarts seq at 1: this trial's rows are the last run of 1..n
        starts = [i for i, s in enumerate(seqs) if s == 1]
        assert len(starts) == trial + 1
        this_run = seqs.iloc[starts[-1] :].tolist()
        assert this_run == list(range(1, len(this_run) + 1)), "a hole in recovered data"
        assert this_run[-1] >= last_durable, (trial, this_run[-1], last_durable)


def test_a_roll_whose_own_append_rolls_first_hands_each_segment_over_once(
    tmp_path: Path,
) -> None:
    rolled: list[tuple[object, object, int]] = []
    writer = RecordingWriter(tmp_path, rotate_bytes=300, max_pending_rows=1_000)
    writer.open()
    writer.on_roll = rolled.append
    for seq in range(1, 6):
        writer.add_raw(TEXT, T0 + seq, "c1", seq)  # in the chunk: not appended yet
    outer = writer.roll_unsynced()  # its append passes rotate_bytes, which rolls first
    assert outer is not None and len(rolled) == 1
    handed = [rolled[0], outer]
    paths = [closed.path for closed, _, _ in handed]  # type: ignore[attr-defined]
    assert len(set(paths)) == 2
    writer.on_roll = None
    for closed, segment, count in handed:
        writer.close_segment(segment, count)  # type: ignore[arg-type]
        writer.convert(closed)  # type: ignore[arg-type]
    assert writer.backlog_bytes() == writer._segment.size  # type: ignore[union-attr]
    writer.close()
    assert read_recording(tmp_path)["seq"].tolist() == [1, 2, 3, 4, 5]
