"""toolkit/_aio.py: ``wait_for`` keeps a cancel that arrives as what it awaits finishes
(Python 3.11's ``asyncio.wait_for`` loses it: a recorder stopped just as its subscription
was confirmed then waited for its stream forever), and no module uses the stdlib one."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from toolkit._aio import wait_for

ROOT = Path(__file__).resolve().parents[1]


def _cancel_as_it_finishes(wait: Callable[[Awaitable[Any], float], Awaitable[Any]]) -> list[str]:
    """The caller is cancelled in the loop iteration where its awaited future gets its
    result; what the caller did next."""
    seen: list[str] = []

    async def main() -> None:
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def caller() -> None:
            seen.append(f"got {await wait(fut, 3600.0)}")
            seen.append("ran on")  # the stop was lost

        task = asyncio.create_task(caller())
        await asyncio.sleep(0)  # the caller's first step: it waits on the future
        assert not task.done() and not seen
        fut.set_result(1)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            seen.append("cancelled")

    asyncio.run(main())
    return seen


def test_a_cancel_as_the_awaited_finishes_is_kept() -> None:
    assert _cancel_as_it_finishes(wait_for) == ["cancelled"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12's asyncio.wait_for keeps it")
def test_the_stdlib_wait_for_of_3_11_loses_it() -> None:
    assert _cancel_as_it_finishes(asyncio.wait_for) == ["got 1", "ran on"]


def test_a_timeout_cancels_the_awaited_and_raises() -> None:
    async def main() -> None:
        never: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        with pytest.raises(TimeoutError):
            await wait_for(never, 0.0)
        assert never.cancelled()
        assert await wait_for(asyncio.sleep(0, "ok"), None) == "ok"

    asyncio.run(main())


def test_no_module_uses_asyncio_wait_for() -> None:
    used = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "toolkit").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\basyncio\.wait_for\(", line)
    ]
    assert used == []
