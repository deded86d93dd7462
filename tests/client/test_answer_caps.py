"""Answers the simulator never gives, read within ``max_response_bytes`` wherever they
come from: a gzip bomb in the fetchOrder answer, the sign-in answer or a 401 answer costs
about the cap in memory (inflated a bounded piece at a time, never a whole network chunk
at once); a body whose bytes are not in its declared Content-Encoding is InvalidResponse
saying so, not a "network error".

The answers are fed through ``httpx.MockTransport`` as raw streams (not ``content=``, which
httpx would decode while building the response), so the client reads them as it reads a
socket."""

from __future__ import annotations

import asyncio
import gzip
import json
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest

from toolkit.client._auth import TokenAuth
from toolkit.client._body import PIECE, BodyTooLarge, BoundedBody
from toolkit.client._client import Client
from toolkit.errors import InvalidResponse, TransportError
from toolkit.profile import DEFAULT_PROFILE

BASE = "http://127.0.0.1:9"  # never dialled: the mock transport answers
SIGNIN = DEFAULT_PROFILE.signin.path
CAP = 64 * 1024
#: 16 MiB of spaces: about 16 KiB on the wire, one network chunk
BOMB = gzip.compress(b" " * (16 << 20), compresslevel=9)
#: what reading a bombed answer may cost: the cap, a piece, and room for the client's own
#: allocations; reading it the way httpx does (a whole chunk at once) costs 16 MiB
MEMORY_BOUND = CAP + PIECE + (2 << 20)
ORDER = {"id": "o-1", "status": "OPEN"}


class _Raw(httpx.AsyncByteStream, httpx.SyncByteStream):
    """Bytes as they come off a socket, in 64 KiB chunks, not decoded by httpx first."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def _chunks(self) -> Iterator[bytes]:
        for i in range(0, len(self.data), 65536):
            yield self.data[i : i + 65536]

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks():
            yield chunk


def _answer(status: int, data: bytes, encoding: str | None = None) -> httpx.Response:
    headers = {"Content-Encoding": encoding} if encoding else {}
    return httpx.Response(status, stream=_Raw(data), headers=headers)


def _signin_ok() -> httpx.Response:
    return httpx.Response(200, json={"token": "t-1", "expiresAt": None})


def _peak_of(run: Callable[[], Any]) -> tuple[BaseException | None, int]:
    """What ``run()`` raised, and the most memory Python held at once while it ran."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        try:
            run()
        except Exception as exc:
            error: BaseException | None = exc
        else:
            error = None
        return error, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _fetch(handler: Callable[[httpx.Request], httpx.Response], **settings: Any) -> Any:
    """``afetch_order("o-1")`` on this thread (so that tracemalloc sees the reading)."""

    async def main() -> Any:
        async with Client(
            base_url=BASE,
            api_key="k",
            api_secret="s",
            transport=httpx.MockTransport(handler),
            max_response_bytes=CAP,
            max_retries=0,
            **settings,
        ) as client:
            return await client.afetch_order("o-1")

    return asyncio.run(main())


def test_a_gzip_bomb_as_the_signin_answer_is_refused_at_the_cap_for_about_the_cap() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == SIGNIN:
            return _answer(200, BOMB, "gzip")
        return httpx.Response(200, json=ORDER)

    error, peak = _peak_of(lambda: _fetch(handler))
    assert isinstance(error, InvalidResponse), error
    assert f"answer larger than max_response_bytes={CAP}" in str(error)
    assert error.method == "POST" and error.url is not None and SIGNIN in error.url
    assert peak < MEMORY_BOUND, f"reading the bomb held {peak >> 20} MiB"


def test_a_gzip_bomb_as_the_fetch_answer_never_inflates_a_whole_chunk() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == SIGNIN:
            return _signin_ok()
        return _answer(200, BOMB, "gzip")

    error, peak = _peak_of(lambda: _fetch(handler))
    assert isinstance(error, InvalidResponse) and error.status == 200, error
    assert f"max_response_bytes={CAP}" in str(error) and error.order_id == "o-1"
    assert peak < MEMORY_BOUND, f"reading the bomb held {peak >> 20} MiB"


