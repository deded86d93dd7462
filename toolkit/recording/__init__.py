"""Recording the WebSocket channels to a Hive-partitioned Parquet dataset: the write-ahead
log, rows, the raw fast path, Parquet files, the writer, the ``Recorder``, read-back and replay.

May import ``toolkit.errors``, ``toolkit.protocol`` and ``toolkit.stream``; it takes a client
but never imports ``toolkit.client`` at run time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_exports

__all__ = [
    "CompactStats",
    "Recorder",
    "RecorderBusy",
    "RecorderStats",
    "Replay",
    "compact_recording",
    "order_ids_in_recording",
    "read_recording",
    "read_recording_table",
    "recording_profile",
    "replay",
    "scan_recording",
]

_EXPORTS = {
    "Recorder": "toolkit.recording._recorder",
    "RecorderStats": "toolkit.recording._stats",
    "RecorderBusy": "toolkit.recording._root",
    "read_recording": "toolkit.recording._read",
    "read_recording_table": "toolkit.recording._read",
    "order_ids_in_recording": "toolkit.recording._read",
    "recording_profile": "toolkit.recording._read",
    "replay": "toolkit.recording._replay",
    "Replay": "toolkit.recording._replay",
    "scan_recording": "toolkit.recording._scan",
    "compact_recording": "toolkit.recording._compact",
    "CompactStats": "toolkit.recording._compact",
}

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.recording._compact import CompactStats, compact_recording
    from toolkit.recording._read import (
        order_ids_in_recording,
        read_recording,
        read_recording_table,
        recording_profile,
    )
    from toolkit.recording._recorder import Recorder
    from toolkit.recording._replay import Replay, replay
    from toolkit.recording._root import RecorderBusy
    from toolkit.recording._scan import scan_recording
    from toolkit.recording._stats import RecorderStats

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
