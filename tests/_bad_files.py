"""A small recording (session, ticker and order rows of one day) and the ways a file in it
can be damaged or foreign, each named ``part-*.parquet``: for the tests of the readers of
recordings and of the commands that take one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from toolkit.recording._rows import row_from_message, session_row
from toolkit.recording._writer import RecordingWriter

T0 = 1_795_305_600 * 10**9  # 2026-11-22T00:00:00Z
DATE = "2026-11-22"


def write_recording(root: Path) -> None:
    """Session, ticker and order rows of one day, as a Recorder writes them."""
    with RecordingWriter(root) as writer:
        assert writer.add(session_row("connected", received_at_ns=T0, connection_id="c1", seq=1))
        for i in range(6):
            t = T0 + (i + 1) * 10**9
            ticker = {
                "channel": "watchticker",
                "message": {
                    "symbol": "BTC/BRL",
                    "bid": str(100 + i),
                    "ask": str(101 + i),
                    "last": str(100.5 + i),
                    "timestamp": t // 10**6,
                },
            }
            order = {
                "channel": "watchorders",
                "message": {"id": f"o-{i}", "symbol": "BTC/BRL", "status": "closed"},
            }
            for seq, message in ((2 * i + 2, ticker), (2 * i + 3, order)):
                assert writer.add(
                    row_from_message(message, received_at_ns=t, connection_id="c1", seq=seq)
                )


def folder_of(root: Path, channel: str) -> Path:
    folder = root / f"channel={channel}" / f"date={DATE}"
    assert folder.is_dir(), sorted(p.name for p in root.iterdir())
    return folder


def zero_bytes(root: Path, channel: str) -> Path:
    path = folder_of(root, channel) / "part-0-empty.parquet"
    path.write_bytes(b"")
    return path


def half_a_file(root: Path, channel: str) -> Path:
    folder = folder_of(root, channel)
    real = sorted(folder.glob("part-*.parquet"))[0]
    path = folder / "part-0-half.parquet"
    data = real.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a copy cut short
    return path


def foreign_parquet(root: Path, channel: str) -> Path:
    path = folder_of(root, channel) / "part-0-foreign.parquet"
    pq.write_table(pa.table({"id": ["x"], "price": [1.5], "channel": [channel]}), path)
    return path


def not_parquet(root: Path, channel: str) -> Path:
    path = folder_of(root, channel) / "part-0-text.parquet"
    path.write_text("id,price\nx,1.5\n" * 50, encoding="utf-8")
    return path


DAMAGES: dict[str, Callable[[Path, str], Path]] = {
    "zero bytes": zero_bytes,
    "half a file": half_a_file,
    "foreign parquet": foreign_parquet,
    "not parquet": not_parquet,
}
#: what the message says for each
SAYS = {
    "zero bytes": "is empty (0 bytes",
    "half a file": "is not a whole Parquet file",
    "foreign parquet": "is a Parquet file of another dataset",
    "not parquet": "is not a whole Parquet file",
}
