"""Sync twins of the async calls: run a coroutine on a private event-loop thread and wait,
which works the same in a plain script and inside a running loop (Jupyter). Never patches
asyncio."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A private event loop on a daemon thread, started on first use.

    One per client, so the connection pool it holds is reused by every sync call. Calling
    :meth:`run` from that loop's own thread would deadlock, so it raises instead.
    """

    def __init__(self, name: str = "toolkit-loop") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._stopped:
                raise RuntimeError("the loop thread is stopped")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=main, name=self._name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def in_own_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the private loop and wait for its result (or its exception).

        KeyboardInterrupt while waiting cancels the coroutine.
        """
        if self.in_own_thread():
            coro.close()
            raise RuntimeError(
                "a sync toolkit call was made from the client's own loop thread; await the "
                "async twin (a... method) instead"
            )
        try:
            loop = self._ensure()
        except RuntimeError:
            coro.close()
            raise
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                future.cancel()
            raise

    def iterate(self, aiterator: AsyncIterator[T]) -> Iterator[T]:
        """A sync iterator over ``aiterator``, each step run on the private loop."""

        async def step() -> tuple[bool, T | None]:
            try:
                return True, await anext(aiterator)
            except StopAsyncIteration:
                return False, None

        try:
            while True:
                more, item = self.run(step())
                if not more:
                    return
                yield item  # type: ignore[misc]
        finally:
            aclose = getattr(aiterator, "aclose", None)
            if aclose is not None and not self._stopped:
                with contextlib.suppress(Exception):
                    self.run(aclose())

    def stop(self) -> None:
        """Stop the loop and join the thread (idempotent)."""
        with self._lock:
            self._stopped = True
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if thread is threading.current_thread():
            loop.call_soon(loop.stop)
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()


_shared = LoopThread("toolkit-shared-loop")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code: ``asyncio.run`` when no loop runs in
    this thread, else on a shared private loop thread (a running loop cannot be
    re-entered without patching asyncio, which we never do)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return _shared.run(coro)
