"""The session's public value types: its counters and the error of a closed session."""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.errors import ToolkitError


class StreamClosed(ToolkitError):
    """The session is closed (by the caller, or after an error that is not retried)."""


@dataclass(frozen=True, slots=True)
class StreamStats:
    """Counters of a session: data messages received, events dropped by full queues,
    reconnects done, the id of the current connection, messages ignored as malformed
    (not JSON, not an object, no channel, a field that cannot be converted, over
    ``max_message_bytes``; each logged) and failures of callbacks (each distinct one
    logged once)."""

    received: int
    dropped: int
    reconnects: int
    connection_id: str
    malformed: int = 0
    callback_errors: int = 0


__all__ = ["StreamClosed", "StreamStats"]
