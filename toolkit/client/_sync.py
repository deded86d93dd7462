"""Sync twins of the async calls: run a coroutine on a private event-loop thread and wait,
which works the same in a plain script and inside a running loop (Jupyter). Never patches
asyncio.

``with_sync_twins`` gives every sync twin ``x`` of a class the signature and the docstring
of its async method ``ax`` (so ``help(client.load_orders)`` documents its parameters), and
raises the toolkit's errors from a sync call without the frames of this module and of
``concurrent.futures`` in between."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import re
import textwrap
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

from toolkit.client._docs import DOCS
from toolkit.errors import ToolkitError

T = TypeVar("T")
C = TypeVar("C", bound=type)
F = TypeVar("F", bound=Callable[..., Any])


#: how long an interrupted sync call waits for its coroutine to finish cancelling
CANCEL_WAIT_S = 30.0
#: how long stopping a loop thread waits for the tasks left on it to finish cancelling
STOP_WAIT_S = 10.0


class _Call:
    """One coroutine run for a sync caller: cancellable from the caller's thread whether
    or not it has started, and telling that thread when it is over (``ended``) and what
    it said about what it kept when cancelled (``notes``)."""

    def __init__(self) -> None:
        self.ended = threading.Event()
        self.notes: list[str] = []
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        self._task = asyncio.current_task()
        try:
            if self._cancelled:  # interrupted before it began
                coro.close()
                raise asyncio.CancelledError()
            return await coro
        except asyncio.CancelledError as exc:
            self.notes.extend(getattr(exc, "__notes__", ()))
            raise
        finally:
            self.ended.set()

    def cancel(self) -> None:
        """Cancel the run (call on its loop)."""
        self._cancelled = True
        if self._task is not None:
            self._task.cancel()


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

        An interrupt while waiting (KeyboardInterrupt: Ctrl-C in a script or a notebook;
        the command line's SIGTERM) cancels the coroutine and waits up to
        ``CANCEL_WAIT_S`` for it to finish cancelling (a store sync writes the bodies it
        fetched, locks are released), then raises the interrupt, carrying as notes what
        the coroutine said about what it kept (``exc.__notes__``). A second interrupt
        stops that wait.
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
        __tracebackhide__ = True  # IPython and pytest leave this frame out
        call = _Call()
        future = asyncio.run_coroutine_threadsafe(call.run(coro), loop)
        try:
            return future.result()
        except ToolkitError as exc:
            # the error as the caller should see it: raised here, not from the private
            # loop's frames and concurrent.futures' (its cause, if any, is kept)
            raise exc.with_traceback(None)  # noqa: B904 - the same error, not a new one
        except BaseException as interrupt:
            if not future.done():
                # the coroutine cleans up on its own loop: wait for it, so what it fetched
                # is kept and nothing of it is left pending when the loop stops
                with contextlib.suppress(RuntimeError, KeyboardInterrupt):
                    loop.call_soon_threadsafe(call.cancel)
                    call.ended.wait(CANCEL_WAIT_S)
            for note in call.notes:
                interrupt.add_note(note)
            raise

    def iterate(self, aiterator: AsyncIterator[T]) -> Iterator[T]:
        """A sync iterator over ``aiterator``, each step run on the private loop."""

        async def step() -> tuple[bool, T | None]:
            try:
                return True, await anext(aiterator)
            except StopAsyncIteration:
                return False, None

        __tracebackhide__ = True
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
        """Stop the loop and join the thread (idempotent). The tasks still on the loop
        are cancelled and waited for (up to ``STOP_WAIT_S``) and its async generators
        closed first, so none is destroyed pending and nothing runs on a closed loop."""
        with self._lock:
            self._stopped = True
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if thread is threading.current_thread():
            loop.call_soon(loop.stop)
            return
        if loop.is_running():
            finishing = asyncio.run_coroutine_threadsafe(_finish_tasks(), loop)
            with contextlib.suppress(Exception):
                finishing.result(STOP_WAIT_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()


async def _finish_tasks() -> None:
    """Cancel every other task of the running loop, wait for them, close its async
    generators (the connection pools: ``_close_at_loop_shutdown``)."""
    loop = asyncio.get_running_loop()
    tasks = [t for t in asyncio.all_tasks(loop) if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=STOP_WAIT_S)
    await loop.shutdown_asyncgens()


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


_AWAIT_CALL = re.compile(r"await (\w+)\.a(\w+)\(")
_ASYNC_FOR = re.compile(r"async for (\w+) in (\w+)\.a(\w+)\(")


def sync_doc(async_name: str, doc: str | None, own: str | None = None) -> str:
    """The docstring of a sync twin: the async method's ``doc``, with a note on how the
    twin runs (``own``, the twin's docstring, when it says more than "Sync twin of") and
    its examples written as sync calls."""
    doc = inspect.cleandoc(doc or "")
    summary, _, rest = doc.partition("\n")
    own = inspect.cleandoc(own or "")
    extra = re.sub(r"^sync twin of [^.]*\.\s*", "", own, flags=re.IGNORECASE)
    note = (
        f"Blocking twin of ``{async_name}``: same parameters, result and errors. It runs "
        "the call and waits for it, also inside Jupyter's running loop (on a private "
        f"loop thread); in async code, ``await client.{async_name}(...)`` instead."
    )
    if extra:
        note = f"{note} {extra}" if own != extra else extra
    note = textwrap.fill(" ".join(note.split()), width=88)
    body = _ASYNC_FOR.sub(r"for \1 in \2.\3(", rest)
    body = _AWAIT_CALL.sub(r"\1.\2(", body)
    return f"{summary}\n\n{note}\n{body}".rstrip() + "\n"


def sync_twin(async_method: Callable[..., Any]) -> Callable[[F], F]:
    """Decorate the sync twin of ``async_method``: it takes the async method's signature
    (with its own return annotation) and docstring, and a ToolkitError it raises shows
    the caller's call as its last frame, not the loop thread's."""

    def decorate(func: F) -> F:
        own = inspect.signature(func)

        @functools.wraps(func)
        def twin(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            try:
                return func(*args, **kwargs)
            except ToolkitError as exc:
                raise exc.with_traceback(None)  # noqa: B904 - the same error, re-raised

        del twin.__wrapped__  # help() and inspect read the signature given below
        signature = inspect.signature(async_method)
        twin.__signature__ = signature.replace(  # type: ignore[attr-defined]
            return_annotation=own.return_annotation
        )
        twin.__doc__ = sync_doc(async_method.__name__, async_method.__doc__, func.__doc__)
        twin.__sync_twin_of__ = async_method.__name__  # type: ignore[attr-defined]
        return twin  # type: ignore[return-value]

    return decorate


def with_sync_twins(cls: C) -> C:
    """Class decorator: every async method ``ax`` of ``cls`` (inherited ones too) with an
    entry in ``toolkit.client._docs.DOCS`` gets that docstring, and every method ``x``
    beside an ``ax`` becomes its documented sync twin (see ``sync_twin``)."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        func = getattr(cls, name)
        amethod = getattr(cls, "a" + name, None)
        if not (inspect.isfunction(func) and inspect.isfunction(amethod)):
            continue
        assert amethod is not None
        if "a" + name in DOCS:
            amethod.__doc__ = DOCS["a" + name]
        if getattr(func, "__sync_twin_of__", None) is None:
            setattr(cls, name, sync_twin(amethod)(func))
    return cls
