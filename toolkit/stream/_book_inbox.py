"""The notifications an ``OrderBook.run`` has received and not applied yet: bounded, so a
flood while a reconcile waits on REST costs no more than ``size`` events of memory."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Container

from toolkit.stream._events import OrderEvent, SessionEvent

__all__ = ["BookInbox"]


class BookInbox:
    """What the session hands the book (through ``take``, a session callback), for the
    book's loop to apply.

    Order notifications wait in ``events`` until the loop applies them, or in ``held``
    while a reconcile re-reads their order (``drain``), until its REST answer is applied
    (``release``): a notification that came during the read is then judged as one after
    the REST read, as the book's tie rules expect. At most ``size`` wait in both: one more
    is dropped and handed to ``on_drop``, and a reconcile is asked for
    (``reconcile_wanted``), since REST is the source of truth. A ``gap`` asks for one too,
    and is noted in ``gap_at`` (``time.monotonic()`` when it was taken). A connection
    lost is noted in ``lost``: the loop reconciles then too, without waiting for the
    reconnection (a service gone altogether never reconnects, and never gives a gap).
    Session events are not kept: the loop reads the session's state itself. ``wake`` is
    set whenever there is something new for the loop to look at.
    """

    __slots__ = (
        "events",
        "gap_at",
        "held",
        "lost",
        "on_drop",
        "reconcile_wanted",
        "size",
        "wake",
    )

    def __init__(self, size: int, on_drop: Callable[[OrderEvent], None]) -> None:
        self.size = size
        self.on_drop = on_drop
        self.events: deque[OrderEvent] = deque()
        self.held: deque[OrderEvent] = deque()
        self.reconcile_wanted = False
        self.gap_at: float | None = None
        self.lost = False
        self.wake = asyncio.Event()

    def take(self, event: object) -> None:
        """A session callback: keep an order notification (or drop it when full), note
        a gap, wake the loop for any session event (e.g. the end of the session)."""
        if isinstance(event, OrderEvent):
            if len(self.events) + len(self.held) < self.size:
                self.events.append(event)
            else:
                self.reconcile_wanted = True
                self.on_drop(event)
        elif isinstance(event, SessionEvent):
            if event.kind == "gap":
                self.reconcile_wanted = True
                self.gap_at = time.monotonic()
            elif event.kind == "disconnected":
                self.lost = True
        else:
            return
        self.wake.set()

    def ask_reconcile(self) -> None:
        """Ask the loop for a reconcile (the periodic one is due)."""
        self.reconcile_wanted = True
        self.wake.set()

    def drain(self, apply: Callable[[OrderEvent], object], reading: Container[str] | None) -> None:
        """Apply the waiting notifications in order, holding those of an order ``reading``
        (the orders a running reconcile re-reads) has."""
        events = self.events
        while events:
            event = events.popleft()
            if reading is not None and event.order_id in reading:
                self.held.append(event)
            else:
                apply(event)

    def release(self, apply: Callable[[OrderEvent], object]) -> None:
        """Apply the held notifications in order (their orders' REST answers are in)."""
        held = self.held
        while held:
            apply(held.popleft())
