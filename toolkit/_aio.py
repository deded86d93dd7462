"""``wait_for`` without the flaw of Python 3.11's ``asyncio.wait_for``.

In 3.11, when what ``asyncio.wait_for`` awaits finishes in the same loop iteration as the
caller is cancelled, it returns the result and the cancel is lost: the caller runs on as if
it had never been stopped. A recorder stopped just as its subscription was confirmed then
waited for its stream forever (seen under load). ``asyncio.timeout`` keeps the cancel, and
3.12 rebuilt ``wait_for`` on it; this is that ``wait_for``, for 3.11 as well.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["wait_for"]

T = TypeVar("T")


async def wait_for(aw: Awaitable[T], timeout: float | None) -> T:
    """``await aw`` within ``timeout`` seconds (None: no limit); ``TimeoutError`` after
    that, with ``aw`` cancelled. A cancel of the caller is never lost."""
    async with asyncio.timeout(timeout):
        return await aw
