"""Tests of the receive path's chunk records and of the converter process: texts come back
byte for byte whatever they hold, a torn chunk is ignored, and the converter process
converts what it is sent, in order, holding the root's lock meanwhile."""

from __future__ import annotations

import asyncio
from array import array
from pathlib import Path
from typing import Any

import pytest

from toolkit.recording._chunk import CHUNK_MARK, decode_chunk, encode_chunk
from toolkit.recording._convert import ConverterProcess
from toolkit.recording._read import read_recording
from toolkit.recording._wal import iter_payloads
from toolkit.recording._writer import RecorderBusy, RecordingWriter

T0 = 1_795_305_600 * 10**9


def _roundtrip(texts: list[str], conn: str = "c1") -> list[str]:
    record = encode_chunk(
        texts, array("q", range(T0, T0 + len(texts))), array("q", range(len(texts))), conn
    )
    ((_end, payload),) = list(iter_payloads(b"TKWAL01\n" + record))
    assert bytes(payload[: len(CHUNK_MARK)]) == CHUNK_MARK
    batch = decode_chunk(payload)
    batch.validate(full=True)
    assert batch.column("received_at").to_pylist() == list(range(T0, T0 + len(texts)))
    assert batch.column("seq").to_pylist() == list(range(len(texts)))
    assert batch.column("connection_id").to_pylist() == [conn] * len(texts)
    return batch.column("raw").to_pylist()


@pytest.mark.parametrize(
    "texts",
    [
        [],
        ['{"channel":"watchticker"}'],
        ['{"a":1}', "", '{"b":"\\u00e7"}', ""],
        ['{"a":"ação"}', '{"b":"😀"}', '{"c":1}'],
        ['{"a":\n1}', "x", "\n", "y\n"],  # line breaks of their own: lengths instead
        ["\n"],
    ],
    ids=["empty", "one", "with-empty-texts", "non-ascii", "line-breaks", "only-a-break"],
)
def test_chunk_keeps_every_text(texts: list[str]) -> None:
    assert _roundtrip(texts) == texts


def test_a_lone_surrogate_becomes_a_replacement_character() -> None:
    assert _roundtrip(['{"a":"\ud800"}', "ok"]) == ['{"a":"\ufffd\ufffd\ufffd"}', "ok"]


def test_a_chunk_whose_count_lies_is_refused() -> None:
    record = encode_chunk(["a", "b"], array("q", [1, 2]), array("q", [1, 2]), "c")
    payload = bytearray(record[8:])
    payload[len(CHUNK_MARK)] = 3  # n = 3 for 2 texts
    with pytest.raises(ValueError):
        decode_chunk(bytes(payload))


def _segment_of(root: Path, texts: list[str]) -> RecordingWriter:
    writer = RecordingWriter(root)
    writer.open()
    for seq, text in enumerate(texts, 1):
        writer.add_raw(text, T0 + seq, "c1", seq)
    return writer


TEXTS = [
    '{"channel":"watchticker","message":{"symbol":"BTC/BRL","bid":"1","ask":"2",'
    f'"last":"1.5","timestamp":{1_795_305_600_000 + i}}}}}'
    for i in range(50)
]


def test_the_converter_process_converts_what_it_is_sent_and_holds_the_lock(
    tmp_path: Path,
) -> None:
    writer = _segment_of(tmp_path, TEXTS[:20])

    async def main() -> list[str]:
        process = ConverterProcess(writer)
        await process.start()
        first = writer.roll()
        for seq, text in enumerate(TEXTS[20:], 21):
            writer.add_raw(text, T0 + seq, "c1", seq)
        second = writer.roll()
        assert first is not None and second is not None
        assert process.submit(first) and process.submit(second)
        assert writer.stats.backlog_bytes >= first.size + second.size
        writer._unlock()  # the converter still holds the lock it shares
        with pytest.raises(RecorderBusy):
            RecordingWriter(tmp_path).open()
        await process.finish()
        assert not process.alive and process.outstanding == []
        return [p.name for p in (tmp_path / "_wal").glob("*.wal")]

    left = asyncio.run(main())
    assert writer.stats.files == 2  # counted from the converter's replies
    assert len(left) == 1  # only the open segment: both closed ones converted, deleted
    writer._segment = None
    # the lock went with the converter: a new writer recovers the open segment
    RecordingWriter(tmp_path).open()
    df = read_recording(tmp_path)
    assert df["seq"].tolist() == list(range(1, 51))
    assert df["raw"].tolist() == TEXTS


def test_a_segment_the_converter_cannot_convert_stays_in_the_backlog(tmp_path: Path) -> None:
    writer = _segment_of(tmp_path, TEXTS[:5])
    failed: list[Path] = []

    async def main() -> None:
        process = ConverterProcess(writer, on_failed=lambda path, error: failed.append(path))
        await process.start()
        closed = writer.roll()
        assert closed is not None
        closed.path.unlink()  # gone before the converter reads it
        assert process.submit(closed)
        await process.finish()

    asyncio.run(main())
    assert len(failed) == 1 and writer.stats.backlog_bytes > 0
    writer._closed.clear()
    writer.close()


def test_conversion_fsyncs_each_file_before_its_rename_and_its_folder_after(
    tmp_path: Path, spy_durability: Any
) -> None:
    from toolkit.recording import _conversion

    writer = _segment_of(tmp_path, TEXTS[:10])
    closed = writer.roll()
    assert closed is not None
    steps = spy_durability(_conversion, "_fsync_path")
    files = writer.convert(closed)
    name = files[0].name  # part-<segment>.r<first>-<last>.parquet: its rows' time range
    assert name.startswith(f"part-{closed.path.stem}.r")
    assert steps == [
        ("fsync", f".part-{closed.path.stem}.parquet.tmp"),
        ("replace", name),
        ("fsync", files[0].parent.name),
    ]
    assert not closed.path.exists()  # the segment goes only once its files are in place


def test_a_failed_conversion_leaves_no_file_and_keeps_the_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.recording import _conversion

    writer = _segment_of(tmp_path, TEXTS[:10])
    closed = writer.roll()
    assert closed is not None

    def full_disk(path: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_conversion, "_fsync_path", full_disk)
    with pytest.raises(OSError):
        writer.convert(closed)
    assert closed.path.exists() and writer.stats.backlog_bytes >= closed.size
    assert list(tmp_path.rglob("*.parquet*")) == []
    monkeypatch.undo()
    writer.close()  # converts it now
    assert read_recording(tmp_path)["seq"].tolist() == list(range(1, 11))
