"""A data message with a lone surrogate escape (``\\ud800``: legal JSON, no UTF-8 text) in
a field the recorder extracts: that column is null and counted, ``raw`` keeps the message,
every other message of the segment is converted (on the Arrow path and the per-row path
alike), and a root left with such a segment opens again. A message that fails to convert
for any other reason is left out, never the segment: it is kept as ``.wal.corrupt``."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from _recordings import path_kind  # noqa: F401 (the fixture the tests mark)

from toolkit.profile import DEFAULT_PROFILE
from toolkit.recording import _conversion
from toolkit.recording._chunk import buffer_parts
from toolkit.recording._conversion import convert_segment
from toolkit.recording._raw import RawBuffer
from toolkit.recording._read import read_recording
from toolkit.recording._recorder import Recorder
from toolkit.recording._root import recover
from toolkit.recording._rows import profile_metadata, row_from_message, row_from_text
from toolkit.recording._wal import Row, Segment, profile_record
from toolkit.recording._writer import RecordingWriter
from toolkit.sim import Simulator

T0 = 1_763_000_000 * 10**9
SEC = 1_763_000_000
LONE = "\ud800"  # what json.loads makes of the escape


def _texts() -> list[str]:
    """Wire texts: good orders and tickers around orders and a ticker whose symbol, status
    or id ends in a lone surrogate (``json.dumps`` writes it as the escape ``\\ud800``)."""

    def order(oid: str, symbol: str = "BTC/BRL", status: str = "OPEN") -> str:
        body = {"id": oid, "symbol": symbol, "status": status, "updatedAt": SEC}
        return json.dumps({"channel": "watchorders", "message": body})

    def tick(symbol: str) -> str:
        body = {"symbol": symbol, "bid": "1", "ask": "2", "last": "1.5", "timestamp": SEC}
        return json.dumps({"channel": "watchticker", "message": body})

    texts = [
        order("o1"),
        tick("BTC/BRL"),
        order("o2", symbol="BTC/BRL" + LONE),
        order("o3", status="x" + LONE),
        order("o" + LONE),
        tick("ETH/BRL" + LONE),
        order("o5"),
        tick("ETH/BRL"),
    ]
    assert all(t.isascii() for t in texts)  # as the service sends it
    return texts


def _values(series: pd.Series) -> list[Any]:
    return [None if pd.isna(v) else v for v in series]


CHANNELS = ("watchorders", "watchticker")
EXPECTED_MISSES = {"invalid_text.symbol": 2, "invalid_text.status": 1, "invalid_text.order_id": 1}


def _check_root(root: Path, texts: list[str]) -> None:
    """Every message is in the recording, ``raw`` decodes to the message as sent, and the
    columns that held a lone surrogate are null."""
    orders, ticks = (
        frame[frame["connection_id"] == "c1"].sort_values("seq")  # not a live recorder's
        for frame in (read_recording(root, name, columns="all") for name in CHANNELS)
    )
    assert len(orders) == 5 and len(ticks) == 3
    sent = {seq: json.loads(text) for seq, text in enumerate(texts, 1)}
    for frame in (orders, ticks):
        for seq, raw in zip(frame["seq"], frame["raw"], strict=True):
            assert json.loads(raw) == sent[seq]  # the lone surrogate included
    assert _values(orders["order_id"]) == ["o1", "o2", "o3", None, "o5"]
    assert _values(orders["symbol"]) == ["BTC/BRL", None, "BTC/BRL", "BTC/BRL", "BTC/BRL"]
    assert _values(orders["status"]) == ["OPEN", "OPEN", None, "OPEN", "OPEN"]
    assert _values(ticks["symbol"]) == ["BTC/BRL", None, "ETH/BRL"]
    assert ticks["bid"].tolist() == [1.0, 1.0, 1.0]
    assert list(root.rglob("*.wal*")) == []  # converted, nothing kept


@pytest.mark.usefixtures("path_kind")
def test_raw_messages_with_a_lone_surrogate_convert_with_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    texts = _texts()
    with caplog.at_level(logging.WARNING, "toolkit.recording"), RecordingWriter(tmp_path) as writer:
        for seq, text in enumerate(texts, 1):
            writer.add_raw(text, T0 + seq, "c1", seq)
    _check_root(tmp_path, texts)
    assert writer.stats.misses == EXPECTED_MISSES
    session = read_recording(tmp_path, "_session")
    details = session.loc[session["kind"] == "mismatch", "detail"].tolist()
    assert any("have symbol text that is not valid" in d for d in details)
    assert any("their order_id is null" in r.getMessage() for r in caplog.records)


def test_rows_given_whole_with_a_lone_surrogate_convert_with_the_rest(tmp_path: Path) -> None:
    # typed events are written as rows whose strings hold the decoded lone surrogate, in
    # the extracted columns and in ``raw`` (the message encoded again)
    texts = _texts()
    rows = [
        row_from_message(json.loads(text), received_at_ns=T0 + seq, connection_id="c1", seq=seq)
        for seq, text in enumerate(texts, 1)
    ]
    assert rows[2].symbol == "BTC/BRL" + LONE and "BTC/BRL" + LONE in (rows[2].raw or "")
    with RecordingWriter(tmp_path) as writer:
        for row in rows:
            writer.add(row)
    _check_root(tmp_path, texts)
    assert writer.stats.misses == EXPECTED_MISSES


def test_a_channel_name_with_a_lone_surrogate_is_kept_under_its_escape(tmp_path: Path) -> None:
    text = json.dumps({"channel": "odd" + LONE, "message": {}})
    with RecordingWriter(tmp_path) as writer:
        writer.add(row_from_message(json.loads(text), received_at_ns=T0, connection_id="c1", seq=1))
    (path,) = tmp_path.glob("channel=odd*/date=*/*.parquet")
    assert path.parent.parent.name == "channel=odd%5Cud800"
    table = pq.read_table(path)
    assert table.column("channel").to_pylist() == ["odd\\ud800"]
    assert json.loads(table.column("raw")[0].as_py()) == json.loads(text)


def _stale_segment(root: Path, texts: list[str]) -> Path:
    """The segment a recorder killed mid-run left: raw chunk records and rows."""
    wal = root / "_wal"
    wal.mkdir(parents=True, exist_ok=True)
    seg = Segment(wal / "0001-1-000000.wal", profile_record(profile_metadata(DEFAULT_PROFILE)))
    buffer = RawBuffer()
    for seq, text in enumerate(texts[:4], 1):
        buffer.append(text, T0 + seq, "c1", seq)
    seg.append(buffer_parts(buffer))
    rows = [
        row_from_text(text, received_at_ns=T0 + seq, connection_id="c1", seq=seq)
        for seq, text in enumerate(texts[4:], 5)
    ]
    seg.write_rows(rows)
    seg.close()
    return seg.path


@pytest.mark.usefixtures("path_kind")
def test_a_root_left_with_such_a_segment_opens_again(tmp_path: Path) -> None:
    texts = _texts()
    _stale_segment(tmp_path, texts)
    writer = RecordingWriter(tmp_path)
    assert writer.open()  # the recovery converts it
    writer.close()
    _check_root(tmp_path, texts)
    assert writer.stats.misses == EXPECTED_MISSES


def test_a_recorder_starts_on_a_root_left_with_such_a_segment(
    sim: Simulator, tmp_path: Path
) -> None:
    texts = _texts()
    _stale_segment(tmp_path, texts)
    client = sim.client()
    try:
        recorder = Recorder(client, tmp_path, channels=["watchTicker:BTC/BRL"])
        stats = asyncio.run(recorder.run(duration=0.2))
    finally:
        client.close()
    assert stats.recovered >= 1 and stats.misses == EXPECTED_MISSES
    _check_root(tmp_path, texts)


def _failing_at(seq: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the conversion of the message ``seq`` fail, for what it holds, on every path."""
    real_table, real_raw = _conversion._table, _conversion.tables_from_raw

    def table(rows: list[Row], *args: Any) -> Any:
        if any(r.seq == seq for r in rows):
            raise ValueError(f"message {seq} is bad")
        return real_table(rows, *args)

    def tables(batches: list[Any], *args: Any) -> Any:
        if any(seq in b.column("seq").to_pylist() for b in batches):
            raise ValueError(f"message {seq} is bad")
        return real_raw(batches, *args)

    monkeypatch.setattr(_conversion, "_table", table)
    monkeypatch.setattr(_conversion, "tables_from_raw", tables)


