"""Text chunks: the write-ahead record of the recorder's receive path. A chunk holds the
data messages of one connection as they came (received time, sequence number, text),
encoded with a few C calls per chunk and no per-message Python, so appending to the
segment costs the receiving loop almost nothing; the columns are extracted later, by the
converter, from the texts.

Payload of a chunk record (framed like every segment record, see ``toolkit.recording._wal``)::

    mark (16 bytes) | <u32 n><u32 connection id length><u32 flags><u32 0>
    | connection id (UTF-8) | received times (n x int64) | sequence numbers (n x int64)
    | [byte lengths (n x int64), when flags & LENGTHS] | the texts (UTF-8)

The texts are back to back; their byte lengths are the lengths of the strings when the
whole chunk is ASCII (the usual case), so no per-message encoding runs. A chunk written
without lengths (``flags`` 0) has its texts joined by ``"\\n"`` instead.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from array import array
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from toolkit.recording._raw import RawBuffer

#: a chunk record starts with this; a row record starts with its received time, which is
#: never the null int64 (and an Arrow batch record has a mark of its own)
CHUNK_MARK = struct.pack("<q", -(2**63)) + b"TKCHNK01"
_HEAD = struct.Struct("<IIII")
_FRAME = struct.Struct("<II")
#: flag: the texts are back to back, with an array of byte lengths
LENGTHS = 1


def chunk_parts(
    texts: list[str], stamps: array[int], seqs: array[int], conn: str
) -> tuple[bytes, bytes]:
    """(frame header + everything before the texts, the texts) of the segment record of
    one connection's messages: two pieces, so the texts are never copied once more."""
    n = len(texts)
    joined = "".join(texts)
    try:
        data = joined.encode()
    except UnicodeEncodeError:  # a lone surrogate: kept as is, replaced at conversion
        data = joined.encode("utf-8", "surrogatepass")
    if len(data) == len(joined):  # ASCII, the usual case: characters are bytes
        lengths = array("q", map(len, texts))
    else:
        lengths = array("q", [len(t.encode("utf-8", "surrogatepass")) for t in texts])
    cid = conn.encode("utf-8", "surrogatepass")
    head = b"".join(
        (
            CHUNK_MARK,
            _HEAD.pack(n, len(cid), LENGTHS, 0),
            cid,
            stamps.tobytes(),
            seqs.tobytes(),
            lengths.tobytes(),
        )
    )
    crc = zlib.crc32(data, zlib.crc32(head))
    return _FRAME.pack(len(head) + len(data), crc) + head, data


def encode_chunk(texts: list[str], stamps: array[int], seqs: array[int], conn: str) -> bytes:
    """The framed segment record (header + payload) of one connection's messages."""
    head, data = chunk_parts(texts, stamps, seqs, conn)
    return head + data


def buffer_parts(buffer: RawBuffer) -> list[bytes]:
    """The pieces of the chunk records of a raw buffer (one record per run of one
    connection), to be written in order."""
    conns = buffer.conns
    if len(conns) == 1:
        return list(chunk_parts(buffer.texts, buffer.stamps, buffer.seqs, conns[0][1]))
    out: list[bytes] = []
    ends = [start for start, _ in conns[1:]] + [len(buffer.texts)]
    for (start, conn), end in zip(conns, ends, strict=True):
        out.extend(
            chunk_parts(
                buffer.texts[start:end], buffer.stamps[start:end], buffer.seqs[start:end], conn
            )
        )
    return out


def encode_buffer(buffer: RawBuffer) -> bytes:
    """The chunk records of a raw buffer, as one piece."""
    return b"".join(buffer_parts(buffer))


def is_chunk(payload: bytes | memoryview) -> bool:
    return bytes(payload[: len(CHUNK_MARK)]) == CHUNK_MARK


def decode_chunk(payload: bytes | memoryview) -> pa.RecordBatch:
    """The raw batch (``toolkit.recording._raw.raw_batch_schema``) of a chunk record's
    payload, built from its buffers; raises ValueError when it is malformed."""
    import numpy as np
    import pyarrow as pa

    from toolkit.recording._raw import raw_batch_schema

    view = memoryview(payload)
    offset = len(CHUNK_MARK)
    try:
        n, cid_len, flags, _ = _HEAD.unpack_from(view, offset)
    except struct.error as exc:
        raise ValueError("truncated chunk header") from exc
    offset += _HEAD.size
    need = offset + cid_len + 16 * n + (8 * n if flags & LENGTHS else 0)
    if need > len(view):
        raise ValueError("truncated chunk")
    conn = bytes(view[offset : offset + cid_len])
    offset += cid_len
    stamps = np.frombuffer(view, dtype="<i8", count=n, offset=offset)
    offset += 8 * n
    seqs = np.frombuffer(view, dtype="<i8", count=n, offset=offset)
    offset += 8 * n
    if flags & LENGTHS:
        lengths = np.frombuffer(view, dtype="<i8", count=n, offset=offset)
        offset += 8 * n
        data = np.frombuffer(view, dtype=np.uint8, offset=offset)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if n and offsets[-1] != len(data):
            raise ValueError("chunk lengths do not match its texts")
    else:
        data = np.frombuffer(view, dtype=np.uint8, offset=offset)
        breaks = np.flatnonzero(data == 10)
        if n == 0 or len(breaks) != n - 1:
            if n or len(data):
                raise ValueError("chunk texts do not match its count")
            breaks = np.zeros(0, dtype=np.int64)
        # drop the separators: text i starts at its break + 1, less the i breaks before
        offsets = np.empty(n + 1, dtype=np.int64)
        if n:
            offsets[0] = 0
            offsets[1:n] = breaks - np.arange(n - 1)
            offsets[n] = len(data) - (n - 1)
            keep = np.ones(len(data), dtype=bool)
            keep[breaks] = False
            data = data[keep]
    body = pa.py_buffer(np.ascontiguousarray(data))
    raw = pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), body])
    try:
        raw.validate(full=True)  # UTF-8, offsets
    except pa.ArrowInvalid:
        # a lone surrogate (never from the WebSocket, which decodes strictly): Parquet
        # text is UTF-8, so it becomes U+FFFD rather than failing the whole chunk
        blob = bytes(np.ascontiguousarray(data))
        texts = [
            blob[int(a) : int(b)].decode("utf-8", "replace")
            for a, b in itertools.pairwise(offsets.tolist())
        ]
        raw = pa.array(texts, pa.large_string())
    conn_ids = pa.array([conn.decode("utf-8", "replace")] * n, pa.string())
    return pa.RecordBatch.from_arrays(
        [pa.array(stamps, pa.int64()), conn_ids, pa.array(seqs, pa.int64()), raw],
        schema=raw_batch_schema(),
    )
