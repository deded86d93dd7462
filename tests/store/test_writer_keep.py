"""The store sync's last write after a failure or an interrupt (``_writer.keep``): it runs
to its end even when the task is cancelled again meanwhile (a second Ctrl-C), then the
interrupt goes on; a write that fails is logged, never raised over the first error."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import pytest

from toolkit.store._writer import Writer, keep


class SpyWriter:
    """Stands for a Writer: its flush waits for ``release`` and records that it ended."""

    def __init__(self, fail: bool = False) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.flushed = False
        self.written = 7
        self.fail = fail

    async def flush(self) -> None:
        self.started.set()
        await self.release.wait()
        if self.fail:
            raise OSError(28, "No space left on device")
        self.flushed = True
        self.written += 3


def test_a_second_cancel_does_not_cut_the_write_short() -> None:
    async def main() -> None:
        writer = SpyWriter()

        async def interrupted_sync() -> int:
            try:
                raise asyncio.CancelledError()  # the first interrupt
            except asyncio.CancelledError:
                return await keep(cast(Writer, writer))

        task = asyncio.create_task(interrupted_sync())
        await writer.started.wait()
        task.cancel()  # a second Ctrl-C while the bodies are written
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.sleep(0)
        assert not task.done()  # still writing
        writer.release.set()
        assert await task == 10 and writer.flushed

    asyncio.run(main())


def test_a_failed_write_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> Any:
        writer = SpyWriter(fail=True)
        writer.release.set()
        return await keep(cast(Writer, writer))

    with caplog.at_level(logging.WARNING, logger="toolkit.store"):
        assert asyncio.run(main()) == 7
    assert "could not keep the orders fetched" in caplog.text and "No space" in caplog.text
