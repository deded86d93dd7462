"""A recording made under another profile (profiles/alt.toml): the extracted columns come
through the profile's payload mapping (on the Arrow fast path and the per-row fallback
alike), the files name the profile in their metadata, and read-back and replay rebuild
the same values: one row per pair for watchTickers, dates that are not 1970."""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from _recordings import path_kind  # noqa: F401 (the fixture the tests mark)

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.recording import _raw
from toolkit.recording._read import read_recording, recording_profile
from toolkit.recording._recorder import Recorder
from toolkit.recording._replay import replay
from toolkit.recording._rows import (
    META_PROFILE,
    profile_from_metadata,
    row_from_event,
    row_from_message,
)
from toolkit.recording._writer import RecordingWriter
from toolkit.stream._events import OrderEvent, TickerEvent, TickersEvent, event_from_message

ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")
S = 10**9
SEC = 1_763_000_000  # the service's stamps, in seconds
T0 = SEC * S + 123  # received times (ns)


def alt_messages() -> list[dict[str, Any]]:
    def tick(symbol: str, bid: str, ts: int) -> dict[str, Any]:
        return {"s": symbol, "quote": {"bid": bid, "ask": "11", "last": "10.5"}, "ts": ts}

    return [
        {
            "channel": "watchorders",
            "message": {
                "id": "l-1",
                "symbol": "BTC/BRL",
                "status": "OPEN",
                "updatedAt": SEC,
                "createdAt": SEC,
            },
        },
        {"channel": "watchticker", "message": tick("BTC/BRL", "10", SEC + 1)},
        {
            "channel": "watchtickers",
            "message": {"data": [tick("BTC/BRL", "10", SEC + 2), tick("ETH/BRL", "3", SEC + 3)]},
        },
        {
            "channel": "watchbalance",
            "message": {
                "wallets": [
                    {"currency": "BRL", "available": "1", "hold": "0", "balance": "1"},
                ],
                "ts": SEC + 4,
            },
        },
        {
            "channel": "watchorders",
            "message": {"id": "m-2", "status": "closed", "updatedAt": SEC + 5},
        },
    ]


def _record(root: Path, profile: ServiceProfile, messages: list[dict[str, Any]]) -> None:
    with RecordingWriter(root, profile=profile) as writer:
        for seq, msg in enumerate(messages, 1):
            writer.add_raw(json.dumps(msg), T0 + seq, "c1", seq)


@pytest.mark.usefixtures("path_kind")
def test_columns_come_through_the_alt_mapping(tmp_path: Path) -> None:
    _record(tmp_path, ALT, alt_messages())
    ticks = read_recording(tmp_path, "watchticker")
    assert list(ticks["symbol"]) == ["BTC/BRL"]
    assert (ticks["bid"].iloc[0], ticks["ask"].iloc[0], ticks["last"].iloc[0]) == (10, 11, 10.5)
    assert ticks["updated_at"].iloc[0] == pd.Timestamp(SEC + 1, unit="s", tz="UTC")

    orders = read_recording(tmp_path, "watchorders")
    assert list(orders["order_id"]) == ["l-1", "m-2"]
    assert list(orders["status"]) == ["OPEN", "closed"]  # as sent, in the recording
    assert list(orders["updated_at"]) == [
        pd.Timestamp(SEC, unit="s", tz="UTC"),
        pd.Timestamp(SEC + 5, unit="s", tz="UTC"),
    ]
    balance = read_recording(tmp_path, "watchbalance")
    assert balance["updated_at"].iloc[0] == pd.Timestamp(SEC + 4, unit="s", tz="UTC")
    everything = read_recording(tmp_path)
    assert (everything["updated_at"].dropna().dt.year >= 2025).all()  # never 1970
    # without a channel, one row per message, as recorded
    assert not everything.duplicated(["connection_id", "seq"]).any()


@pytest.mark.usefixtures("path_kind")
def test_watchtickers_read_back_one_row_per_pair(tmp_path: Path) -> None:
    _record(tmp_path, ALT, alt_messages())
    pairs = read_recording(tmp_path, channel="watchtickers")
    assert list(pairs["symbol"]) == ["BTC/BRL", "ETH/BRL"]
    assert list(pairs["bid"]) == [10.0, 3.0]
    assert list(pairs["last"]) == [10.5, 10.5]
    assert list(pairs["updated_at"]) == [
        pd.Timestamp(SEC + 2, unit="s", tz="UTC"),
        pd.Timestamp(SEC + 3, unit="s", tz="UTC"),
    ]
    assert pairs["seq"].nunique() == 1  # both pairs came in one message
    only_eth = read_recording(tmp_path, channel="watchtickers", symbols=["eth/brl"])
    assert list(only_eth["symbol"]) == ["ETH/BRL"]
    narrow = read_recording(tmp_path, channel="watchtickers", columns=["symbol", "bid"])
    assert list(narrow.columns) == ["symbol", "bid"] and len(narrow) == 2


