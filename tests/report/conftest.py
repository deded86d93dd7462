"""Fixtures of the report tests; the frame builders they use live in ``_report_frames``
(a module name no other test folder shares)."""

from __future__ import annotations

import pytest
from _report_frames import Frames, make_frames


@pytest.fixture
def empty_frames() -> Frames:
    return make_frames([])
