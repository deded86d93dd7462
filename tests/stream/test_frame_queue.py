"""Tests of the reader taking whole text frames straight from the connection's frame
queue (``toolkit.stream._frame_queue``): sans-I/O on a fake connection with websockets'
shape for what the frame queue can hold (fragments, binary, not UTF-8, a memoryview,
another reader inside recv()), and against a real websockets server on loopback for the
order, the flow control and the close code of a text frame that is not UTF-8."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame, Opcode

from toolkit.stream._connection import Connection
from toolkit.stream._frame_queue import QueuedFrames, queued_frames
from toolkit.stream._session import StreamSession


class _Client:
    class settings:  # what the session reads of a client
        ws_url = "ws://fake"

    profile = None


class _Assembler:
    """websockets' Assembler as the reader sees it: the queue of received data frames."""

    def __init__(self, frames: list[Frame]) -> None:
        self.frames = type("SimpleQueue", (), {})()
        self.frames.queue = collections.deque(frames)
        self.get_in_progress = False
        self.resumed = 0

    def maybe_resume(self) -> None:
        self.resumed += 1


class _FakeWS:
    """A connection whose recv() does what websockets' does with the queued frames (joins
    a fragmented message, decodes a text one, fails on text that is not UTF-8), counting
    its calls; the queue ends the connection once empty."""

    def __init__(self, frames: list[Frame]) -> None:
        self.recv_messages = _Assembler(frames)
        self.recv_calls = 0

    async def recv(self) -> str | bytes:
        self.recv_calls += 1
        queue = self.recv_messages.frames.queue
        if not queue:
            raise ConnectionClosed(None, None)
        parts = [queue.popleft()]
        while not parts[-1].fin:
            parts.append(queue.popleft())
        data = b"".join(bytes(f.data) for f in parts)
        if parts[0].opcode is Opcode.TEXT:
            try:
                return data.decode()
            except UnicodeDecodeError:
                raise ConnectionClosed(None, None) from None  # websockets: close 1007
        return data


def _text(i: int) -> str:
    return f'{{"channel":"watchticker","message":{{"symbol":"BTC/BRL","n":{i}}}}}'


def _read(ws: _FakeWS) -> list[str]:
    """The texts the reader hands a raw callback, reading ``ws`` until it ends."""
    session = StreamSession(_Client(), queue_size=0, ping_interval=None)  # type: ignore[arg-type]
    texts: list[str] = []
    session.add_raw_callback(lambda text, ns, conn, seq: texts.append(text))

    async def run() -> None:
        with pytest.raises(ConnectionClosed):
            await session._read(Connection(ws, "c1", 0.0))  # type: ignore[arg-type]

    asyncio.run(run())
    return texts


def test_whole_text_frames_are_taken_from_the_queue_without_recv() -> None:
    ws = _FakeWS([Frame(Opcode.TEXT, _text(i).encode()) for i in range(50)])
    assert _read(ws) == [_text(i) for i in range(50)]
    # one recv() only: the one that found the queue empty (the connection's end)
    assert ws.recv_calls == 1
    assert ws.recv_messages.resumed == 50  # the flow control is told after every pop


def test_what_is_not_a_whole_text_frame_goes_through_recv_in_order() -> None:
    frames = [
        Frame(Opcode.TEXT, _text(0).encode()),
        Frame(Opcode.TEXT, _text(1).encode()[:10], fin=False),  # a fragmented message
        Frame(Opcode.CONT, _text(1).encode()[10:]),
        Frame(Opcode.TEXT, _text(2).encode()),
        Frame(Opcode.BINARY, b"\x00\x01"),  # binary: recv() hands bytes, never a text
        Frame(Opcode.TEXT, memoryview(_text(3).encode())),  # data without decode()
        Frame(Opcode.TEXT, "café".encode()),  # UTF-8 beyond ASCII is taken
        Frame(Opcode.TEXT, _text(4).encode()),
    ]
    ws = _FakeWS(frames)
    texts = _read(ws)
    assert [t for t in texts if t.startswith("{")] == [_text(i) for i in range(5)]
    # fragment, binary, memoryview and the end: recv(); the four others: taken
    assert ws.recv_calls == 4
    assert ws.recv_messages.resumed == 4


