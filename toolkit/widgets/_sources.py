"""Adapters that turn what a user hands a live view (a client, a recording path, a replay
iterator, a plain list of events) into one async stream of typed events."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

# (channel name as the service spells it, subscribe data)
Subscription = tuple[str, Mapping[str, Any]]
# called with the subscription that failed and its error, instead of raising it
OnSubscribeError = Callable[[Subscription, Exception], None]

# A sync iterable gives the loop a turn every this many events, so a long replay never
# freezes the kernel while it feeds a view.
_YIELD_EVERY = 256


def is_client(source: object) -> bool:
    """True for a live client (anything with ``stream()`` and the async REST calls)."""
    return callable(getattr(source, "stream", None)) and callable(
        getattr(source, "afetch_order", None)
    )


def is_recording_path(source: object) -> bool:
    return isinstance(source, str | os.PathLike)


def is_session(source: object) -> bool:
    """True for an already-open stream session (``client.stream()`` entered)."""
    return callable(getattr(source, "subscribe", None)) and hasattr(source, "__aiter__")


def describe_source(source: object) -> str:
    """Short label for the view's status line; never includes credentials."""
    if is_client(source):
        return "live"
    if is_recording_path(source):
        return "replay"
    if is_session(source):
        return "live"
    return "replay"


async def aiter_events(
    source: object,
    subscriptions: Sequence[Subscription],
    *,
    speed: float | None = None,
    on_subscribe_error: OnSubscribeError | None = None,
) -> AsyncIterator[Any]:
    """Yield the events of ``source`` in order.

    A client gets its own ``client.stream()`` session with ``subscriptions`` made (each
    waits for its confirmation); an open session is subscribed and read; a path is replayed
    with ``toolkit.replay``; any other (async) iterable is read as is. Recorded events are
    yielded as fast as possible unless ``speed`` is given, in which case the gaps between
    their ``received_at_ns`` are slept, divided by ``speed``. Cancelling the consumer
    closes the session. With ``on_subscribe_error``, a subscription that fails (a bad or
    unknown symbol, a permission denied) is reported to it and the others go on; without
    it the error is raised.
    """
    if is_client(source):
        async with source.stream() as session:  # type: ignore[attr-defined]
            await _subscribe_all(session, subscriptions, on_subscribe_error)
            async for event in session:
                yield event
        return
    if is_session(source):
        await _subscribe_all(source, subscriptions, on_subscribe_error)
        async for event in source:  # type: ignore[attr-defined]
            yield event
        return
    if is_recording_path(source):
        from toolkit.recording._replay import replay

        source = replay(source)  # type: ignore[arg-type]
    async for event in _paced(_as_async(source), speed):
        yield event


async def _subscribe_all(
    session: Any, subscriptions: Sequence[Subscription], on_error: OnSubscribeError | None
) -> None:
    for channel, data in subscriptions:
        try:
            await session.subscribe(channel, **dict(data))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if on_error is None:
                raise
            on_error((channel, data), exc)


async def _as_async(source: object) -> AsyncIterator[Any]:
    if isinstance(source, AsyncIterable):
        async for event in source:
            yield event
        return
    if isinstance(source, Iterable):
        for n, event in enumerate(source, 1):
            yield event
            if n % _YIELD_EVERY == 0:
                await asyncio.sleep(0)
        return
    raise TypeError(
        "a live view needs a client, a recording path, or an iterable of events; "
        f"got {type(source).__name__}"
    )


async def _paced(events: AsyncIterator[Any], speed: float | None) -> AsyncIterator[Any]:
    if speed is None:
        async for event in events:
            yield event
        return
    if not speed > 0:
        raise ValueError(f"speed must be positive, got {speed!r}")
    first_ns: int | None = None
    started = time.monotonic()
    async for event in events:
        at_ns = getattr(event, "received_at_ns", None)
        if isinstance(at_ns, int):
            if first_ns is None:
                first_ns = at_ns
            wait = (at_ns - first_ns) / 1e9 / speed - (time.monotonic() - started)
            if wait > 0:
                await asyncio.sleep(wait)
        yield event