@pytest.mark.parametrize("bad", [3, 6], ids=["in-a-raw-batch", "in-a-row-record"])
def test_a_message_that_fails_to_convert_leaves_the_segment_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, bad: int
) -> None:
    texts = _texts()
    path = _stale_segment(tmp_path, texts)
    _failing_at(bad, monkeypatch)
    with caplog.at_level(logging.WARNING, "toolkit.recording"):
        files = convert_segment(tmp_path, path)
    seqs = sorted(s for f in files for s in pq.read_table(f).column("seq").to_pylist())
    assert seqs == [s for s in range(1, 9) if s != bad]  # every other message
    kept = path.with_name(path.name + ".corrupt")
    assert kept.exists() and not path.exists()
    assert any(
        "has 1 messages that could not be converted (ValueError: message" in r.getMessage()
        for r in caplog.records
    )
    # the next start does not convert it again, and does not fail
    assert recover(tmp_path) == [] and kept.exists()


def test_a_failure_past_the_messages_keeps_the_whole_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = _stale_segment(tmp_path, _texts())

    def broken(*_: Any) -> None:
        raise TypeError("not a disk problem")

    monkeypatch.setattr(_conversion._PartFiles, "write", broken)
    with caplog.at_level(logging.WARNING, "toolkit.recording"):
        assert recover(tmp_path) == []  # no raise: the root can be recorded into
    assert path.with_name(path.name + ".corrupt").exists() and not path.exists()
    assert list(tmp_path.rglob("*.parquet*")) == []
    assert "could not be converted (TypeError: not a disk problem)" in caplog.text
