"""Fixtures of the report tests (helpers live in ``_report_frames``)."""

from __future__ import annotations

import pytest
from _report_frames import Frames, make_frames


@pytest.fixture
def empty_frames() -> Frames:
    return make_frames([])
