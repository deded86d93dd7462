"""A WebSocket message over the session's ``max_message_bytes`` (websockets' ``max_size``),
with a tiny server of our own on 127.0.0.1: the default takes what websockets' own 1 MiB
did not, a larger one is said (warning, ``disconnected``/``gap`` details, the end of the
session) and counted, and the same failure on the next connection ends the session with
a TransportError naming the setting instead of reconnecting for ever; the end of a
connection described without I/O; the setting from ``Recorder`` and ``toolkit record``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed, ConnectionClosedError
from websockets.frames import Close

from toolkit.cli import build_parser
from toolkit.cli._record import _stream_options
from toolkit.errors import InvalidRequest, TransportError
from toolkit.profile import DEFAULT_PROFILE
from toolkit.recording._read import read_recording
from toolkit.recording._recorder import Recorder
from toolkit.sim import Simulator
from toolkit.stream._channels import Backoff
from toolkit.stream._events import Event, SessionEvent, TickerEvent
from toolkit.stream._keepalive import _describe_end, too_big_error
from toolkit.stream._session import StreamSession

LIMIT = 64 * 1024
#: websockets' own default max_size, which the session used to leave in place
WEBSOCKETS_DEFAULT = 2**20
MS = 1_767_225_600_000


def ticker(bid: int, pad: int = 0) -> str:
    message = {"symbol": "BTC/BRL", "bid": str(bid), "ask": "2", "last": "1", "timestamp": MS}
    if pad:
        message["note"] = "x" * pad
    return json.dumps({"channel": "watchticker", "message": message}, separators=(",", ":"))


class FakeClient:
    """What a session needs of a client: settings, a profile and tokens."""

    def __init__(self, url: str, **settings: Any) -> None:
        self.settings = SimpleNamespace(ws_url=url, **settings)
        self.profile = DEFAULT_PROFILE

    async def atoken(self) -> str:
        return "T0KEN"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _server(
    big: int, on_connections: Callable[[int], bool], early: bool = False
) -> Callable[..., Any]:
    """A service that confirms a subscribe, then sends bid 1, a ticker of ``big`` bytes
    (on the connections ``on_connections(n)`` picks), then bids 3 and 4; ``early``: the
    big one comes before the confirmation on the connections after the first."""
    count = 0

    async def handler(ws: ServerConnection) -> None:
        nonlocal count
        count += 1
        n = count
        with contextlib.suppress(ConnectionClosed):  # the client's 1009
            await answer(ws, n)

    async def answer(ws: ServerConnection, n: int) -> None:
        async for text in ws:
            msg = json.loads(text)
            if msg.get("action") == "ping":
                await ws.send(json.dumps({"success": True, "message": "pong"}))
                continue
            confirmed = "Successfully subscribed to channel: watchticker#btcbrl"
            if early and n > 1:
                await ws.send(ticker(2, pad=big))
            await ws.send(json.dumps({"success": True, "message": confirmed}))
            await ws.send(ticker(1))
            if on_connections(n):
                await ws.send(ticker(2, pad=big))
            await ws.send(ticker(3))
            await ws.send(ticker(4))

    return handler


async def _serve(handler: Callable[..., Any]) -> AsyncIterator[str]:
    # no compression: websockets then says the size of the frame it refused
    async with serve(handler, "127.0.0.1", 0, max_size=None, compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}"


@pytest.fixture
async def big_every_time() -> AsyncIterator[str]:
    async for url in _serve(_server(100_000, lambda n: True)):
        yield url


@pytest.fixture
async def big_once() -> AsyncIterator[str]:
    async for url in _serve(_server(100_000, lambda n: n == 1)):
        yield url


@pytest.fixture
async def big_before_confirming() -> AsyncIterator[str]:
    async for url in _serve(_server(100_000, lambda n: n == 1, early=True)):
        yield url


@pytest.fixture
async def over_a_mib() -> AsyncIterator[str]:
    async for url in _serve(_server(WEBSOCKETS_DEFAULT + 500_000, lambda n: True)):
        yield url


async def _until_it_ends(session: StreamSession) -> None:
    """Read the session until it ends (its error raised); a bounded wait, so a session
    that would reconnect for ever fails the test."""
    async with asyncio.timeout(20):
        async for _ in session:
            pass


async def _no_wait(delay: float) -> None:
    """The backoff's clock: reconnect at once."""


def _session(url: str, **options: Any) -> StreamSession:
    options.setdefault("backoff", Backoff(initial=0.0, maximum=0.0))
    return StreamSession(FakeClient(url), ping_interval=None, sleep=_no_wait, **options)  # type: ignore[arg-type]


def _bids(events: list[Event]) -> list[float]:
    return [e.bid for e in events if isinstance(e, TickerEvent) and e.bid is not None]


def _until_bid(bid: float) -> tuple[list[Event], asyncio.Event, Callable[[Event], None]]:
    """A callback that keeps every event and sets the flag when a ticker has ``bid``."""
    got: list[Event] = []
    seen = asyncio.Event()

    def take(event: Event) -> None:
        got.append(event)
        if isinstance(event, TickerEvent) and event.bid == bid:
            seen.set()

    return got, seen, take


