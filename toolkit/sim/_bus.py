"""In-process fan-out from the simulator's engine and REST handlers to its WebSocket
connections. Everything runs on the server's one event loop, so no locks are needed."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

# Topics: ("watchorders", account), ("watchbalance", account),
#         ("watchticker", "BTC/BRL"), ("watchtickers", None)
Topic = tuple[str, str | None]


@dataclass(eq=False)
class Subscriber:
    """One WebSocket connection's mailbox. Best effort, like the service: when the
    connection falls behind by ``maxsize`` messages, newer ones are dropped."""

    account: str
    queue: asyncio.Queue[tuple[Topic, Any]]
    #: set by ``Bus.drop_all``; the connection handler closes the socket when it fires
    dropped: asyncio.Event = field(default_factory=asyncio.Event)
    drop_reason: str = ""
    lost: int = 0


class Bus:
    def __init__(self, maxsize: int = 10_000) -> None:
        self._maxsize = maxsize
        self._subs: set[Subscriber] = set()

    def attach(self, account: str) -> Subscriber:
        sub = Subscriber(account, asyncio.Queue(self._maxsize))
        self._subs.add(sub)
        return sub

    def detach(self, sub: Subscriber) -> None:
        self._subs.discard(sub)

    @property
    def connections(self) -> int:
        return len(self._subs)

    def publish(self, topic: Topic, message: Any, account: str | None = None) -> None:
        """Offer ``message`` to every connection (of ``account`` when given). The
        connection handler keeps only topics it is subscribed to."""
        for sub in self._subs:
            if account is not None and sub.account != account:
                continue
            try:
                sub.queue.put_nowait((topic, message))
            except asyncio.QueueFull:
                sub.lost += 1

    def drop_all(self, reason: str = "forced disconnect") -> int:
        """Ask every connection to close abruptly (fault injection). Returns how many."""
        for sub in self._subs:
            sub.drop_reason = reason
            sub.dropped.set()
        return len(self._subs)
