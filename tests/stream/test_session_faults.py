"""Faults a stream session meets, with a tiny server of our own on 127.0.0.1 (answers the
simulator never gives) or the reader fed directly: a server that accepts then drops
(the backoff keeps growing, no reconnect storm), ``subscribed`` announced before the data
that followed the confirmation, frames that are not objects and unsolicited refusals
(logged and counted), a callback failing on every message (one traceback, counted)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from types import SimpleNamespace
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from toolkit.profile import DEFAULT_PROFILE
from toolkit.stream._channels import Backoff
from toolkit.stream._events import Event, OrderEvent, SessionEvent
from toolkit.stream._keepalive import Connection
from toolkit.stream._session import StreamSession

MS = 1_767_225_600_000
ORDER = json.dumps(
    {"channel": "watchorders", "message": {"id": "o1", "status": "OPEN", "updatedAt": MS}},
    separators=(",", ":"),
)


class FakeClient:
    """What a session needs of a client: settings, a profile and tokens."""

    def __init__(self, url: str) -> None:
        self.settings = SimpleNamespace(ws_url=url)
        self.profile = DEFAULT_PROFILE

    async def atoken(self) -> str:
        return "T0KEN"


def confirmation(text: str) -> str:
    msg = json.loads(text)
    verb = "subscribed to" if msg["action"] == "subscribe" else "unsubscribed from"
    return json.dumps({"success": True, "message": f"Successfully {verb} channel: watchorders"})


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


Handler = Callable[[ServerConnection], Awaitable[None]]


async def _serve(handler: Handler) -> AsyncIterator[str]:
    async with serve(handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}"


# ------------------------------------------------------------------ backoff (fault #3)


async def _accept_confirm_drop(ws: ServerConnection) -> None:
    """A flapping service: every connection is confirmed, then closed at once."""
    async for text in ws:
        await ws.send(confirmation(text))
        await ws.close()


@pytest.fixture
async def flapping() -> AsyncIterator[str]:
    async for url in _serve(_accept_confirm_drop):
        yield url


async def _reconnect_delays(url: str, backoff: Backoff, count: int) -> list[float]:
    """The delays the session waits before its first ``count`` reconnects."""
    delays: list[float] = []
    enough = asyncio.Event()

    async def sleep(delay: float) -> None:  # the fake clock of the backoff
        delays.append(delay)
        if len(delays) >= count:
            enough.set()
            await asyncio.Event().wait()  # no further reconnect: the test has its answer

    session = StreamSession(
        FakeClient(url), backoff=backoff, sleep=sleep, ping_interval=None, queue_size=0
    )  # type: ignore[arg-type]
    async with session:
        await session.subscribe("watchOrders")
        await asyncio.wait_for(enough.wait(), 10.0)
        assert session.stats.reconnects == count - 1
    return delays


@pytest.mark.anyio
async def test_backoff_keeps_growing_against_a_server_that_accepts_then_drops(
    flapping: str,
) -> None:
    backoff = Backoff(initial=1.0, maximum=8.0, jitter=0.0)
    delays = await _reconnect_delays(flapping, backoff, 6)
    # each connection was up (and resubscribed) for a moment only: no fresh start
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


@pytest.mark.anyio
async def test_backoff_starts_again_after_a_connection_that_stayed_healthy(
    flapping: str,
) -> None:
    # every connection counts as healthy at once: each reconnect starts from initial
    backoff = Backoff(initial=1.0, maximum=8.0, jitter=0.0, healthy_after=0.0)
    assert await _reconnect_delays(flapping, backoff, 4) == [1.0, 1.0, 1.0, 1.0]


def test_backoff_resets_only_after_healthy_after_seconds_up() -> None:
    backoff = Backoff(initial=1.0, maximum=8.0, jitter=0.0)
    assert backoff.healthy_after == 8.0  # the default: the maximum delay
    assert [backoff.next_delay() for _ in range(3)] == [1.0, 2.0, 4.0]
    backoff.connection_lost(up_for=7.9)
    assert backoff.next_delay() == 8.0
    backoff.connection_lost(up_for=8.0)
    assert backoff.next_delay() == 1.0
    with pytest.raises(ValueError, match="healthy_after"):
        Backoff(healthy_after=float("nan"))


# ------------------------------------------------- subscribed before its data (fault #8)


async def _confirm_with_data(ws: ServerConnection) -> None:
    """Confirms and sends data in one TCP write, so both reach the reader together."""
    async for text in ws:
        ws.protocol.send_text(confirmation(text).encode())
        for _ in range(3):
            ws.protocol.send_text(ORDER.encode())
        ws.transport.write(b"".join(ws.protocol.data_to_send()))


@pytest.fixture
async def eager() -> AsyncIterator[str]:
    async for url in _serve(_confirm_with_data):
        yield url


@pytest.mark.anyio
async def test_subscribed_comes_before_the_data_that_followed_the_confirmation(
    eager: str,
) -> None:
    got: list[Event] = []
    three = asyncio.Event()

    def take(event: Event) -> None:
        got.append(event)
        if sum(isinstance(e, OrderEvent) for e in got) == 3:
            three.set()

    async with StreamSession(FakeClient(eager), ping_interval=None) as session:  # type: ignore[arg-type]
        session.add_callback(take)
        assert await session.subscribe("watchOrders") == "watchorders"
        await asyncio.wait_for(three.wait(), 5.0)
    kinds = [e.kind if isinstance(e, SessionEvent) else "data" for e in got]
    assert kinds[:4] == ["subscribed", "data", "data", "data"], kinds
    first = got[0].seq  # after ``connected``: one counter for session events and data
    assert [e.seq for e in got[:4]] == [first, first + 1, first + 2, first + 3]
    assert isinstance(got[0], SessionEvent) and got[0].detail == "watchorders"


# ------------------------------------------------------- the reader, no I/O (#6, #1)


class _FakeWS:
    def __init__(self, texts: Iterable[str]) -> None:
        self.texts = iter(texts)

    async def recv(self) -> str:
        for text in self.texts:
            return text
        raise ConnectionClosed(None, None)


def _session(queue_size: int = 0) -> StreamSession:
    return StreamSession(FakeClient("ws://fake"), queue_size=queue_size, ping_interval=None)  # type: ignore[arg-type]


def _read(session: StreamSession, texts: Iterable[str]) -> None:
    conn = Connection(_FakeWS(texts), "c1", 0.0)  # type: ignore[arg-type]

    async def run() -> None:
        with pytest.raises(ConnectionClosed):
            await session._read(conn)

    asyncio.run(run())


def test_frames_that_are_not_objects_are_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    session = _session()
    got: list[Event] = []
    session.add_callback(got.append)
    frames = ["[1, 2, 3]", '"just a string"', "null", "42", '[{"channel":"watchticker"}]']
    with caplog.at_level(logging.WARNING, "toolkit.stream"):
        _read(session, [*frames, ORDER])
    assert [type(e).__name__ for e in got] == ["OrderEvent"]
    assert session.stats.malformed == 5 and session.stats.received == 1
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "ignored a JSON list that is not an object on c1",
        "ignored a JSON str that is not an object on c1",
        "ignored a JSON null that is not an object on c1",
        "ignored a JSON int that is not an object on c1",
        "ignored a JSON list that is not an object on c1",
    ]


def test_an_unsolicited_refusal_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    session = _session()
    revoked = json.dumps({"success": False, "message": "your subscription was revoked"})
    stray = json.dumps({"success": True, "message": "Successfully subscribed to channel: x"})
    with caplog.at_level(logging.DEBUG, "toolkit.stream"):
        _read(session, [revoked, stray])
    levels = {r.getMessage(): r.levelno for r in caplog.records}
    assert levels == {
        "ignored a failure reply on c1 that answers nothing outstanding: "
        "'your subscription was revoked'": logging.WARNING,
        "ignored a confirmation reply on c1 that answers nothing outstanding: "
        "'Successfully subscribed to channel: x'": logging.DEBUG,
    }


@pytest.mark.parametrize("typed", [False, True], ids=["raw-path", "typed-path"])
def test_a_callback_failing_on_every_message_is_logged_once_and_counted(
    typed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A recorder on a full disk fails the same way on every message: one traceback."""
    session = _session()
    if typed:  # the raw callback then runs beside the typed dispatch (_dispatch_raw)
        session.add_callback(lambda e: None)
    seen: list[int] = []

    def full_disk(text: str, ns: int, conn: str, seq: int) -> None:
        seen.append(seq)
        if seq == 4:
            raise RuntimeError("another failure")
        raise OSError(28, "No space left on device")

    session.add_raw_callback(full_disk)
    with caplog.at_level(logging.WARNING, "toolkit.stream"):
        _read(session, [ORDER] * 6)
        asyncio.run(session.aclose())  # the end of the session says what was not logged
    assert seen == [1, 2, 3, 4, 5, 6]  # every message still reached it
    assert session.stats.callback_errors == 6 and session.stats.received == 6
    failures = [r for r in caplog.records if "a raw stream callback failed" in r.getMessage()]
    assert [r.exc_info[1].__class__ for r in failures if r.exc_info] == [OSError, RuntimeError]
    summary = [r.getMessage() for r in caplog.records if "in all" in r.getMessage()]
    assert summary == [
        "stream callbacks failed 6 times in all; 4 of the failures were not logged "
        "(repeats of one logged before)"
    ]


def test_callback_failures_of_different_callbacks_are_each_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    session = _session()

    def boom(event: Any) -> None:
        raise RuntimeError("callback bug")

    session.add_callback(boom)
    session.add_callback(lambda event: boom(event))
    with caplog.at_level(logging.ERROR, "toolkit.stream"):
        _read(session, [ORDER] * 3)
    failures = [r for r in caplog.records if "a stream callback failed" in r.getMessage()]
    assert len(failures) == 2 and session.stats.callback_errors == 6