@pytest.mark.anyio
async def test_a_message_over_websockets_default_1_mib_is_taken_by_default(
    over_a_mib: str,
) -> None:
    got, four, take = _until_bid(4)
    async with _session(over_a_mib) as session:
        session.add_callback(take, ["watchTicker"])
        await session.subscribe("watchTicker", symbol="BTC/BRL")
        await asyncio.wait_for(four.wait(), 10.0)
        assert session.stats.reconnects == 0 and session.stats.malformed == 0
    assert _bids(got) == [1, 2, 3, 4]


@pytest.mark.anyio
async def test_a_message_over_the_limit_is_said_counted_and_ends_the_session_when_it_comes_again(
    big_every_time: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolkit.stream")
    got: list[Event] = []
    session = _session(big_every_time, max_message_bytes=LIMIT)
    async with session:
        session.add_callback(got.append)
        await session.subscribe("watchTicker", symbol="BTC/BRL")
        with pytest.raises(TransportError) as raised:
            await _until_it_ends(session)
    text = str(raised.value)
    assert "the last 2 connections" in text and f"max_message_bytes={LIMIT}" in text
    assert "toolkit record --max-message-bytes" in text
    # the same failure on the connection that replaced the first: no third one
    assert session.stats.reconnects == 1 and session.stats.malformed == 2
    said = (
        "closed by us (code 1009, message too big): a message of 100",  # its size: 100 kB
        f" bytes, over max_message_bytes={LIMIT} was dropped",
    )
    events = [e for e in got if isinstance(e, SessionEvent)]
    ends = [e.detail for e in events if e.kind == "disconnected"]
    gaps = [e.detail for e in events if e.kind == "gap"]
    assert len(ends) == 3 and len(gaps) == 1, ends
    for detail in [*ends[:2], *gaps]:
        assert detail.startswith(said[0]) and detail.endswith(said[1]), detail
    assert ends[2] == f"closed: {text}"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    per_connection = [w for w in warnings if w.startswith("stream connection c")]
    assert len(per_connection) == 2 and all(said[1] in w for w in per_connection), warnings
    # what came before the big message arrived, on each connection
    assert _bids(got) == [1, 1]


@pytest.mark.anyio
async def test_the_same_failure_while_resubscribing_ends_the_session_too(
    big_before_confirming: str,
) -> None:
    session = _session(big_before_confirming, max_message_bytes=LIMIT)
    async with session:
        await session.subscribe("watchTicker", symbol="BTC/BRL")
        with pytest.raises(TransportError, match="the last 2 connections were each closed by us"):
            await _until_it_ends(session)
    assert session.stats.malformed == 2 and session.stats.reconnects == 0


@pytest.mark.anyio
async def test_one_message_over_the_limit_costs_one_reconnect_and_the_session_goes_on(
    big_once: str,
) -> None:
    got, four, take = _until_bid(4)
    session = _session(big_once, max_message_bytes=LIMIT, queue_size=0)
    async with session:
        session.add_callback(take, ["watchTicker"])
        await session.subscribe("watchTicker", symbol="BTC/BRL")
        await asyncio.wait_for(four.wait(), 10.0)
        assert session.error is None and session.connected
        assert session.stats.reconnects == 1 and session.stats.malformed == 1
    # the second connection did not get the big message: all of it arrived
    assert _bids(got) == [1, 1, 3, 4]


@pytest.mark.anyio
async def test_without_reconnect_the_session_ends_saying_why(big_every_time: str) -> None:
    session = _session(big_every_time, max_message_bytes=LIMIT, reconnect=False)
    async with session:
        await session.subscribe("watchTicker", symbol="BTC/BRL")
        with pytest.raises(TransportError, match=f"1009.*max_message_bytes={LIMIT}"):
            await _until_it_ends(session)
    assert session.stats.malformed == 1


@pytest.fixture(scope="module")
def signin_sim() -> Iterator[Simulator]:
    with Simulator(seed=3, engine=False, history_orders=5) as s:
        yield s


@pytest.mark.anyio
async def test_the_default_limit_is_the_clients_max_response_bytes(
    signin_sim: Simulator, big_every_time: str
) -> None:
    client = signin_sim.client(max_response_bytes=LIMIT)
    try:
        async with client.stream(ws_url=big_every_time, ping_interval=None, sleep=_no_wait) as s:
            await s.subscribe("watchTicker", symbol="BTC/BRL")
            with pytest.raises(TransportError, match=f"max_message_bytes={LIMIT}"):
                await _until_it_ends(s)
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_a_recording_ends_with_the_error_and_its_rows_say_why(
    signin_sim: Simulator, big_every_time: str, tmp_path: Path
) -> None:
    client = signin_sim.client()
    options = {"ws_url": big_every_time, "ping_interval": None, "sleep": _no_wait}
    rec = Recorder(
        client,
        tmp_path,
        channels=["watchTicker:BTC/BRL"],
        flush_interval=0.05,
        converter="thread",
        stream_options={**options, "max_message_bytes": LIMIT},
    )
    try:
        with pytest.raises(TransportError, match=f"max_message_bytes={LIMIT}"):
            await asyncio.wait_for(rec.run(), 30.0)
    finally:
        await client.aclose()
    rows = read_recording(tmp_path, channel="_session")
    gaps = rows[rows["kind"] == "gap"]["detail"].tolist()
    assert len(gaps) == 1 and f"over max_message_bytes={LIMIT} was dropped" in gaps[0]


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "1000000"])
def test_a_bad_limit_is_refused_before_anything_connects(bad: object) -> None:
    with pytest.raises(InvalidRequest, match="max_message_bytes must be an int >= 1"):
        StreamSession(FakeClient("ws://127.0.0.1:9"), max_message_bytes=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"queue_size": -1}, "queue_size must be an int >= 0"),
        ({"queue_size": "10"}, "queue_size must be an int >= 0"),
        ({"profile": "profiles/alt.toml"}, "profile must be a ServiceProfile"),
    ],
)
def test_other_bad_session_arguments_are_toolkit_errors(
    options: dict[str, Any], match: str
) -> None:
    """Every bad argument is an InvalidRequest (a tk.ToolkitError), never a bare
    ValueError or TypeError."""
    with pytest.raises(InvalidRequest, match=match):
        StreamSession(FakeClient("ws://127.0.0.1:9"), **options)  # type: ignore[arg-type]


