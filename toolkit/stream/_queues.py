"""A cheap ``len()`` of an asyncio.Queue for the stream reader's per-message full check."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Sized
from typing import Any

__all__ = ["items_of"]


class _QueueLength:
    """``len()`` of an asyncio.Queue through its public ``qsize()``."""

    __slots__ = ("_queue",)

    def __init__(self, queue: asyncio.Queue[Any]) -> None:
        self._queue = queue

    def __len__(self) -> int:
        return self._queue.qsize()


def items_of(queue: asyncio.Queue[Any]) -> Sized:
    """What holds ``queue``'s items, for a ``len()`` without two method calls: the deque
    asyncio keeps them in, or (should a Python version keep them otherwise) ``qsize()``."""
    items = getattr(queue, "_queue", None)
    if isinstance(items, collections.deque) and len(items) == queue.qsize():
        return items
    return _QueueLength(queue)