def test_files_name_the_profile_and_replay_uses_it(tmp_path: Path) -> None:
    _record(tmp_path, ALT, alt_messages())
    files = sorted(tmp_path.rglob("*.parquet"))
    assert files
    for path in files:
        metadata = pq.read_schema(path).metadata
        assert metadata[META_PROFILE] == b"alt"
        found = profile_from_metadata(metadata)
        assert found is not None and found.payloads == ALT.payloads
        assert found.orders.timestamp_unit == "s"
    assert recording_profile(tmp_path).payloads == ALT.payloads

    events = [e for e in replay(tmp_path) if e.channel != "_session"]
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["OrderEvent", "TickerEvent", "TickersEvent", "BalanceEvent", "OrderEvent"]
    tick = events[1]
    assert isinstance(tick, TickerEvent)
    assert (tick.symbol, tick.bid, tick.timestamp) == ("BTC/BRL", 10.0, (SEC + 1) * 1000)
    tickers = events[2]
    assert isinstance(tickers, TickersEvent)
    assert [t.symbol for t in tickers.tickers] == ["BTC/BRL", "ETH/BRL"]
    order = events[4]
    assert isinstance(order, OrderEvent)
    assert (order.status, order.status_raw, order.updated_at_ms) == (
        "CLOSED",
        "closed",
        (SEC + 5) * 1000,
    )


def test_an_older_recording_without_metadata_reads_as_the_default(tmp_path: Path) -> None:
    msg = {
        "channel": "watchticker",
        "message": {"symbol": "A/B", "bid": "1", "ask": "2", "last": "1.5", "timestamp": SEC},
    }
    _record(tmp_path, DEFAULT_PROFILE, [msg])
    for path in tmp_path.rglob("*.parquet"):  # strip the metadata: an older writer's file
        table = pq.ParquetFile(path).read().replace_schema_metadata(None)
        pq.write_table(table, path)
    assert recording_profile(tmp_path) is DEFAULT_PROFILE
    (tick,) = [e for e in replay(tmp_path) if isinstance(e, TickerEvent)]
    assert (tick.symbol, tick.timestamp) == ("A/B", SEC * 1000)


@pytest.mark.parametrize("index", range(5))
def test_rows_of_alt_events_equal_rows_of_their_messages(index: int) -> None:
    message = alt_messages()[index]
    event = event_from_message(message, received_at_ns=5, connection_id="c", seq=3, profile=ALT)
    expected = row_from_message(message, received_at_ns=5, connection_id="c", seq=3, profile=ALT)
    assert row_from_event(event, ALT) == expected


def test_recorder_takes_the_profile_of_its_client(tmp_path: Path) -> None:
    class Client:
        profile = ALT

    assert Recorder(Client(), tmp_path).profile is ALT
    assert Recorder(Client(), tmp_path, profile=DEFAULT_PROFILE).writer.profile is DEFAULT_PROFILE
    assert Recorder(object(), tmp_path).profile is DEFAULT_PROFILE


def test_the_arrow_extraction_reads_the_alt_shapes_without_falling_back() -> None:
    import pyarrow as pa

    buffer = _raw.RawBuffer()
    for seq, msg in enumerate(alt_messages(), 1):
        buffer.append(json.dumps(msg), T0 + seq, "c1", seq)
    table = _raw._extract(pa.Table.from_batches([buffer.batch()]), ALT)  # no _Fallback
    rows = table.select(["channel", "symbol", "order_id", "bid", "updated_at"]).to_pylist()
    stamps = [r["updated_at"].timestamp() if r["updated_at"] else None for r in rows]
    assert stamps == [SEC, SEC + 1, SEC + 3, SEC + 4, SEC + 5]  # tickers: the latest pair
    assert [r["symbol"] for r in rows] == ["BTC/BRL", "BTC/BRL", None, None, None]
    assert [r["order_id"] for r in rows] == ["l-1", None, None, None, "m-2"]
    assert rows[1]["bid"] == 10.0


