"""Bad answers from the service (hardening issue): every answer becomes data or a
ToolkitError carrying method, redacted URL, status and order id; nothing hangs past the
per-request deadline, nothing grows past the size cap, no nesting reaches RecursionError.

Most cases are contract breaks the simulator never produces, fed through an
``httpx.MockTransport`` (the transport is the client's one-method network boundary); the
drip case runs over a real loopback socket."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from toolkit.client._client import Client
from toolkit.errors import InvalidRequest, InvalidResponse, TransportError

BASE = "http://127.0.0.1:9"  # never dialled: the mock transport answers


def _client(handler: Callable[[httpx.Request], httpx.Response], **settings: Any) -> Client:
    return Client(base_url=BASE, transport=httpx.MockTransport(handler), **settings)


def _body(order_id: str = "o-1") -> dict[str, Any]:
    return {"id": order_id, "symbol": "BTC/BRL", "status": "closed", "type": "market"}


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"null", "null"),
        (b"", "empty body"),
        (b'{"id": "o-1", "sym', "not JSON"),
        (b"[1, 2]", "an array"),
        (b"<html>oops</html>", "not JSON"),
        (b'"o-1"', "a string"),
    ],
)
def test_a_fetch_order_body_that_is_not_an_order_names_the_order_and_url(
    content: bytes, what: str
) -> None:
    with _client(lambda r: httpx.Response(200, content=content)) as client:
        for call in (client.fetch_order, client.fetch_order_raw):
            with pytest.raises(InvalidResponse, match=what) as info:
                call("o-1")
            err = info.value
            assert err.order_id == "o-1" and err.status == 200 and err.method == "GET"
            assert err.url is not None and "/orders/fetchOrder" in err.url


def test_a_body_nested_200k_deep_is_refused_without_recursion_error() -> None:
    deep = b'{"id": "o-1", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    with _client(lambda r: httpx.Response(200, content=deep)) as client:
        for call in (client.fetch_order, client.fetch_order_raw):
            with pytest.raises(InvalidResponse, match="nested deeper than") as info:
                call("o-1")
            assert info.value.order_id == "o-1"


def test_fetch_order_answering_another_order_is_invalid_response() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=_body("o-2"))

    with _client(handler) as client:
        with pytest.raises(InvalidResponse, match="another order") as info:
            client.fetch_order("o-1")
        assert info.value.order_id == "o-1"
        with pytest.raises(InvalidResponse, match="another order"):
            client.fetch_order_raw("o-1")


def test_the_right_body_passes_unchanged() -> None:
    raw = json.dumps(_body("o-1")).encode()
    with _client(lambda r: httpx.Response(200, content=raw)) as client:
        assert client.fetch_order_raw("o-1") == raw
        assert client.fetch_order("o-1") == _body("o-1")


def test_a_gzip_bomb_is_refused_at_the_size_cap() -> None:
    # 64 MiB of zeros inside a JSON string compresses to about 64 KiB
    bomb = gzip.compress(b'{"id": "o-1", "x": "' + b"0" * (64 << 20) + b'"}')
    assert len(bomb) < 200_000

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=bomb, headers={"Content-Encoding": "gzip"})

    client = _client(handler, max_response_bytes=1 << 20)
    with client, pytest.raises(InvalidResponse, match="max_response_bytes=1048576") as info:
        client.fetch_order_raw("o-1")
    assert info.value.status == 200


def test_a_gzip_body_under_the_cap_is_decoded() -> None:
    raw = json.dumps(_body()).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=gzip.compress(raw), headers={"Content-Encoding": "gzip"})

    with _client(handler) as client:
        assert client.fetch_order("o-1") == _body()


class _Stalled(httpx.AsyncByteStream):
    """Sends the first byte of a valid answer, then nothing until released."""

    def __init__(self, release: asyncio.Event) -> None:
        self.release = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"{"
        await self.release.wait()
        yield b'"id": "o-1"}'


def test_a_stalled_answer_ends_at_the_deadline_and_is_retried_when_idempotent() -> None:
    attempts: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(1)
        return httpx.Response(200, stream=_Stalled(asyncio.Event()))

    async def no_wait(delay: float) -> None:
        return None

    client = _client(handler, timeout=0.2, max_retries=2, sleep=no_wait)
    with client, pytest.raises(TransportError, match=r"timeout=0\.2s") as info:
        client.fetch_order_raw("o-1")
    assert len(attempts) == 3  # the first try and two retries, each with its own deadline
    assert info.value.method == "GET"


async def _drip_server(
    body: bytes, interval: float
) -> tuple[asyncio.Server, int, Callable[[], int]]:
    """A loopback HTTP server that sends its headers, then the body one byte at a time
    every ``interval`` seconds (each read sees data well within a per-read timeout)."""
    sent = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        try:
            for byte in body:
                writer.write(bytes([byte]))
                await writer.drain()
                sent[0] += 1
                await asyncio.sleep(interval)  # the fault itself: a slow sender
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, port, lambda: sent[0]


def test_a_dripping_answer_is_cut_at_the_whole_answer_deadline() -> None:
    body = json.dumps(_body()).encode()

    async def scenario() -> Callable[[], int]:
        server, port, sent = await _drip_server(body, interval=0.05)
        async with server:
            client = Client(base_url=f"http://127.0.0.1:{port}", timeout=0.5, max_retries=0)
            async with client:
                with pytest.raises(TransportError, match="no complete answer within timeout"):
                    await client.afetch_order_raw("o-1")
        return sent

    sent = asyncio.run(scenario())
    # each byte came 0.05 s after the last (a per-read timeout of 0.5 s never fires), yet
    # the call ended long before the whole body was sent
    assert 0 < sent() < len(body)


def test_an_explicit_empty_profile_id_is_refused_not_replaced() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=_body())

    with _client(handler, profile_id="main") as client:
        with pytest.raises(InvalidRequest, match="profile_id"):
            client.create_limit_order("BTC/BRL", "buy", "100", amount="1", profile_id="")
        with pytest.raises(InvalidRequest, match="profile_id"):
            client.cancel_limit_order("o-1", profile_id="")
        with pytest.raises(InvalidRequest, match="profile_id"):
            client.cancel_limit_orders(["o-1"], profile_id="")
    assert sent == []
    with pytest.raises(InvalidRequest, match="profile_id"):
        Client(base_url=BASE, profile_id="")


@pytest.mark.parametrize(
    "settings",
    [
        {"timeout": float("inf")},
        {"timeout": float("nan")},
        {"timeout": 0},
        {"max_response_bytes": 0},
        {"max_response_bytes": 1.5},
        {"concurrency": 0},
        {"concurrency": True},
    ],
)
def test_bad_transport_settings_are_refused(settings: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest):
        Client(base_url=BASE, **settings)


@pytest.mark.parametrize(
    "options",
    [
        {"page_rule": "bogus"},
        {"concurrency": 0},
        {"overlap_s": float("nan")},
        {"since": float("inf")},
    ],
)
def test_the_facade_forwards_and_checks_the_loader_options(options: dict[str, Any]) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"orders": []})

    with _client(handler) as client, pytest.raises(InvalidRequest):
        client.load_orders(progress=False, **options)
    assert sent == []
