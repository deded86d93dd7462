"""Tests of the rows of a recording: a typed event and the message it came from give the
same row; a data message that claims the session channel is never a session row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolkit.recording import _raw, _writer
from toolkit.recording._read import read_recording
from toolkit.recording._rows import (
    SESSION_CHANNEL,
    UNPARSED_CHANNEL,
    row_from_event,
    row_from_message,
    row_from_text,
    session_row,
)
from toolkit.recording._writer import RecordingWriter
from toolkit.stream._events import event_from_message


@pytest.mark.parametrize(
    "message",
    [
        {
            "channel": "watchticker",
            "message": {"symbol": "BTC/BRL", "bid": "1.5", "ask": "", "last": "2", "timestamp": 7},
        },
        {
            "channel": "watchorders",
            "message": {"id": "l-1", "symbol": "ETH/BRL", "status": "OPEN", "updatedAt": 1_700_000},
        },
        {"channel": "watchbalance", "message": {"balances": [], "timestamp": 1_700_000_000_000}},
    ],
)
def test_rows_of_typed_events_equal_rows_of_their_messages(message: dict[str, object]) -> None:
    event = event_from_message(message, received_at_ns=5, connection_id="c", seq=3)
    expected = row_from_message(message, received_at_ns=5, connection_id="c", seq=3)
    assert row_from_event(event) == expected


SESSION_CLAIM = '{"channel":"_Session","message":{"kind":"gap","detail":"fake"}}'


@pytest.mark.parametrize("path", ["arrow", "per-row"])
def test_a_data_message_on_the_session_channel_is_no_session_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    if path == "per-row":

        def refuse(*_: Any, **__: Any) -> Any:
            raise _raw._Fallback

        monkeypatch.setattr(_raw, "_extract", refuse)
        monkeypatch.setattr(_writer, "warm_up", lambda *_: None)
    ticker = (
        '{"channel":"watchticker","message":{"symbol":"BTC/BRL","bid":"1","ask":"2",'
        '"last":"1","timestamp":1}}'
    )
    with RecordingWriter(tmp_path) as writer:
        writer.add_raw(ticker, 1, "c1", 1)
        writer.add_raw(SESSION_CLAIM, 2, "c1", 2)  # sent by the server, not the session's
        writer.add(session_row("connected", received_at_ns=3, connection_id="c1"))
    session = read_recording(tmp_path, SESSION_CHANNEL)
    assert session["kind"].tolist() == ["connected"]
    kept = read_recording(tmp_path, UNPARSED_CHANNEL)
    assert kept["raw"].tolist() == [SESSION_CLAIM]  # kept as sent, where no reader trusts it


def test_rows_of_a_session_channel_claim_are_not_session_rows() -> None:
    row = row_from_text(SESSION_CLAIM, received_at_ns=1, connection_id="c", seq=1)
    assert row.channel == UNPARSED_CHANNEL and row.kind is None
    broken = SESSION_CLAIM[:-1]  # not JSON: the channel is sniffed from the text
    assert row_from_text(broken, received_at_ns=1, connection_id="c", seq=1).channel == (
        UNPARSED_CHANNEL
    )
    message = json.loads(SESSION_CLAIM)
    event = event_from_message(message, received_at_ns=1, connection_id="c", seq=1)
    assert row_from_event(event).channel == UNPARSED_CHANNEL
