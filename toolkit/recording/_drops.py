"""The recorder's account of the messages it dropped (a full backlog, a failed append):
how many since the last ``dropped`` row of ``_session``, their span, why, and that row
while it is still in the chunk (not yet appended)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from toolkit.recording._rows import session_row
from toolkit.recording._wal import Row


class DropSpan:
    """The messages dropped since the last ``dropped`` row (``count``, received between
    ``first_ns`` and ``last_ns``, for ``reasons``), and that row while it is in the chunk.

    Used by ``RecordingWriter`` only, on the thread that adds messages.
    """

    __slots__ = ("count", "first_ns", "last_ns", "reasons", "unwritten")

    def __init__(self) -> None:
        self.count = 0
        self.first_ns: int | None = None
        self.last_ns: int | None = None
        #: why the messages of the current span were dropped
        self.reasons: dict[str, None] = {}
        #: the ``dropped`` row in the chunk, with its count, span and reasons
        self.unwritten: tuple[Row, int, int | None, int | None, dict[str, None]] | None = None

    def drop(self, received_at_ns: int, reason: str) -> None:
        """Count one message dropped (received at ``received_at_ns``) for ``reason``."""
        self.reasons[reason] = None
        self.count += 1
        if self.first_ns is None:
            self.first_ns = received_at_ns
        self.last_ns = received_at_ns

    def drop_many(self, stamps: Sequence[int], reason: str) -> None:
        """Count the messages received at ``stamps`` (not empty) dropped for ``reason``."""
        self.count += len(stamps)
        first = self.first_ns
        self.first_ns = min(stamps) if first is None else min(first, *stamps)
        last = self.last_ns
        self.last_ns = max(stamps) if last is None else max(last, *stamps)
        self.reasons[reason] = None

    def note(self, pending: list[Row], connection_id: str, clock_ns: Callable[[], int]) -> bool:
        """Turn the span into a ``dropped`` row appended to the chunk's rows ``pending``
        and start a new span; a ``dropped`` row still in ``pending`` (its append failed)
        takes it in rather than a second row. Returns True when the row is a new one."""
        count, first, last = self.count, self.first_ns, self.last_ns
        reasons = self.reasons
        self.count = 0
        self.first_ns = self.last_ns = None
        self.reasons = {}
        earlier = self.unwritten
        new = True
        if earlier is not None and earlier[0] in pending:
            pending.remove(earlier[0])
            count += earlier[1]
            first = min((t for t in (earlier[2], first) if t is not None), default=None)
            last = max((t for t in (earlier[3], last) if t is not None), default=None)
            reasons = {**earlier[4], **reasons}
            new = False
        # bypasses the bound on purpose: the record of a loss must not itself be lost
        row = session_row(
            "dropped",
            received_at_ns=last if last is not None else clock_ns(),
            connection_id=connection_id,
            seq=-1,
            detail=f"{count} messages dropped: {'; '.join(reasons)}",
            gap_start_ns=first,
            gap_end_ns=last,
        )
        pending.append(row)
        self.unwritten = (row, count, first, last, reasons)
        return new
