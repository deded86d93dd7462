"""A recording whose watchOrders messages name given order ids, written as a Recorder
writes it: for the tests that feed recordings to the order store."""

from __future__ import annotations

import time
from pathlib import Path

from toolkit.profile import ServiceProfile
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