def test_a_profile_whose_paths_conflict_converts_row_by_row() -> None:
    clash = ALT.replace({"payloads.ticker_time": "quote"})  # "quote" is also a parent
    assert _raw._plan(clash).schema is None
    assert _raw._plan(ALT).schema is not None


def test_a_root_recorded_under_two_profiles_reads_each_file_under_its_own(
    tmp_path: Path,
) -> None:
    # the same root recorded first under alt, then under the default profile
    _record(tmp_path, ALT, [alt_messages()[2]])
    sol = {"symbol": "SOL/BRL", "bid": "7", "ask": "8", "last": "7.5", "timestamp": SEC * 1000}
    default_tickers = {"channel": "watchtickers", "message": {"tickers": [sol]}}
    with RecordingWriter(tmp_path, profile=DEFAULT_PROFILE) as writer:
        writer.add_raw(json.dumps(default_tickers), T0 + 10, "c2", 1)

    pairs = read_recording(tmp_path, "watchtickers")
    assert list(zip(pairs["connection_id"], pairs["symbol"], pairs["bid"], strict=True)) == [
        ("c1", "BTC/BRL", 10.0),
        ("c1", "ETH/BRL", 3.0),
        ("c2", "SOL/BRL", 7.0),
    ]
    assert pairs["updated_at"].notna().all()
    only_sol = read_recording(tmp_path, "watchtickers", symbols=["SOL/BRL"])
    assert list(only_sol["symbol"]) == ["SOL/BRL"]

    events = [e for e in replay(tmp_path) if e.channel != "_session"]
    assert [type(e).__name__ for e in events] == ["TickersEvent", "TickersEvent"]
    assert [[t.symbol for t in e.tickers] for e in events] == [  # type: ignore[attr-defined]
        ["BTC/BRL", "ETH/BRL"],
        ["SOL/BRL"],
    ]
    # a profile given explicitly still overrides every file's
    forced = [e for e in replay(tmp_path, profile=DEFAULT_PROFILE) if e.channel != "_session"]
    assert type(forced[0]).__name__ == "RawEvent"


@pytest.mark.usefixtures("path_kind")
def test_a_crash_recorded_under_one_profile_recovers_under_it_whatever_the_next_run_uses(
    tmp_path: Path,
) -> None:
    """A recorder killed under the alt profile leaves segments; the next one on the same
    root runs under the default profile. The leftovers are converted under alt, the
    profile they were recorded with (their first record names it), not the new run's,
    which would store null symbols and prices and label the file with the wrong profile."""
    crashed = RecordingWriter(tmp_path, profile=ALT)
    crashed.open()
    for seq, msg in enumerate(alt_messages(), 1):
        crashed.add_raw(json.dumps(msg), T0 + seq, "c1", seq)
    crashed.flush()
    segment = crashed._segment
    assert segment is not None
    os.close(segment.fileno())  # killed: nothing converted, its segment stays
    crashed._unlock()

    with RecordingWriter(tmp_path, profile=DEFAULT_PROFILE) as writer:
        assert writer.stats.recovered >= 1
    ticks = read_recording(tmp_path, "watchticker")
    assert list(ticks["symbol"]) == ["BTC/BRL"] and list(ticks["bid"]) == [10.0]
    assert ticks["updated_at"].iloc[0] == pd.Timestamp(SEC + 1, unit="s", tz="UTC")
    assert recording_profile(tmp_path).name == ALT.name
    orders = read_recording(tmp_path, "watchorders")
    assert list(orders["order_id"]) == ["l-1", "m-2"]


def test_a_segment_names_its_profile_in_its_first_record_and_readers_skip_it(
    tmp_path: Path,
) -> None:
    from toolkit.recording._raw import read_segment_items
    from toolkit.recording._rows import profile_metadata
    from toolkit.recording._wal import (
        MAGIC,
        Row,
        Segment,
        decode_profile_record,
        iter_payloads,
        iter_segment_rows,
        profile_record,
        read_segment,
    )

    writer = RecordingWriter(tmp_path, profile=ALT)
    writer.open()
    writer.add_raw(json.dumps(alt_messages()[1]), T0, "c1", 1)
    writer.flush()
    segment = writer._segment
    assert segment is not None
    data = segment.path.read_bytes()
    assert data.startswith(MAGIC)
    first = next(iter_payloads(data))[1]
    assert profile_from_metadata(decode_profile_record(first)).payloads == ALT.payloads  # type: ignore[union-attr]
    rows, batches = read_segment_items(segment.path)
    assert sum(b.num_rows for b in batches) + len(rows) == 1  # the message, not the record
    writer.close()
    rows_only = Segment(tmp_path / "rows.wal", profile_record(profile_metadata(ALT)))
    rows_only.write_rows([Row(T0, "c1", 1, "watchticker", symbol="BTC/BRL")])
    rows_only.close()
    assert [r.symbol for r in read_segment(rows_only.path).rows] == ["BTC/BRL"]
    assert [r.symbol for r in iter_segment_rows(rows_only.path)] == ["BTC/BRL"]


