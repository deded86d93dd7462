"""A recording of ticker rows written as the recorder's converter writes it (one file per
call and (channel, day), named for its rows' time range): for the tests of the lazy read,
the replay window and compaction."""

from __future__ import annotations

import json
from pathlib import Path

from toolkit.recording._files import write_rows
from toolkit.recording._rows import row_from_message, session_row
from toolkit.recording._wal import Row

T0 = 1_795_305_600 * 10**9  # 2026-11-22T00:00:00Z
HOUR = 3600 * 10**9
SYMBOLS = ("BTC/BRL", "ETH/BRL", "SOL/BRL")


def tick_rows(start_ns: int, count: int, step_ns: int, *, seq0: int = 1) -> list[Row]:
    """``count`` ticker rows from ``start_ns``, ``step_ns`` apart, cycling the symbols,
    prices growing with the row's number (each row's content is unique)."""
    rows = []
    for i in range(count):
        seq = seq0 + i
        received = start_ns + i * step_ns
        message = {
            "channel": "watchticker",
            "message": {
                "symbol": SYMBOLS[seq % len(SYMBOLS)],
                "bid": str(100 + seq),
                "ask": str(101 + seq),
                "last": str(100.5 + seq),
                "timestamp": received // 10**6,
            },
        }
        rows.append(row_from_message(message, received_at_ns=received, connection_id="c1", seq=seq))
    return rows


def write_tick_files(
    root: Path, start_ns: int, files: int, rows_per_file: int, step_ns: int
) -> list[Path]:
    """``files`` files of ``rows_per_file`` ticker rows each, one after the other (as a
    recorder's rotations leave them), and a ``connected`` session row at the start in a
    file of ``channel=_session``; the ticker files are returned."""
    out: list[Path] = []
    seq = 1
    for n in range(files):
        first = start_ns + n * rows_per_file * step_ns
        rows = tick_rows(first, rows_per_file, step_ns, seq0=seq)
        if n == 0:
            rows.insert(0, session_row("connected", received_at_ns=first, connection_id="c1"))
        seq += rows_per_file
        written = write_rows(root, rows, f"{first:020d}-1-{n:06d}")
        out.extend(p for p in written if p.parent.parent.name == "channel=watchticker")
    return out


def content(rows: list[dict[str, object]]) -> list[str]:
    """Rows as sorted JSON texts, for an equality that says which differ."""
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
