"""Tests of read-back: typed frames, partition pruning by channel and date, filters,
DuckDB reading the same dataset, and a dataset that stays readable when messages change."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

from toolkit.errors import InvalidRequest
from toolkit.recording._read import order_ids_in_recording, read_recording
from toolkit.recording._rows import COLUMNS, partition_dir, row_from_message, session_row
from toolkit.recording._wal import Row
from toolkit.recording._writer import RecordingWriter

DAY_NS = 86_400 * 10**9
# 2026-11-21T23:59:59Z: a recording that crosses midnight
T0 = 1_795_305_599 * 10**9


def _ticker(symbol: str, bid: float, ts_ms: int, **extra: object) -> dict[str, object]:
    msg: dict[str, object] = {
        "symbol": symbol,
        "bid": str(bid),
        "ask": str(bid + 1),
        "last": str(bid + 0.5),
    }
    msg["timestamp"] = ts_ms
    msg.update(extra)
    return {"channel": "watchticker", "message": msg}


def _order(order_id: str, status: str, updated_ms: int, **extra: object) -> dict[str, object]:
    msg: dict[str, object] = {
        "id": order_id,
        "symbol": "ETH/BRL",
        "status": status,
        "updatedAt": updated_ms,
    }
    msg.update(extra)
    return {"channel": "watchorders", "message": msg}


def _sql(query: str) -> duckdb.DuckDBPyRelation:
    rel = duckdb.sql(query)
    assert rel is not None
    return rel


def _write(root: Path, rows: list[Row]) -> None:
    with RecordingWriter(root) as writer:
        for row in rows:
            assert writer.add(row)


def _sample_rows() -> list[Row]:
    rows = [session_row("connected", received_at_ns=T0, connection_id="c1", seq=1)]
    seq = 1
    for i in range(6):
        seq += 1
        t = T0 + (i + 1) * 300_000_000  # every 0.3 s: the last three are on the next day
        symbol = "BTC/BRL" if i % 2 == 0 else "ETH/BRL"
        rows.append(
            row_from_message(
                _ticker(symbol, 100.0 + i, t // 10**6),
                received_at_ns=t,
                connection_id="c1",
                seq=seq,
            )
        )
    for j, (oid, status) in enumerate([("m-1", "pending"), ("m-1", "closed"), ("l-2", "OPEN")]):
        seq += 1
        t = T0 + 2_000_000_000 + j
        rows.append(
            row_from_message(
                _order(oid, status, t // 10**6), received_at_ns=t, connection_id="c1", seq=seq
            )
        )
    return rows


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    root = tmp_path / "rec"
    _write(root, _sample_rows())
    return root


def test_layout_is_hive_partitioned_by_channel_and_date(recording: Path) -> None:
    files = sorted(p.relative_to(recording).parts[:2] for p in recording.rglob("*.parquet"))
    assert files == [
        ("channel=_session", "date=2026-11-21"),
        ("channel=watchorders", "date=2026-11-22"),
        ("channel=watchticker", "date=2026-11-21"),
        ("channel=watchticker", "date=2026-11-22"),
    ]
    for path in recording.rglob("*.parquet"):
        meta = pq.ParquetFile(path).metadata
        assert meta.row_group(0).column(0).compression == "ZSTD"
        assert tuple(pq.read_schema(path).names) == COLUMNS


def test_read_recording_is_typed_and_sorted(recording: Path) -> None:
    df = read_recording(recording)
    assert list(df.columns) == list(COLUMNS)
    assert len(df) == 10
    assert str(df["received_at"].dtype) == "datetime64[ns, UTC]"
    assert str(df["updated_at"].dtype) == "datetime64[ms, UTC]"
    assert df["bid"].dtype == "float64"
    assert df["received_at"].is_monotonic_increasing
    tick = df[df["channel"] == "watchticker"].iloc[0]
    assert (tick["symbol"], tick["bid"], tick["ask"], tick["last"]) == ("BTC/BRL", 100, 101, 100.5)
    assert json.loads(tick["raw"])["message"]["symbol"] == "BTC/BRL"
    orders = df[df["channel"] == "watchorders"]
    assert list(orders["order_id"]) == ["m-1", "m-1", "l-2"]
    assert list(orders["status"]) == ["pending", "closed", "OPEN"]
    session = df[df["channel"] == "_session"].iloc[0]
    assert session["kind"] == "connected" and pd.isna(session["raw"])


def test_channel_filter_is_case_insensitive_and_accepts_specs(recording: Path) -> None:
    assert set(read_recording(recording, "watchTicker")["channel"]) == {"watchticker"}
    assert len(read_recording(recording, "watchTicker:BTC/BRL")) == 6
    both = read_recording(recording, ["watchorders", "_session"])
    assert sorted(set(both["channel"])) == ["_session", "watchorders"]


def test_time_window_and_date_pruning(recording: Path) -> None:
    midnight = pd.Timestamp("2026-11-22", tz="UTC")
    after = read_recording(recording, "watchticker", start=midnight)
    assert len(after) == 3 and (after["received_at"] >= midnight).all()
    before = read_recording(recording, "watchticker", end="2026-11-22T00:00:00Z")
    assert len(before) == 3 and (before["received_at"] < midnight).all()
    # a file of a pruned date partition is never opened: replace it with garbage
    junk = partition_dir(recording, "watchticker", "2026-11-21")
    for f in junk.glob("*.parquet"):
        f.write_bytes(b"garbage")
    assert len(read_recording(recording, "watchticker", start=midnight)) == 3
    with pytest.raises(Exception):  # noqa: B017 - whichever error pyarrow picks
        read_recording(recording, "watchticker")


def test_symbols_filter_keeps_session_rows(recording: Path) -> None:
    df = read_recording(recording, symbols=["btc/brl"])
    assert set(df["symbol"].dropna()) == {"BTC/BRL"}
    assert (df["channel"] == "_session").sum() == 1


def test_a_recording_without_rows_yet_is_a_typed_empty_frame(tmp_path: Path) -> None:
    # a recorder that has begun (its write-ahead folder) and written no Parquet yet
    (tmp_path / "_wal").mkdir()
    full = read_recording(tmp_path)
    assert full.empty and list(full.columns) == list(COLUMNS)
    assert str(full["received_at"].dtype) == "datetime64[ns, UTC]"
    assert full["bid"].dtype == "float64"
    # a missing folder is no recording (tests/recording/test_read_missing_root.py)
    with pytest.raises(InvalidRequest, match="no recording at"):
        read_recording(tmp_path / "rec-none")


def test_columns_argument_is_checked(recording: Path) -> None:
    assert list(read_recording(recording, columns=["seq", "raw"]).columns) == ["seq", "raw"]
    with pytest.raises(ValueError, match="nope"):
        read_recording(recording, columns=["nope"])


def test_a_channel_reads_only_the_columns_it_uses(recording: Path) -> None:
    common = ["received_at", "connection_id", "seq", "channel"]
    ticks = read_recording(recording, "watchticker")
    assert list(ticks.columns) == [*common, "symbol", "updated_at", "bid", "ask", "last", "raw"]
    assert ticks[["symbol", "bid", "updated_at"]].notna().all().all()
    orders = read_recording(recording, "watchOrders")
    assert list(orders.columns) == [*common, "symbol", "order_id", "status", "updated_at", "raw"]
    session = read_recording(recording, "_session")
    assert list(session.columns) == [*common, "kind", "detail", "gap_start", "gap_end", "raw"]
    # several channels: the union, in the schema's order
    both = read_recording(recording, ["watchorders", "_session"])
    assert list(both.columns) == [
        *common,
        "symbol",
        "order_id",
        "status",
        "updated_at",
        "kind",
        "detail",
        "gap_start",
        "gap_end",
        "raw",
    ]
    # every column on request, and without a channel
    assert list(read_recording(recording, "watchticker", columns="all").columns) == list(COLUMNS)
    assert list(read_recording(recording).columns) == list(COLUMNS)
    # a channel this version does not know: the common columns and raw
    assert list(read_recording(recording, "watchfuture").columns) == [*common, "raw"]
    # typed even when empty
    empty = read_recording(recording, "watchticker", start="2030-01-01")
    assert empty.empty and list(empty.columns) == list(ticks.columns)
    assert empty["bid"].dtype == "float64"
    with pytest.raises(ValueError, match='"all"'):
        read_recording(recording, "watchticker", columns="everything")


def test_duckdb_reads_the_same_rows(recording: Path) -> None:
    ours = read_recording(recording)
    theirs = _sql(
        f"SELECT channel, connection_id, seq, symbol, order_id, status, bid, raw, date "
        f"FROM read_parquet('{recording}/*/*/*.parquet', hive_partitioning=true) "
        f"ORDER BY received_at, connection_id, seq"
    ).df()
    assert len(theirs) == len(ours)
    assert list(theirs["seq"]) == list(ours["seq"])
    assert list(theirs["channel"]) == list(ours["channel"])
    assert list(theirs["raw"].fillna("")) == list(ours["raw"].fillna(""))
    assert list(theirs["order_id"].dropna()) == list(ours["order_id"].dropna())
    dates = {str(d)[:10] for d in theirs["date"]}
    assert dates == {"2026-11-21", "2026-11-22"}


def test_a_new_field_in_messages_keeps_the_dataset_readable(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    t = T0 + DAY_NS
    _write(
        root,
        [row_from_message(_order("l-1", "OPEN", 1), received_at_ns=t, connection_id="a", seq=1)],
    )
    # a later run sees a field the service added (spec 9): it stays in raw
    newer = _order("l-1", "TRIGGERED", 2, triggerPrice="123.4", nested={"x": [1, 2]})
    _write(root, [row_from_message(newer, received_at_ns=t + 1, connection_id="b", seq=1)])
    df = read_recording(root, "watchorders")
    assert list(df["status"]) == ["OPEN", "TRIGGERED"]
    assert json.loads(df["raw"].iloc[1])["message"]["triggerPrice"] == "123.4"
    count = _sql(
        f"SELECT count(*) FROM read_parquet('{root}/*/*/*.parquet', hive_partitioning=true)"
    ).fetchall()
    assert count == [(2,)]


def test_extraction_never_fails_on_odd_payloads(tmp_path: Path) -> None:
    odd: list[dict[str, object]] = [
        {"channel": "watchticker", "message": {"symbol": 5, "bid": "n/a", "timestamp": "x"}},
        {"channel": "watchorders", "message": "not an object"},
        {"channel": "watchtickers", "message": {"tickers": [{"timestamp": 1_700_000_000}]}},
        {"channel": "watchbalance", "message": {"balances": [], "timestamp": 1_700_000_000_000}},
        {"channel": "somethingNew", "message": [1, 2, 3]},
    ]
    rows = [
        row_from_message(m, received_at_ns=T0 + i, connection_id="c", seq=i)
        for i, m in enumerate(odd)
    ]
    assert rows[0].symbol == "5" and rows[0].bid is None and rows[0].updated_at_ms is None
    assert rows[2].updated_at_ms == 1_700_000_000_000  # seconds detected by magnitude
    root = tmp_path / "rec"
    _write(root, rows)
    df = read_recording(root)
    assert sorted(set(df["channel"])) == [
        "_session",  # the ticker without an ask nor a last: a mismatch row each
        "somethingnew",
        "watchbalance",
        "watchorders",
        "watchticker",
        "watchtickers",
    ]
    assert set(df.loc[df["channel"] == "_session", "kind"]) == {"mismatch"}


def test_a_channel_name_from_the_wire_cannot_escape_the_root(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    evil = {"channel": "../../etc/x", "message": {}}
    _write(root, [row_from_message(evil, received_at_ns=T0, connection_id="c", seq=1)])
    written = list(tmp_path.rglob("*.parquet"))
    assert len(written) == 1
    assert written[0].is_relative_to(root)
    assert written[0].parent.parent.parent == root
    assert read_recording(root, "../../etc/x")["seq"].tolist() == [1]


def test_order_ids_in_recording_in_first_seen_order(recording: Path, tmp_path: Path) -> None:
    assert order_ids_in_recording(recording) == ["m-1", "l-2"]
    with pytest.raises(InvalidRequest, match="no recording at"):
        order_ids_in_recording(tmp_path / "none")