def test_a_segment_without_a_profile_record_converts_under_the_given_profile(
    tmp_path: Path,
) -> None:
    """Segments written before segments named their profile: the current run's."""
    from toolkit.recording._wal import MAGIC, iter_payloads
    from toolkit.recording._writer import recover

    crashed = RecordingWriter(tmp_path, profile=ALT)
    crashed.open()
    crashed.add_raw(json.dumps(alt_messages()[1]), T0, "c1", 1)
    crashed.flush()
    segment = crashed._segment
    assert segment is not None
    os.close(segment.fileno())
    crashed._unlock()
    data = segment.path.read_bytes()
    header_end = next(iter_payloads(data))[0]
    segment.path.write_bytes(MAGIC + data[header_end:])  # as an older version wrote it
    recover(tmp_path, profile=ALT)
    assert list(read_recording(tmp_path, "watchticker")["bid"]) == [10.0]
    assert recording_profile(tmp_path).name == ALT.name


@pytest.mark.parametrize("where", ["after rows", "malformed"])
def test_a_misplaced_or_malformed_profile_record_is_bad_bytes_never_a_silent_relabel(
    tmp_path: Path, where: str
) -> None:
    """The rows before it are converted under the first profile; the segment is kept as
    .wal.corrupt, as for any record that is intact but malformed."""
    from toolkit.recording._conversion import convert_segment
    from toolkit.recording._rows import profile_metadata
    from toolkit.recording._wal import PROFILE_MARK, Row, Segment, encode_row, profile_record

    tick = Row(T0, "c1", 1, "watchticker", symbol="BTC/BRL", bid=1.0, ask=2.0, last=1.5)
    seg = Segment(tmp_path / "s.wal")
    seg.write(encode_row(tick))
    if where == "after rows":
        seg.write(profile_record(profile_metadata(ALT)))
    else:
        payload = PROFILE_MARK + b"{not json"  # intact (its checksum holds), malformed
        seg.write(struct.pack("<II", len(payload), zlib.crc32(payload)) + payload)
    seg.write(encode_row(tick._replace(seq=2)))
    seg.close()
    out = tmp_path / "out"
    files = convert_segment(out, seg.path, profile=DEFAULT_PROFILE)
    assert len(files) == 1 and pq.read_table(files[0]).num_rows == 1
    assert (tmp_path / "s.wal.corrupt").exists() and not seg.path.exists()


def test_a_recording_names_the_account_it_was_made_with_never_the_key(tmp_path: Path) -> None:
    """Every file (and every write-ahead segment, so a crash's leftovers too) names the
    service and a fingerprint of the API key: an order store can tell its own account's
    recordings from another's. The key itself never appears."""
    from toolkit.client._identity import account_of
    from toolkit.client._settings import Settings
    from toolkit.recording._rows import account_from_metadata

    class Client:
        profile = ALT
        settings = Settings(base_url="http://127.0.0.1:9", api_key="key-1234567890")

    account = account_of(Client())
    assert account == {"base_url": "http://127.0.0.1:9", "api_key": account["api_key"]}  # type: ignore[index]
    assert str(account["api_key"]).startswith("sha256:")  # type: ignore[index]
    recorder = Recorder(Client(), tmp_path)
    writer = recorder.writer
    writer.open()
    writer.add_raw(json.dumps(alt_messages()[0]), T0, "c1", 1)
    writer.flush()
    segment = writer._segment
    assert segment is not None
    os.close(segment.fileno())  # killed: its leftovers are converted by the next writer
    writer._unlock()
    with RecordingWriter(tmp_path, profile=DEFAULT_PROFILE):
        pass
    files = sorted(tmp_path.glob("channel=*/date=*/*.parquet"))
    assert files
    for path in files:
        metadata = pq.read_schema(path).metadata
        assert account_from_metadata(metadata) == account
        assert b"key-1234567890" not in b"".join(metadata.values())
    # a client without settings (a fake, a replay) names none
    assert account_of(object()) is None