def test_toolkit_record_reads_max_message_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()
    out = str(tmp_path / "r")
    given = parser.parse_args(["record", "--out", out, "--max-message-bytes", "5000000"])
    assert _stream_options(given) == {"max_message_bytes": 5_000_000}
    assert _stream_options(parser.parse_args(["record", "--out", out])) == {}
    with pytest.raises(SystemExit):
        parser.parse_args(["record", "--out", out, "--max-message-bytes", "0"])
    assert "argument --max-message-bytes: expected an integer >= 1" in capsys.readouterr().err


@pytest.mark.anyio
async def test_toolkit_record_passes_max_message_bytes_to_the_session(
    signin_sim: Simulator, big_every_time: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    env["TOOLKIT_API_SECRET"] = "demo-secret"
    args = ["--base-url", signin_sim.base_url, "--ws-url", big_every_time, "--api-key", "demo"]
    args += ["--channel", "watchTicker:BTC/BRL", "--duration", "15", "--quiet"]
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "toolkit.cli", "record", "--out", str(tmp_path / "r"), *args),
        *("--max-message-bytes", str(LIMIT)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 60.0)
    text = err.decode()
    assert proc.returncode == 1, text
    assert "toolkit record: error: the last 2 connections were each closed by us" in text
    assert f"over max_message_bytes={LIMIT} was dropped" in text and "Traceback" not in text


# ----------------------------------------------------- the end of a connection, no I/O


def _closed(sent: Close | None, rcvd: Close | None = None, rcvd_first: bool | None = None) -> Any:
    return ConnectionClosedError(rcvd, sent, rcvd_first)


def test_our_close_1009_names_the_size_and_the_setting() -> None:
    reason = "frame with 1500000 bytes exceeds limit of 1048576 bytes"
    text = _describe_end(_closed(Close(1009, reason)), 1_048_576)
    assert text == (
        "closed by us (code 1009, message too big): a message of 1500000 bytes, "
        "over max_message_bytes=1048576 was dropped"
    )


def test_our_close_1009_of_a_fragmented_or_compressed_message() -> None:
    fragmented = "frame with 40000 bytes after reading 1040000 bytes exceeds limit of 1048576 bytes"
    text = _describe_end(_closed(Close(1009, fragmented)), 1_048_576)
    assert "a message of more than 1080000 bytes, over max_message_bytes=1048576" in text
    compressed = "frame exceeds limit of 1048576 bytes"
    text = _describe_end(_closed(Close(1009, compressed)), 1_048_576)
    assert text.endswith("a message over max_message_bytes=1048576 was dropped")


def test_a_1009_from_the_server_is_the_servers_close() -> None:
    # the server closed first (its own limit), we echoed: not ours to raise
    theirs = Close(1009, "too big for me")
    text = _describe_end(_closed(theirs, theirs, rcvd_first=True), LIMIT)
    assert text == "closed by the server (code 1009, too big for me)"
    assert _describe_end(_closed(None), LIMIT) == "connection lost without a close frame"


def test_the_error_after_repeated_failures_names_the_setting() -> None:
    exc = _closed(Close(1009, "frame with 70000 bytes exceeds limit of 65536 bytes"))
    error = too_big_error(2, exc, LIMIT)
    assert isinstance(error, TransportError)
    assert str(error).startswith(
        "the last 2 connections were each closed by us (code 1009, message too big): a "
        f"message of 70000 bytes, over max_message_bytes={LIMIT} was dropped: reconnecting"
    )
    assert "raise max_message_bytes" in str(error)
