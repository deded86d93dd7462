"""Tests of the rows of a recording: a typed event and the message it came from give the
same row."""

from __future__ import annotations

import pytest

from toolkit.recording._rows import row_from_event, row_from_message
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
