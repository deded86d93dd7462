"""Tiny gateways of our own on 127.0.0.1 for the doctor's limit tests: answers the simulator
never gives (a body dripping one byte at a time, a gzip bomb, a slow listing, a WebSocket
upgrade redirected elsewhere, an oversized WebSocket message).

Imported as ``from _doctor_wire import ...`` (pytest puts this folder on ``sys.path``).
Everything runs on one event loop in a background thread; handlers run on that loop."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

KEY = "doctor-key"
SECRET = "doctor-secret-0123456789"
TOKEN = "doctor-token-abcdef0123456789"
LISTING = "/orders/limit/orders"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    writer: asyncio.StreamWriter = field(repr=False)


Answer = bytes | None  # None: the handler wrote (or is writing) the answer itself
Handler = Callable[[Request], Answer | Awaitable[Answer]]


def answer(
    status: int = 200, body: bytes | dict[str, Any] = b"", headers: dict[str, str] | None = None
) -> bytes:
    """A whole HTTP/1.1 answer."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    head = {"Content-Type": "application/json", "Content-Length": str(len(data))}
    head.update(headers or {})
    lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
    return f"HTTP/1.1 {status} X\r\n{lines}\r\n".encode() + data


def gzip_bomb(mib: int) -> bytes:
    """``mib`` MiB of spaces, gzipped (about 1 KiB per MiB)."""
    return gzip.compress(b" " * (mib << 20), compresslevel=9)


async def drip(writer: asyncio.StreamWriter, every: float = 0.05) -> None:
    """Headers promising a large body, then one byte every ``every`` seconds until the
    client goes away: no single read ever waits long, the whole answer never comes."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
    writer.write(b"Content-Length: 1000000\r\n\r\n[")
    while not writer.is_closing():
        writer.write(b" ")
        await writer.drain()
        await asyncio.sleep(every)


def signin(req: Request) -> bytes:
    """The default profile's sign-in: apiKey/apiSecret in, token/expiresAt out."""
    sent = json.loads(req.body or b"{}")
    if sent.get("apiSecret") != SECRET:
        return answer(401, {"message": "bad credentials"})
    return answer(200, {"token": TOKEN, "expiresAt": int(time.time() * 1000) + 3_600_000})


class Loop:
    """One event loop in a daemon thread, serving raw HTTP and WebSocket servers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._closers: list[Callable[[], Coroutine[Any, Any, None]]] = []

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def http(self, handler: Handler) -> HttpServer:
        server = HttpServer(handler)
        self.run(server.start())
        self._closers.append(server.stop)
        return server

    def ws(self, handler: Callable[[ServerConnection], Awaitable[None]]) -> str:
        """A WebSocket server running ``handler`` per connection; its ws:// address."""

        async def start() -> Any:
            return await serve(handler, "127.0.0.1", 0)

        server = self.run(start())

        async def stop() -> None:
            server.close()
            await server.wait_closed()

        self._closers.append(stop)
        return f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    def close(self) -> None:
        for stop in reversed(self._closers):
            self.run(stop())

        async def cancel_rest() -> None:
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self.run(cancel_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


class HttpServer:
    """A raw HTTP/1.1 server (keep-alive) whose answers ``handler`` scripts byte by byte;
    ``requests`` lists every request it got (path and query)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                method, target, _ = line.decode().split(" ", 2)
                headers: dict[str, str] = {}
                while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = h.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                size = int(headers.get("content-length", "0"))
                body = await reader.readexactly(size) if size else b""
                url = urllib.parse.urlsplit(target)
                query = dict(urllib.parse.parse_qsl(url.query))
                self.requests.append((method, url.path, query))
                out = self.handler(Request(method, url.path, query, headers, body, writer))
                if not isinstance(out, bytes | None):
                    out = await out
                if out is None:
                    break
                writer.write(out)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # the loop closing: ending quietly keeps asyncio 3.11 from logging it
        finally:
            writer.close()


@contextmanager
def wire_loop() -> Iterator[Loop]:
    loop = Loop()
    try:
        yield loop
    finally:
        loop.close()
