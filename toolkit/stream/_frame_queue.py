"""Messages taken straight from the frames a websockets connection has already received:
the stream reader's per-message saving.

``ClientConnection.recv()`` costs about a microsecond a message in Python (an ``await``
through the connection's ``Assembler``, its in-progress flag, a generator joining the
frames) even when the whole message is already queued, a third of what the bare
``websockets`` loop spends per message. When the head of the connection's frame queue is
a whole text frame, the reader takes it itself, doing for it exactly what
``Assembler.get`` does: pop it, let the flow control resume reading below the low-water
mark, decode its UTF-8. Anything else (an empty queue, a fragment, a binary frame, a text
that is not UTF-8, another reader inside ``recv()``) is left to ``recv()``, which waits,
reassembles, or fails the connection (1007) exactly as before. Frames are only ever taken
from the head, so the order of messages is the order received.

This reads three internals of websockets' asyncio client: ``recv_messages.frames.queue``
(the deque of received data frames), ``recv_messages.maybe_resume()`` and
``recv_messages.get_in_progress``; they are the same from websockets 14 to 17 (checked).
``queued_frames`` checks their shape when a connection opens and gives None when it
differs, so the reader then uses ``recv()`` alone; ``tests/stream/test_frame_queue.py`` fails
when the installed websockets no longer has them, so an upgrade that loses the saving is
noticed rather than silently slower.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

from websockets.frames import Frame, Opcode

__all__ = ["QueuedFrames", "queued_frames"]

#: the opcode of a text frame, compared by identity as websockets does
TEXT = Opcode.TEXT


@dataclass(frozen=True)
class QueuedFrames:
    """What the reader takes whole text frames from: the deque of frames the connection
    has received and not yet handed out, and its assembler (``get_in_progress``: another
    reader is inside ``recv()``; ``maybe_resume()``: the flow control after a pop)."""

    frames: collections.deque[Frame]
    assembler: Any


def queued_frames(ws: Any) -> QueuedFrames | None:
    """The received-frame queue of websockets connection ``ws``, or None when this
    websockets keeps it otherwise (the reader then uses ``recv()`` alone)."""
    assembler = getattr(ws, "recv_messages", None)
    frames = getattr(getattr(assembler, "frames", None), "queue", None)
    if (
        not isinstance(frames, collections.deque)
        or not callable(getattr(assembler, "maybe_resume", None))
        or not isinstance(getattr(assembler, "get_in_progress", None), bool)
    ):
        return None
    return QueuedFrames(frames, assembler)
