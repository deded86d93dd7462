"""A cancel acceptance's ``cancelRequestedAt`` (spec 2.6), sans-I/O: read as list items'
times are (a Unix time or an ISO 8601 string); a missing or unreadable one leaves the
cancel accepted, with a warning naming the field and the order, rate-limited."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from toolkit.client import _cancel
from toolkit.client._cancel import CancelOutcome, accepted

WHEN = datetime(2026, 11, 24, 4, 0, tzinfo=UTC)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    clock = FakeClock()
    monkeypatch.setattr(_cancel, "_stamp_warnings", _cancel._StampWarnings(60.0, clock))
    return clock


@pytest.mark.parametrize(
    ("value", "unit"),
    [
        ("2026-11-24T04:00:00Z", "auto"),
        ("2026-11-24T04:00:00", "ms"),  # naive = UTC
        (int(WHEN.timestamp() * 1000), "auto"),
        (int(WHEN.timestamp()), "s"),
        (str(int(WHEN.timestamp() * 1000)), "ms"),
    ],
)
def test_a_readable_stamp_is_read_like_list_item_times(
    clock: FakeClock, caplog: pytest.LogCaptureFixture, value: Any, unit: str
) -> None:
    body = {"id": "o1", "status": "CANCELLING", "cancelRequestedAt": value}
    with caplog.at_level(logging.DEBUG, "toolkit.rest"):
        result = accepted("o1", body, 202, unit)
    assert result.outcome is CancelOutcome.ACCEPTED and result.cancel_requested_at == WHEN
    assert not caplog.records


def test_a_missing_or_unreadable_stamp_is_accepted_with_a_rate_limited_warning(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    bodies = [
        {"id": "o1", "status": "CANCELLING"},
        {"id": "o2", "status": "CANCELLING", "cancelRequestedAt": "soon"},
        {"id": "o3", "status": "CANCELLING", "cancelRequestedAt": 1e30},
    ]
    with caplog.at_level(logging.DEBUG, "toolkit.rest"):
        results = [accepted(str(body["id"]), body, 202) for body in bodies]
        clock.now += 61
        results.append(accepted("o4", {"status": "CANCELLING"}, 202))
    assert all(r.accepted and r.cancel_requested_at is None for r in results)
    assert [r.status for r in results] == ["CANCELLING"] * 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert "order 'o1' was accepted without a readable 'cancelRequestedAt'" in warnings[0]
    assert "spec 2.6" in warnings[0] and "got none" in warnings[0]
    assert "order 'o4'" in warnings[1] and "(2 more since the last warning)" in warnings[1]
    quiet = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any("'o2'" in m and "got 'soon'" in m for m in quiet)
    assert any("'o3'" in m for m in quiet)
