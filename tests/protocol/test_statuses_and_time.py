"""Tests of toolkit.protocol._rules's status rules and timestamp handling (validation and
pagination have their own files)."""

from __future__ import annotations

import pytest

from toolkit.errors import InvalidResponse
from toolkit.protocol import (
    ACTIVE,
    ALL_LIMIT_STATUSES,
    FINALIZED,
    LimitStatus,
    canonical_status,
    is_terminal,
    to_epoch_ms,
)


def test_active_and_finalized_partition_the_nine() -> None:
    assert len(ALL_LIMIT_STATUSES) == 9 == len(LimitStatus)
    assert {"OPEN", "TRIGGERED", "PROCESSING"} == ACTIVE
    assert set(ALL_LIMIT_STATUSES) == ACTIVE | FINALIZED
    assert not ACTIVE & FINALIZED
    assert "CANCELLING" in FINALIZED  # "can no longer execute"


@pytest.mark.parametrize(
    ("raw", "canonical", "terminal"),
    [
        ("closed", "CLOSED", True),
        ("CLOSED", "CLOSED", True),
        ("pending", "PENDING", False),
        ("OPEN", "OPEN", False),
        ("Cancelling", "CANCELLING", False),
        ("rejected", "REJECTED", True),
        ("expired", "EXPIRED", True),
        # executed at the provider, awaiting finalization (spec 3.1): it still changes
        ("executed", "EXECUTED", False),
        ("EXECUTED", "EXECUTED", False),
    ],
)
def test_canonical_status(raw: str, canonical: str, terminal: bool) -> None:
    assert canonical_status(raw) == canonical
    assert is_terminal(raw) is terminal


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (1_790_000_000_000, "auto", 1_790_000_000_000),
        (1_790_000_000, "auto", 1_790_000_000_000),
        (1_790_000_000.5, "auto", 1_790_000_000_500),
        ("1790000000000", "auto", 1_790_000_000_000),
        (1_790_000_000, "ms", 1_790_000_000),
        (1_790_000, "s", 1_790_000_000),
        (None, "auto", None),
        ("", "auto", None),
    ],
)
def test_to_epoch_ms_detects_the_unit(value: object, unit: str, expected: int | None) -> None:
    assert to_epoch_ms(value, unit) == expected


def test_to_epoch_ms_refuses_non_numbers() -> None:
    with pytest.raises(InvalidResponse):
        to_epoch_ms({"a": 1})
    with pytest.raises(InvalidResponse):
        to_epoch_ms("yesterday")


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2026-11-27T09:23:40.637Z", 1_795_771_420_637),
        ("2026-11-27T10:23:40.637+01:00", 1_795_771_420_637),
        ("2026-11-27T09:23:40.637", 1_795_771_420_637),  # no offset: UTC
        ("2026-11-27 09:23:40", 1_795_771_420_000),
        ("1970-01-01T00:00:00Z", 0),
    ],
)
def test_iso_8601_text_is_read_as_the_instant_it_names(text: str, ms: int) -> None:
    """A payload time the spec does not show may be ISO-8601 text beside Unix numbers."""
    assert to_epoch_ms(text) == ms
    assert to_epoch_ms(text, "s") == ms  # the unit is for numbers only


@pytest.mark.parametrize("text", ["soon", "27/11/2026", "2026-13-01T00:00:00Z", "T09:23"])
def test_text_that_is_neither_a_number_nor_iso_is_an_error(text: str) -> None:
    with pytest.raises(InvalidResponse, match="neither a Unix time nor ISO-8601"):
        to_epoch_ms(text)
