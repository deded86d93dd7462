"""The live counts of a recorder (``RecorderStats``) and their one-line status."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

__all__ = ["RecorderStats"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class RecorderStats:
    """Live counts of a recorder: data ``messages`` and their ``bytes`` (raw JSON text),
    Parquet ``files`` written, ``gaps`` seen, messages ``dropped`` (the backlog on disk was
    past its limit), ``recovered`` files from an earlier crash, ``flushed_rows`` durable in
    the write-ahead log (data and session rows: what a crash can no longer lose),
    ``backlog_bytes`` of write-ahead segments not yet converted to Parquet, and ``misses``:
    per ``payloads.*`` setting of the profile, the messages that lacked the field it maps
    (their column is null; counted as segments are converted, so they lag by up to one
    rotation), and the day partitions ``compacted`` (``Recorder(compact="daily")``).

    ``started_at`` is when the recorder started, wall-clock, a timezone-aware UTC
    ``datetime``; rates are measured on a monotonic clock of their own."""

    messages: int = 0
    bytes: int = 0
    files: int = 0
    gaps: int = 0
    dropped: int = 0
    recovered: int = 0
    session_rows: int = 0
    flushed_rows: int = 0
    backlog_bytes: int = 0
    misses: dict[str, int] = field(default_factory=dict)
    compacted: int = 0
    started_at: datetime = field(default_factory=_utc_now)
    _started_mono: float = field(default_factory=time.monotonic, repr=False, compare=False)

    def restart_clock(self) -> None:
        """Start the clocks now (the recording starts)."""
        self.started_at = _utc_now()
        self._started_mono = time.monotonic()

    def line(self) -> str:
        """A one-line status for a terminal or a notebook."""
        elapsed = max(time.monotonic() - self._started_mono, 1e-9)
        return (
            f"messages {self.messages:,} ({self.messages / elapsed:,.0f}/s)  "
            f"saved {self.flushed_rows:,}  bytes {_human(self.bytes)}  files {self.files}  "
            f"gaps {self.gaps}  dropped {self.dropped}{self.misses_text('  ')}"
        )

    def misses_text(self, prefix: str = "") -> str:
        """``prefix`` and the misses per setting (``payloads.ticker_symbol 7, ...``), or
        "" when there were none."""
        if not self.misses:
            return ""
        found = ", ".join(f"{setting} {n:,}" for setting, n in sorted(self.misses.items()))
        return f"{prefix}missing fields: {found}"


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GB"  # pragma: no cover
