"""Reading an answer's body within ``max_response_bytes``: the body is decompressed here, a
bounded piece at a time, so an answer costs about the cap in memory whatever it inflates to."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import httpx
from httpx._decoders import SUPPORTED_DECODERS, ContentDecoder

from toolkit.errors import InvalidResponse
from toolkit.profile import get_path
from toolkit.protocol import JsonShapeError, loads_bounded

#: the encodings we ask for: those inflated a bounded piece at a time (br and zstd, when
#: their packages are installed, are decoded by httpx a network chunk at a time)
ACCEPT_ENCODING = "gzip, deflate"
#: the most bytes one step of inflating makes before they are counted against the cap
PIECE = 256 * 1024


class BodyTooLarge(Exception):
    """The decoded body passed the cap (InvalidResponse once the answer is known)."""


class EncodingMismatch(Exception):
    """The bytes are not in the encoding the answer declares."""

    def __init__(self, encoding: str, why: str) -> None:
        super().__init__(encoding, why)
        self.encoding, self.why = encoding, why


class _Zlib:
    """gzip or deflate, decoded ``PIECE`` bytes at a time (``max_length``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        gzip = name in ("gzip", "x-gzip")
        self._d = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        # "deflate" is zlib-wrapped by the RFC, raw in the wild: the first bytes decide
        self._raw_fallback = not gzip

    def _piece(self, data: bytes) -> bytes:
        try:
            piece = self._d.decompress(data, PIECE)
        except zlib.error as exc:
            if not self._raw_fallback:
                raise EncodingMismatch(self.name, str(exc)) from None
            self._raw_fallback = False
            self._d = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._piece(data)
        self._raw_fallback = False
        return piece

    def decode(self, data: bytes) -> Iterator[bytes]:
        while not self._d.eof:  # bytes after the end are ignored, as httpx does
            piece = self._piece(data)
            if piece:
                yield piece
            data = self._d.unconsumed_tail
            if not data and len(piece) < PIECE:
                return  # else output may still be pending inside zlib: ask again

    def flush(self) -> Iterator[bytes]:
        try:
            tail = self._d.flush()  # every input byte was consumed: what is left is small
        except zlib.error as exc:  # pragma: no cover - zlib raises at decompress
            raise EncodingMismatch(self.name, str(exc)) from None
        if tail:
            yield tail


class _Httpx:
    """An encoding we never ask for but httpx decodes (br, zstd with their packages):
    httpx's decoder, whose output per network chunk is not bounded."""

    def __init__(self, name: str, decoder: ContentDecoder) -> None:
        self.name, self._decoder = name, decoder

    def decode(self, data: bytes) -> Iterator[bytes]:
        try:
            yield self._decoder.decode(data)
        except httpx.DecodingError as exc:
            raise EncodingMismatch(self.name, str(exc)) from None

    def flush(self) -> Iterator[bytes]:
        try:
            yield self._decoder.flush()
        except httpx.DecodingError as exc:
            raise EncodingMismatch(self.name, str(exc)) from None


_Stage = _Zlib | _Httpx


def _stages(encodings: Iterable[str]) -> list[_Stage]:
    """The decoders of a Content-Encoding list, in decoding order (the last applied first);
    an encoding nobody decodes is passed through as httpx does."""
    stages: list[_Stage] = []
    for value in encodings:
        name = value.strip().lower()
        if name in ("gzip", "x-gzip", "deflate"):
            stages.append(_Zlib(name))
        elif name != "identity" and name in SUPPORTED_DECODERS:
            stages.append(_Httpx(name, SUPPORTED_DECODERS[name]()))
    return stages[::-1]


class BoundedBody:
    """Sans-I/O: the raw bytes of an answer (as sent, before content decoding) in, its
    decoded body out, refused as soon as it passes ``cap`` bytes.

    gzip and deflate are inflated at most :data:`PIECE` bytes at a time, each piece
    counted before the next is made, so a gzip bomb never inflates further than the cap:
    an answer costs at most ``cap`` plus a piece and a network chunk in memory.
    """

    def __init__(self, encodings: Iterable[str], cap: int) -> None:
        self.cap = cap
        self.size = 0
        self._stages = _stages(encodings)
        self._chunks: list[bytes] = []

    def _through(self, data: bytes, start: int) -> None:
        if start < len(self._stages):
            for piece in self._stages[start].decode(data):
                self._through(piece, start + 1)
            return
        self.size += len(data)
        if self.size > self.cap:
            raise BodyTooLarge
        self._chunks.append(data)

    def feed(self, raw: bytes) -> None:
        """Decode the next raw bytes (raises on a body over the cap or bytes that are not in
        the declared encoding)."""
        if raw:
            self._through(raw, 0)

    def body(self) -> bytes:
        """The whole decoded body, once every raw byte was fed."""
        for i, stage in enumerate(self._stages):
            for piece in stage.flush():
                self._through(piece, i + 1)
        return b"".join(self._chunks)


def _refused(response: httpx.Response, cap: int, exc: Exception) -> InvalidResponse:
    request = response.request
    where: dict[str, Any] = {
        "method": request.method,
        "url": request.url,
        "status": response.status_code,
    }
    if isinstance(exc, EncodingMismatch):
        return InvalidResponse(
            f"the answer declares Content-Encoding: {exc.encoding} but its bytes are not "
            f"{exc.encoding} ({exc.why}); a proxy or the service mislabels it",
            **where,
        )
    return InvalidResponse(
        f"answer larger than max_response_bytes={cap} (decoded); raise the setting if the "
        "service really sends this much",
        **where,
    )


def _body_of(response: httpx.Response, cap: int) -> BoundedBody | bytes:
    """A reader for the raw stream, or the body when the transport answered it whole and
    decoded (``httpx.MockTransport`` and other in-memory transports)."""
    try:
        body = response.content
    except httpx.ResponseNotRead:
        return BoundedBody(response.headers.get_list("content-encoding", split_commas=True), cap)
    if len(body) > cap:
        too_large = BodyTooLarge()
        raise _refused(response, cap, too_large) from too_large
    return body


async def read_capped(response: httpx.Response, cap: int) -> bytes:
    """The decoded body of ``response`` (opened with ``stream=True``, not read yet), or
    InvalidResponse once it passes ``cap`` bytes or is not in its declared encoding (its
    ``__cause__``: BodyTooLarge or EncodingMismatch). The
    deadline is the caller's (``asyncio.timeout`` around the send and this read)."""
    reader = _body_of(response, cap)
    if isinstance(reader, bytes):
        return reader
    try:
        async for raw in response.aiter_raw():
            reader.feed(raw)
        return reader.body()
    except (BodyTooLarge, EncodingMismatch) as exc:
        # the cause says which (a caller such as the doctor tells the two apart)
        raise _refused(response, cap, exc) from exc


def read_capped_sync(response: httpx.Response, cap: int) -> bytes:
    """:func:`read_capped` for a response of a sync ``httpx.Client``."""
    reader = _body_of(response, cap)
    if isinstance(reader, bytes):
        return reader
    try:
        for raw in response.iter_raw():
            reader.feed(raw)
        return reader.body()
    except (BodyTooLarge, EncodingMismatch) as exc:
        # the cause says which (a caller such as the doctor tells the two apart)
        raise _refused(response, cap, exc) from exc


def keep_body(response: httpx.Response, body: bytes) -> None:
    """Keep ``body`` (read by :func:`read_capped`) as the content of ``response``: httpx's
    auth flow calls ``aread()`` on every answer it handed to the flow, which then returns
    this body instead of reading the consumed stream again (httpx keeps a read body in
    ``_content``)."""
    response._content = body


def error_excerpt(body: str, size: int = 200) -> str:
    """The start of an error body on one line, for a message (scrub it again: joining
    its lines can join a secret)."""
    text = " ".join(body.split())
    return text if len(text) <= size else text[: size - 3] + "..."


def error_message(body: str, field: str = "message") -> str:
    """The profile's ``rest.error_message_field`` of an error body, for the exception text
    only (never for meaning)."""
    try:
        payload = loads_bounded(body)
    except JsonShapeError:  # not JSON, or nested too deep to look into
        return ""
    message = get_path(payload, field) if isinstance(payload, dict) else None
    return str(message)[:200] if message else ""