def test_a_gzip_bomb_as_a_401_answer_is_refused_before_signing_in_again() -> None:
    signins: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == SIGNIN:
            signins.append(1)
            return _signin_ok()
        return _answer(401, BOMB, "gzip")

    error, peak = _peak_of(lambda: _fetch(handler))
    assert isinstance(error, InvalidResponse) and error.status == 401, error
    assert f"max_response_bytes={CAP}" in str(error)
    assert peak < MEMORY_BOUND, f"reading the 401 answer held {peak >> 20} MiB"
    assert signins == [1]


def test_the_sync_flow_reads_the_signin_answer_within_the_cap() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == SIGNIN:
            return _answer(200, BOMB, "gzip")
        return httpx.Response(200, json=ORDER)

    auth = TokenAuth("k", "s", BASE, max_response_bytes=CAP)

    def run() -> None:
        with httpx.Client(auth=auth, transport=httpx.MockTransport(handler)) as http:
            http.get(f"{BASE}/orders/fetchOrder", params={"orderId": "o-1"})

    error, peak = _peak_of(run)
    assert isinstance(error, InvalidResponse), error
    assert f"max_response_bytes={CAP}" in str(error)
    assert peak < MEMORY_BOUND, f"reading the bomb held {peak >> 20} MiB"


def test_signin_and_401_answers_under_the_cap_still_work_gzipped() -> None:
    answers = iter([401, 200])
    signins: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == SIGNIN:
            signins.append(1)
            body = json.dumps({"token": f"t-{len(signins)}", "expiresAt": None}).encode()
            return _answer(200, gzip.compress(body), "gzip")
        status = next(answers)
        body = json.dumps(ORDER if status == 200 else {"message": "expired"}).encode()
        return _answer(status, gzip.compress(body), "gzip")

    assert _fetch(handler) == ORDER
    assert len(signins) == 2  # the 401 was read (within the cap) and the token renewed


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
@pytest.mark.parametrize("on_signin", [False, True], ids=["fetch", "signin"])
def test_a_plain_body_declared_compressed_is_invalid_response_saying_so(
    encoding: str, on_signin: bool
) -> None:
    plain = json.dumps(ORDER).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == SIGNIN and not on_signin:
            return _signin_ok()
        return _answer(200, plain, encoding)

    with pytest.raises(InvalidResponse) as info:
        _fetch(handler)
    assert not isinstance(info.value, TransportError)
    assert f"declares Content-Encoding: {encoding} but its bytes are not {encoding}" in str(
        info.value
    )
    assert info.value.status == 200


# -- BoundedBody, sans-I/O ------------------------------------------------------------------


def _decoded(encodings: list[str], raw: bytes, cap: int, step: int = 7) -> bytes:
    body = BoundedBody(encodings, cap)
    for i in range(0, len(raw), step):
        body.feed(raw[i : i + step])
    return body.body()


def test_every_encoding_decodes_fed_a_few_bytes_at_a_time() -> None:
    data = json.dumps({"orders": [ORDER] * 500}).encode()
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    cases = {
        "gzip": gzip.compress(data),
        "x-gzip": gzip.compress(data),
        "deflate": zlib.compress(data),  # zlib-wrapped, as the RFC says
        "raw deflate": raw_deflate.compress(data) + raw_deflate.flush(),  # as servers send it
        "identity": data,
        "unknown-coding": data,  # passed through, as httpx does
    }
    for name, raw in cases.items():
        encoding = "deflate" if name == "raw deflate" else name
        assert _decoded([encoding], raw, len(data)) == data, name
    both = gzip.compress(zlib.compress(data))  # "deflate, gzip": deflate applied first
    assert _decoded(["deflate", "gzip"], both, len(data)) == data
    assert _decoded([], data, len(data), step=len(data)) == data


def test_the_cap_is_exact_and_counted_on_the_decoded_bytes() -> None:
    data = b"x" * 1000
    assert _decoded(["gzip"], gzip.compress(data), 1000) == data
    for raw, encodings in ((gzip.compress(data), ["gzip"]), (data, [])):
        with pytest.raises(BodyTooLarge):
            _decoded(encodings, raw, 999)


def test_a_bomb_fed_whole_is_stopped_within_a_piece_of_the_cap() -> None:
    body = BoundedBody(["gzip"], CAP)
    with pytest.raises(BodyTooLarge):
        body.feed(BOMB)
    assert body.size <= CAP + PIECE
