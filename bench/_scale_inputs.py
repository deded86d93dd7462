"""The scale benchmark's inputs, built vectorised (numpy and pyarrow, in chunks, memory flat):
an order export with exactly the files of ``OrderFrames.to_parquet`` and a watchticker
recording in the recorder's layout.

The export draws the same distributions as ``bench/_synthetic.py`` (closed orders, one a
minute from 2026-11-01, 3 trades and 5 quotes each, several venues and pairs, 40% routed
by the service) without a JSON body: its schemas (column names, Arrow types, the pandas
and toolkit metadata) are those of a small export built from bodies in the same process,
and its manifest is written by the toolkit's own :func:`toolkit._atomic.atomic_files`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from _synthetic import CHANNELS, REASONS, RULES, SERVICE_NAME, SYMBOLS, T0_MS, VENUES

#: orders generated at a time: about 0.6 GiB of columns in flight
CHUNK = 250_000
TRADES = 3
QUOTES = 5
#: the share of closed limit orders among the closed orders (the rest are market orders)
LIMIT_SHARE = 0.05
FRAMES = ("orders", "trades", "fees", "evaluated_tickers", "fills")
NS_PER_DAY = 86_400 * 10**9
#: rows per row group of a recording file (the recorder's)
ROW_GROUP = 65_536
#: a ticker row is received this long after its time
LAG_NS = 40_000_000
_PAIRS = list(SYMBOLS)
_MIDS = np.array([SYMBOLS[s] for s in _PAIRS])
_HEX = pa.array([f"{k:04x}" for k in range(65_536)], pa.string())
_RATES = np.array([0.001, 0.0015, 0.002, 0.0025])
#: decimal places of each pair's prices (as the simulator's tickers), the spread around mid
_PLACES = np.array([4 if s.startswith("USDT") else 2 for s in _PAIRS])
_SPREAD = (1 - 1e-4, 1 + 1e-4, 1.0)


def reference_schemas() -> dict[str, pa.Schema]:
    """The schema of each file ``OrderFrames.to_parquet`` writes for closed market and
    limit orders built from their bodies (``build_frames``), metadata included."""
    import json
    import random
    import tempfile

    from _synthetic import closed_order, mixed_order_dicts

    from toolkit.frames._frames import build_frames

    rng = random.Random(0)
    orders = [closed_order(rng, i) for i in range(20)]
    orders.append(mixed_order_dicts(13)[12])  # a closed limit order
    bodies = [json.dumps(o, separators=(",", ":")).encode() for o in orders]
    with tempfile.TemporaryDirectory() as tmp:
        written = build_frames(bodies).to_parquet(tmp)
        return {name: pq.read_schema(written[name]) for name in FRAMES}


def _strings(values: np.ndarray, labels: pa.Array) -> pa.Array:
    """``labels`` taken at the integer positions ``values``."""
    return pc.take(labels, pa.array(values, pa.int32()))


def _join(*parts: Any) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


def _text(values: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(values, pa.float64()), pa.string())


def _padded(values: np.ndarray, width: int) -> pa.Array:
    return pc.utf8_lpad(pc.cast(pa.array(values, pa.int64()), pa.string()), width, "0")


def _ms(values: np.ndarray) -> pa.Array:
    return pa.array(values.astype("int64"), pa.int64()).cast(pa.timestamp("ms", tz="UTC"))


def _table(columns: dict[str, Any], schema: pa.Schema, rows: int) -> pa.Table:
    """``columns`` (absent ones null) as a table of ``schema`` (types and metadata)."""
    arrays = []
    for field in schema:
        value = columns.get(field.name)
        if value is None:
            arrays.append(pa.nulls(rows, field.type))
        elif isinstance(value, str):
            arrays.append(pa.repeat(pa.scalar(value, field.type), rows))
        else:
            array = value if isinstance(value, pa.Array | pa.ChunkedArray) else pa.array(value)
            arrays.append(array.cast(field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def export_chunk(
    lo: int, hi: int, schemas: dict[str, pa.Schema], seed: int = 0
) -> dict[str, pa.Table]:
    """Orders ``lo`` to ``hi`` (one a minute from ``T0_MS``) as the five frames' tables."""
    n = hi - lo
    rng = np.random.default_rng([seed, lo])
    i = np.arange(lo, hi)
    limit = rng.random(n) < LIMIT_SHARE
    ids = _join(
        pc.if_else(pa.array(limit), "l", "m"), "-", _padded(i, 6), "-",
        _strings(rng.integers(0, 65_536, n), _HEX),
    )  # fmt: skip
    pair = rng.integers(0, len(_PAIRS), n)
    base = _MIDS[pair]
    mid = base * (1 + rng.uniform(-0.05, 0.05, n))
    amount = np.maximum(np.round(rng.uniform(50, 20_000, n) / mid, 8), 1e-8)
    quote = np.round(amount * mid, 2)
    created = T0_MS + i * 60_000 + rng.integers(0, 60_000, n)
    managed = rng.random(n) < 0.4
    venue = rng.integers(0, len(VENUES), n)
    venues = pa.array(VENUES, pa.string())
    venue_s = _strings(venue, venues)
    exchange = pc.if_else(pa.array(managed), SERVICE_NAME, venue_s)
    executed_exchange = pc.if_else(pa.array(managed), venue_s, pa.scalar(None, pa.string()))
    buy = rng.random(n) < 0.5
    side = pc.if_else(pa.array(buy), "buy", "sell")
    order_type = pc.if_else(pa.array(limit), "limit", "market")
    symbol = _strings(pair, pa.array(_PAIRS, pa.string()))
    channel = _strings(rng.integers(0, len(CHANNELS), n), pa.array(CHANNELS, pa.string()))
    rule = _strings(rng.integers(0, len(RULES), n), pa.array(RULES, pa.string()))

    # quotes: every venue once, shuffled, around the pair's reference price
    q_venue = np.argsort(rng.random((n, QUOTES)), axis=1) % len(VENUES)
    q_price = np.round(base[:, None] * (1 + rng.uniform(-0.01, 0.01, (n, QUOTES))), 2)
    q_at = created[:, None] - rng.integers(50, 1_500, (n, QUOTES))
    q_reason = np.where(
        rng.random((n, QUOTES)) < 0.15, rng.integers(0, len(REASONS), (n, QUOTES)), -1
    )
    reasons = pa.array([*REASONS, None], pa.string())

    # the fills
    fill_mid = base * (1 + rng.uniform(-0.01, 0.01, n))
    executed = created + rng.integers(100, 5_000, n)
    full = rng.random(n) < 0.9
    filled = amount * np.where(full, 1.0, rng.uniform(0.3, 0.95, n))
    rate = _RATES[rng.integers(0, len(_RATES), n)]
    part = np.repeat(np.round(filled / TRADES, 8)[:, None], TRADES, axis=1)
    part[:, -1] = filled - part[:, :-1].sum(axis=1)
    t_price = fill_mid[:, None] * (1 + rng.uniform(-0.002, 0.002, (n, TRADES)))
    t_cost = part * t_price
    total = t_cost.sum(axis=1)
    average = np.round(total / filled, 2)
    updated = executed + rng.integers(10, 500, n)
    fee_cost = np.round(total * rate, 2)
    fee_cripto = np.round(filled * rate, 8)
    remaining = np.round(amount - filled, 8)
    oid = {"id": ids}
    orders = {
        **oid,
        "exchange": exchange,
        "symbol": symbol,
        "side": side,
        "type": order_type,
        "status": "CLOSED",
        "statusRaw": "closed",
        "errorMessage": "",
        "amount": amount,
        "quoteAmount": quote,
        "quoteAmountOriginal": quote,
        "remainingQuoteAmount": np.where(full, 0.0, np.round(quote - total, 2)),
        "average": average,
        "createdAt": _ms(created),
        "updatedAt": _ms(updated),
        "executedAt": _ms(executed),
        "channel": channel,
        "rule": rule,
        "operationalFees": np.round(quote * 0.001, 2),
        "executedExchange": executed_exchange,
        "account": "A1",
        "orderPoolId": _join("pool-", ids),
        "filledStatus": pc.if_else(pa.array(full), "filled", "partiallyFilled"),
        "amountOriginal": amount,
        "remainingAmount": remaining,
        "filled": np.round(filled, 8),
        "remaining": remaining,
        "cost": np.round(total, 2),
        "price": average,
        "info": "",
        "fee.cost": fee_cost,
        "fee.rate": rate,
        "fee.cripto": fee_cripto,
        "fee.tierService.currentTierFeeRate": rate,
        "fee.tierService.currentTierFeeFiat": fee_cost,
        "fee.tierService.currentTierFeeCripto": fee_cripto,
        # closed limit orders: their limit, expiry, group and trigger
        "limitPrice": pa.array(
            np.round(base * np.where(buy, 0.97, 1.03), 2), mask=~limit, type=pa.float64()
        ),
        "statusGroup": pc.if_else(pa.array(limit), "FINALIZED", pa.scalar(None, pa.string())),
        "statusReason": pc.if_else(pa.array(limit), "", pa.scalar(None, pa.string())),
    }
    limit_ms = {
        name: pa.array(values, mask=~limit, type=pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
        for name, values in (("expiresAt", created + 86_400_000), ("triggeredAt", created + 30_000))
    }
    orders.update(limit_ms)

    def per(values: Any, k: int) -> Any:
        """An order's value on each of its ``k`` rows."""
        if isinstance(values, np.ndarray):
            return np.repeat(values, k)
        return pc.take(values, pa.array(np.repeat(np.arange(n), k), pa.int32()))

    k = np.tile(np.arange(TRADES), n)
    t_ids = per(ids, TRADES)
    t_cost_flat = t_cost.ravel()
    t_rate = per(rate, TRADES)
    trades = {
        "orderId": t_ids,
        "id": _join("t-", t_ids, "-", pc.cast(pa.array(k), pa.string())),
        "takerOrMaker": pc.if_else(pa.array(rng.random(n * TRADES) < 0.5), "taker", "maker"),
        "type": per(order_type, TRADES),
        "side": per(side, TRADES),
        "price": np.round(t_price.ravel(), 2),
        "amount": np.round(part.ravel(), 8),
        "cost": np.round(t_cost_flat, 2),
        "timestamp": _ms(np.repeat(executed, TRADES) + k * 7),
        "fee.cost": np.round(t_cost_flat * t_rate, 2),
        "fee.rate": t_rate,
        "fee.cripto": np.round(part.ravel() * t_rate, 8),
    }
    fills = {
        **trades,
        "symbol": per(symbol, TRADES),
        "exchange": per(exchange, TRADES),
        "executedExchange": per(executed_exchange, TRADES),
        "venue": per(venue_s, TRADES),
        "rule": per(rule, TRADES),
        "channel": per(channel, TRADES),
        "orderType": per(order_type, TRADES),
        "orderStatus": "CLOSED",
    }
    fees = {
        "orderId": ids,
        "symbol": symbol,
        "cost": fee_cost,
        "rate": rate,
        "cripto": fee_cripto,
        "tierService.currentTierFeeRate": rate,
        "tierService.currentTierFeeFiat": fee_cost,
        "tierService.currentTierFeeCripto": fee_cripto,
        "operationalFees": orders["operationalFees"],
    }
    quotes = {
        "orderId": per(ids, QUOTES),
        "rank": np.tile(np.arange(QUOTES), n),
        "exchange": _strings(q_venue.ravel(), venues),
        "price": q_price.ravel(),
        "quotedAt": _ms(q_at.ravel()),
        "reason": _strings(np.where(q_reason < 0, len(REASONS), q_reason).ravel(), reasons),
    }
    rows = {"orders": n, "trades": n * TRADES, "fees": n, "evaluated_tickers": n * QUOTES}
    rows["fills"] = n * TRADES
    columns = {
        "orders": orders,
        "trades": trades,
        "fees": fees,
        "evaluated_tickers": quotes,
        "fills": fills,
    }
    return {name: _table(columns[name], schemas[name], rows[name]) for name in FRAMES}


def build_export(
    out: Path, n: int, *, chunk: int = CHUNK, progress: Callable[[str], None] | None = None
) -> None:
    """``n`` closed orders as an export folder (``OrderFrames.to_parquet``'s five files and
    manifest, whole or not at all), ``chunk`` orders at a time."""
    from toolkit._atomic import atomic_files

    schemas = reference_schemas()
    with atomic_files(out, [f"{name}.parquet" for name in FRAMES]) as files:
        writers = {
            name: pq.ParquetWriter(files.path(f"{name}.parquet"), schemas[name], compression="zstd")
            for name in FRAMES
        }
        try:
            for lo in range(0, n, chunk):
                for name, table in export_chunk(lo, min(n, lo + chunk), schemas).items():
                    writers[name].write_table(table)
                if progress:
                    progress(f"built {min(n, lo + chunk):,} orders")
        finally:
            for writer in writers.values():
                writer.close()


# ------------------------------------------------------------------------- recording


def build_recording(
    root: Path,
    lo_ns: int,
    hi_ns: int,
    n_ticks: int,
    *,
    files_per_day: int = 4,
    progress: Callable[[str], None] | None = None,
) -> int:
    """``n_ticks`` watchticker rows of the four pairs in turn, evenly from ``lo_ns`` to
    ``hi_ns`` (a random walk around each pair's price), each with its raw message, in
    ``files_per_day`` files a day written as the recorder writes them (range-named, one
    per channel and day); the number of files."""
    from toolkit.recording._layout import parquet_writer, range_name
    from toolkit.recording._rows import partition_dir, recording_schema

    schema = recording_schema()
    step = max(1, (hi_ns - lo_ns) // n_ticks)
    slot = NS_PER_DAY // files_per_day
    rng = np.random.default_rng(1)
    level = np.log(_MIDS)
    symbols = pa.array(_PAIRS, pa.string())
    files = 0
    first = 0
    k = 0
    # a row is received 40 ms after the ticker's time; files are cut by received time
    base = lo_ns + LAG_NS
    while first < n_ticks:
        t0 = base + first * step
        end_ns = (t0 // slot + 1) * slot  # this file's slot ends there
        last = min(n_ticks, -(-(end_ns - base) // step))
        j = np.arange(first, last)
        t = base + j * step
        pair = j % len(_PAIRS)
        log_mid = np.empty(len(j))
        steps = rng.normal(0, 2e-5, len(j))
        for p in range(len(_PAIRS)):
            mask = pair == p
            walk = level[p] + np.cumsum(steps[mask])
            log_mid[mask] = walk
            if len(walk):
                level[p] = walk[-1]
        mid = np.exp(log_mid)
        places = _PLACES[pair]
        bid, ask, last_px = (np.round(mid * f * 10**places) / 10**places for f in _SPREAD)
        updated = (t - LAG_NS) // 1_000_000
        pair_s = pc.take(symbols, pa.array(pair, pa.int32()))
        # the message as the service sends it, kept on every row as the recorder does
        raw = _join(
            '{"channel":"watchticker","message":{"symbol":"', pair_s,
            '","bid":"', _text(bid), '","ask":"', _text(ask), '","last":"', _text(last_px),
            '","timestamp":', pc.cast(pa.array(updated, pa.int64()), pa.string()), "}}",
        )  # fmt: skip
        columns = {
            "received_at": pa.array(t, pa.int64()).cast(schema.field(0).type),
            "connection_id": "c1",
            "seq": pa.array(j + 1, pa.int64()),
            "channel": "watchticker",
            "symbol": pair_s,
            "updated_at": _ms(updated),
            "bid": bid,
            "ask": ask,
            "last": last_px,
            "raw": raw,
        }
        table = _table(columns, schema, len(j))
        # the recorder's writer and file name, without its fsyncs (recording.done, written
        # by the caller last, says the whole recording is there)
        day = time.strftime("%Y-%m-%d", time.gmtime(int(t0 // NS_PER_DAY) * 86_400))
        folder = partition_dir(root, "watchticker", day)
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{int(t[0]):020d}-1-{k:06d}"
        tmp = folder / f".part-{name}.parquet.tmp"
        with parquet_writer(tmp, schema, "zstd") as writer:
            writer.write_table(table, row_group_size=ROW_GROUP)
        os.replace(tmp, folder / range_name(name, int(t[0]), int(t[-1])))
        files += 1
        k += 1
        if progress and k % 500 == 0:
            progress(f"written {last:,} ticker rows in {files:,} files")
        first = last
    write_gap(root, (lo_ns + hi_ns) // 2)
    return files


def write_gap(root: Path, at_ns: int) -> None:
    """The ``_session`` rows of a two-minute disconnection at ``at_ns``."""
    from toolkit.recording._rows import session_row
    from toolkit.recording._writer import RecordingWriter

    end = at_ns + 120 * 10**9
    with RecordingWriter(root) as writer:
        writer.add(session_row("disconnected", received_at_ns=at_ns, connection_id="c1"))
        writer.add(session_row("connected", received_at_ns=end, connection_id="c2"))
        writer.add(
            session_row(
                "gap", received_at_ns=end, connection_id="c2", gap_start_ns=at_ns, gap_end_ns=end
            )
        )


def orders_span_ns(export: Path, margin_s: int = 600) -> tuple[int, int]:
    """The first and last ``createdAt`` of the export's orders, in ns, +- ``margin_s``."""
    created = pq.read_table(export / "orders.parquet", columns=["createdAt"]).column(0)
    bounds = pc.min_max(created.cast(pa.int64()))
    lo = int(bounds["min"].as_py()) * 1_000_000 - margin_s * 10**9
    hi = int(bounds["max"].as_py()) * 1_000_000 + margin_s * 10**9
    return lo, hi


def timed(what: str, work: Callable[[], Any]) -> tuple[Any, float]:
    """``work()`` and its wall seconds, printed."""
    began = time.perf_counter()
    out = work()
    seconds = time.perf_counter() - began
    print(f"{what}: {seconds:.0f} s", flush=True)
    return out, seconds