def test_text_that_is_not_utf8_is_left_to_recv_which_ends_the_connection() -> None:
    bad = Frame(Opcode.TEXT, b'{"channel":"x\xff"}')
    ws = _FakeWS([Frame(Opcode.TEXT, _text(0).encode()), bad, Frame(Opcode.TEXT, b"{}")])
    assert _read(ws) == [_text(0)]
    assert ws.recv_calls == 1  # the bad frame was left for recv(), which refused it
    assert list(ws.recv_messages.frames.queue) == [Frame(Opcode.TEXT, b"{}")]


def test_another_reader_inside_recv_is_left_alone() -> None:
    ws = _FakeWS([Frame(Opcode.TEXT, _text(i).encode()) for i in range(3)])
    ws.recv_messages.get_in_progress = True
    assert _read(ws) == [_text(i) for i in range(3)]
    assert ws.recv_calls == 4 and ws.recv_messages.resumed == 0


@pytest.mark.parametrize(
    "shape",
    ["no assembler", "queue not a deque", "no maybe_resume", "get_in_progress not a bool"],
)
def test_another_websockets_shape_means_recv_alone(shape: str) -> None:
    ws = _FakeWS([Frame(Opcode.TEXT, _text(i).encode()) for i in range(3)])
    asm: Any = ws.recv_messages
    if shape == "no assembler":
        ws.__dict__["recv_messages"] = None
    elif shape == "queue not a deque":
        asm.frames.queue = list(asm.frames.queue)
    elif shape == "no maybe_resume":
        asm.maybe_resume = None
    else:
        asm.get_in_progress = 0
    assert queued_frames(ws) is None


def test_the_reader_uses_recv_alone_when_the_shape_differs() -> None:
    ws = _FakeWS([Frame(Opcode.TEXT, _text(i).encode()) for i in range(3)])
    ws.recv_messages.get_in_progress = None  # type: ignore[assignment]
    assert _read(ws) == [_text(i) for i in range(3)]
    assert ws.recv_calls == 4 and ws.recv_messages.resumed == 0


# ------------------------------------------------------- against a websockets server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


BURST = 5_000


async def _burst(ws: ServerConnection) -> None:
    """A burst far above the client's max_queue (64 frames), a fragmented message in the
    middle, then a text frame that is not UTF-8, then one more that must never arrive."""
    for i in range(BURST):
        if i == BURST // 2:
            text = _text(i)
            await ws.send([text[:7], text[7:20], text[20:]])  # three frames
        else:
            await ws.send(_text(i))
    await ws.send(b'{"bad":"\xff"}', text=True)
    await ws.send(_text(BURST))
    await ws.wait_closed()


@pytest.fixture
async def burst_url() -> AsyncIterator[str]:
    async with serve(_burst, "127.0.0.1", 0) as server:
        yield f"ws://127.0.0.1:{next(iter(server.sockets)).getsockname()[1]}"


@pytest.fixture
def recv_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    calls = [0]
    recv = ClientConnection.recv

    async def counting(self: ClientConnection, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return await recv(self, *args, **kwargs)

    monkeypatch.setattr(ClientConnection, "recv", counting)
    yield calls


@pytest.mark.anyio
async def test_a_burst_arrives_whole_in_order_and_a_bad_frame_closes_with_1007(
    burst_url: str, recv_calls: list[int]
) -> None:
    session = StreamSession(_Client(), queue_size=0, ping_interval=None)  # type: ignore[arg-type]
    texts: list[str] = []
    session.add_raw_callback(lambda text, ns, conn, seq: texts.append(text))
    async with connect(burst_url, max_queue=64) as ws:
        queued = queued_frames(ws)
        # the installed websockets keeps the frames as the reader expects: when an
        # upgrade changes that, this fails, rather than the reader getting slower unseen
        assert isinstance(queued, QueuedFrames)
        assert queued.frames is ws.recv_messages.frames.queue
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(session._read(Connection(ws, "c1", 0.0)), 30)
        assert ws.protocol.close_sent is not None and ws.protocol.close_sent.code == 1007
    # every message, in order, the fragmented one whole; none after the bad frame; reading
    # never stalled (a pop that did not resume the paused reading would hang it here)
    assert texts == [_text(i) for i in range(BURST)]
    assert recv_calls[0] < BURST // 5  # most were taken from the queue
