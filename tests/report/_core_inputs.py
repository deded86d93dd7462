"""Files for the core-metrics tests: an export of synthetic orders of every kind
(``bench/_synthetic.py``) and a recording of their pairs' tickers with what the contract
allows: pairs in other cases and formats, one-sided quotes, ties at one time, a hole longer
than max_quote_age, a disconnect, and files in nanoseconds (old) and microseconds (new)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import _report_frames  # noqa: F401  (bench/ importable)
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _synthetic import SYMBOLS, T0_MS, closed_order, mixed_order_dicts

S = 1_000_000_000
MS = 1_000_000
T0 = T0_MS * MS
#: the pairs as the ticker rows name them, in turn (compared without case or separators)
SPELLINGS = {
    "BTC/BRL": ("BTC/BRL", "btc/brl", "BTC-BRL"),
    "ETH/BRL": ("ETH/BRL", "ethbrl", "Eth/Brl"),
    "SOL/BRL": ("SOL/BRL",),
    "USDT/BRL": ("usdt/brl", "USDT_BRL"),
}


def write_export(folder: Path, n: int = 160, seed: int = 3) -> Path:
    """``n`` orders of every kind (``mixed_order_dicts``) and ``n`` closed market orders,
    one a minute from T0, as ``OrderFrames.to_parquet`` writes them."""
    import random

    from toolkit.frames._frames import build_frames

    rng = random.Random(seed)
    dicts: list[dict[str, Any]] = mixed_order_dicts(n, seed)
    dicts += [closed_order(rng, n + i) for i in range(n)]
    bodies = [json.dumps(d).encode() for d in dicts]
    build_frames(bodies).to_parquet(folder)
    return folder


def _file(root: Path, date: str, name: str, cols: dict[str, Any], unit: str) -> None:
    from toolkit.recording._rows import partition_dir, recording_schema

    schema = recording_schema()
    fields = []
    for f in schema:
        t = f.type
        if pa.types.is_timestamp(t) and t.unit == "ns":
            t = pa.timestamp(unit, tz="UTC")
        fields.append(pa.field(f.name, t, f.nullable))
    schema = pa.schema(fields)
    size = len(cols["bid"])
    arrays = {}
    for f in schema:
        if f.name in cols:
            values = cols[f.name]
            if pa.types.is_timestamp(f.type):
                per = {"ns": 1, "us": 1_000, "ms": MS}[f.type.unit]
                values = pa.array(np.asarray(values, dtype="int64") // per, pa.int64())
            arrays[f.name] = pa.array(values).cast(f.type)
        else:
            arrays[f.name] = pa.nulls(size, f.type)
    d = partition_dir(root, "watchticker", date)
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(arrays, schema=schema), d / name)


def write_recording(root: Path, minutes: int = 2 * 160 + 20, seed: int = 5) -> Path:
    """Tickers of the four pairs every 7 s from T0 - 5 min for ``minutes``, written in two
    files (the first half's times in ns, the second's in µs), with a disconnect."""
    from toolkit.recording._rows import session_row
    from toolkit.recording._writer import RecordingWriter

    rng = np.random.default_rng(seed)
    start = T0 - 300 * S
    moments = np.arange(start, start + minutes * 60 * S, 7 * S)
    rows: dict[str, list[Any]] = {
        k: [] for k in ("received_at", "updated_at", "symbol", "bid", "ask", "last", "seq")
    }
    seq = 0
    for symbol, price in SYMBOLS.items():
        walk = price * np.exp(np.cumsum(rng.normal(0, 2e-4, len(moments))))
        for i, (t, mid) in enumerate(zip(moments, walk, strict=True)):
            # a hole of 6 minutes in ETH: orders there have only a ticker too old
            if symbol == "ETH/BRL" and 250 * 60 * S < t - T0 < 256 * 60 * S:
                continue
            spelling = SPELLINGS[symbol][i % len(SPELLINGS[symbol])]
            updated = int(t) + int(rng.integers(0, 900)) * MS
            one_sided = i % 11 == 0
            for tie in range(2 if i % 17 == 0 else 1):  # a tie at one service time
                seq += 1
                rows["received_at"].append(updated + 40 * MS + tie * 3_001 + rng.integers(0, 999))
                rows["updated_at"].append(updated)
                rows["symbol"].append(spelling)
                rows["bid"].append(0.0 if one_sided else mid * (1 - 1e-4) + tie)
                rows["ask"].append(mid * (1 + 1e-4) + tie)
                rows["last"].append(mid * (1 + 2e-5))
                rows["seq"].append(seq)
    order = np.argsort(np.asarray(rows["received_at"]), kind="stable")
    cols = {k: [v[i] for i in order] for k, v in rows.items()}
    n = len(order)
    cols["connection_id"] = ["c1"] * n
    cols["channel"] = ["watchticker"] * n
    half = n // 2
    date = "2026-11-01"
    _file(root, date, "part-0.parquet", {k: v[:half] for k, v in cols.items()}, "ns")
    _file(root, date, "part-1.parquet", {k: v[half:] for k, v in cols.items()}, "us")
    gap_at = T0 + 200 * 60 * S
    with RecordingWriter(root) as writer:
        writer.add(session_row("connected", received_at_ns=start, connection_id="c1"))
        writer.add(session_row("disconnected", received_at_ns=gap_at, connection_id="c1"))
        writer.add(session_row("connected", received_at_ns=gap_at + 300 * S, connection_id="c2"))
    return root


def write_ticks(
    root: Path, ticks: list[tuple[int, float]], *, symbol: str = "btc-brl", unit: str = "ns"
) -> Path:
    """A recording of ``watchticker`` rows of one pair: (service time ms, mid), received
    10 ms later, spread 0.2, its times in ``unit`` (``ns``: old recordings, ``us``: new)."""
    n = len(ticks)
    cols = {
        "received_at": [(u + 10) * MS for u, _ in ticks],
        "updated_at": [u * MS for u, _ in ticks],
        "connection_id": ["c1"] * n,
        "seq": list(range(1, n + 1)),
        "channel": ["watchticker"] * n,
        "symbol": [symbol] * n,
        "bid": [m - 0.1 for _, m in ticks],
        "ask": [m + 0.1 for _, m in ticks],
        "last": [m for _, m in ticks],
    }
    _file(root, "2025-11-13", "part-0.parquet", cols, unit)
    return root


def write_frames(folder: Path, frames: Any) -> Path:
    """The three tables of hand-made ``frames`` as loose export files (no manifest)."""
    folder.mkdir(parents=True, exist_ok=True)
    frames.orders.to_parquet(folder / "orders.parquet")
    frames.trades.to_parquet(folder / "trades.parquet")
    frames.evaluated_tickers.to_parquet(folder / "evaluated_tickers.parquet")
    return folder
