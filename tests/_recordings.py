"""Helpers of the recording tests: a recording whose watchOrders messages name given order
ids, written as a Recorder writes it (for the tests that feed recordings to the order store),
and the ``path_kind`` fixture (the Arrow extraction and the per-row fallback)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolkit.profile import ServiceProfile
from toolkit.recording import _raw, _writer
from toolkit.recording._rows import row_from_message
from toolkit.recording._writer import RecordingWriter


def write_order_recording(root: Path, ids: list[str], profile: ServiceProfile) -> None:
    """Write ``root`` with one ``watchorders`` message per id in ``ids``."""
    now = time.time_ns()
    with RecordingWriter(root) as writer:
        for seq, oid in enumerate(ids, 1):
            message = {"channel": "watchorders", "message": {"id": oid, "status": "closed"}}
            row = row_from_message(
                message, received_at_ns=now + seq, connection_id="c1", seq=seq, profile=profile
            )
            assert writer.add(row)


@pytest.fixture(params=["arrow", "per-row"])
def path_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a test on the Arrow extraction and on the per-row Python fallback (a test
    takes it by importing it: ``from _recordings import path_kind``)."""
    if request.param == "per-row":

        def refuse(*_: Any, **__: Any) -> Any:
            raise _raw._Fallback

        monkeypatch.setattr(_raw, "_extract", refuse)
        monkeypatch.setattr(_writer, "warm_up", lambda *_: None)
    yield request.param
