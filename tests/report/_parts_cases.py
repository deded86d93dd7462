"""The order sets of the report tests gathered in one list (for the parts built in chunks, and
for whoever needs a realistic OrderParts of each), with markets that cover their orders."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from _report_frames import T0_MS, Frames, closed_order, make_frames

MS = 1_000_000  # ns per ms


def quote(oid: str, rank: int, exchange: str, price: float, reason: str | None = None) -> dict:
    return {
        "orderId": oid,
        "rank": rank,
        "exchange": exchange,
        "price": price,
        "quotedAt": T0_MS - 100,
        "reason": reason,
    }


def trade(oid: str, tid: str, price: float, amount: float = 1.0, **over: Any) -> dict:
    row = {
        "orderId": oid,
        "id": tid,
        "takerOrMaker": "taker",
        "type": "market",
        "side": "buy",
        "price": price,
        "amount": amount,
        "cost": round(price * amount, 2),
        "timestamp": T0_MS + 1_000,
    }
    row.update(over)
    return row


def limit_order(oid: str, side: str, status: str, limit: float, **over: Any) -> dict[str, Any]:
    row = closed_order(oid, side, 100.0, type="limit", status=status, limitPrice=limit)
    if status != "EXECUTED":
        row.update(average=None, cost=None, filled=0.0, executedAt=None, quoteAmount=None)
    row.update(expiresAt=T0_MS + 3_600_000, updatedAt=T0_MS + 30_000)
    row.update(over)
    return row


def routing() -> Frames:
    return make_frames(
        [
            closed_order("w", "buy", 100.2, executedExchange="venueC"),
            closed_order("a", "sell", 101.0, executedExchange="venueB"),
            closed_order("i", "buy", 99.9, executedExchange="venueA"),
            closed_order("n", "buy", 99.0, executedExchange="venueA"),  # no quote
        ],
        quotes=[
            quote("w", 0, "venueA", 100.0),
            quote("w", 1, "venueB", 99.0, "venue timeout"),
            quote("w", 2, "venueC", 100.5),
            quote("a", 0, "venueA", 100.0),
            quote("a", 1, "venueB", 101.0),
            quote("a", 2, "venueC", 102.0, "price deviation"),
            quote("i", 0, "venueA", 100.0),
            quote("i", 1, "venueC", 100.0, "insufficient liquidity"),
        ],
    )


def duplicates() -> Frames:
    # "a" in the first and in a later chunk: the latest updatedAt is kept, at its own row;
    # "d" twice without updatedAt: its last row; "c" twice, the later row older
    first = closed_order("a", "buy", 101.0, updatedAt=T0_MS + 2_000)
    latest = closed_order("a", "buy", 102.0, updatedAt=T0_MS + 5_000)
    orders = [
        first,
        closed_order("b", "sell", 100.0),
        closed_order("c", "buy", 100.5, updatedAt=T0_MS + 9_000),
        closed_order("d", "buy", 100.1, updatedAt=None),
        closed_order("e", "sell", 99.0),
        latest,
        closed_order("c", "buy", 100.7, updatedAt=T0_MS + 1_000),
        closed_order("d", "buy", 100.3, updatedAt=None),
        closed_order("f", "buy", 100.0),
    ]
    t = trade("a", "t1", 102.0, takerOrMaker="maker")
    return make_frames(
        orders,
        trades=[t, t, trade("c", "t2", 100.5), trade("f", "t3", 100.0)],
        quotes=[quote("a", 0, "venueA", 100.0), quote("a", 0, "venueA", 100.0)]
        + [quote(x, 0, "venueA", 100.0) for x in "bcdef"],
    )


def checks() -> Frames:
    # fee mismatches, a missing average priced from trades, trades that disagree with their
    # order (ids out of order so the set's sort by orderId shows), a negative time to
    # execution, sides and statuses the report cannot read, in several chunks
    orders = [
        closed_order("z9", "buy", 100.0, **{"fee.cost": 1.0, "fee.cripto": 0.02}),
        closed_order("b2", "buy", None, cost=200.0, filled=2.0),
        closed_order("a1", "sell", 100.0, quoteAmount=130.0),
        closed_order("m5", "hold", 100.0),
        closed_order("c3", "buy", 100.0, **{"fee.cost": 0.0, "fee.cripto": 0.01}),
        closed_order("q7", "", 100.0, status="WEIRD"),
        closed_order("k4", "buy", 100.0, executedAt=T0_MS - 5_000),
        closed_order("y8", "sideways", 100.0, status=""),
        closed_order("a0", "buy", 90.0),
    ]
    trades = [
        trade("b2", "t1", 100.0, 2.0),
        trade("z9", "t2", 100.0, **{"fee.cost": 0.2}),
        trade("a1", "t3", 100.0),
        trade("a0", "t4", 100.0),
        trade("ghost", "t5", 100.0, takerOrMaker="maker"),  # no order in the set
        trade("c3", "t6", 100.0, **{"fee.cripto": 0.5}),
        trade("z9", "t7", 100.0, **{"fee.cost": 0.3}),
    ]
    return make_frames(orders, trades=trades)


def odd_orders() -> Frames:
    # an order without createdAt, one without type, one without symbol; a limit set
    orders = [
        closed_order("nc", "buy", 100.0, createdAt=None),
        closed_order("nt", "sell", 100.0, type=None),
        closed_order("ns", "buy", 100.0, symbol=None),
        limit_order("l1", "buy", "EXECUTED", 100.5, triggeredAt=T0_MS + 500),
        limit_order("l2", "sell", "CANCELLED", 103.0, cancelRequestedAt=T0_MS + 20_000),
        limit_order("l3", "buy", "EXPIRED", 95.0),
        limit_order("l4", "buy", "OPEN", 96.0),
        closed_order("r1", "buy", 100.0, status="REJECTED", errorMessage="no funds"),
    ]
    return make_frames(orders, trades=[trade("l1", "t1", 100.0), trade("nt", "t2", 100.0)])


def numeric_ids() -> Frames:
    frames = make_frames(
        [closed_order(str(i), "buy" if i % 2 else "sell", 100.0 + i) for i in (5, 3, 11, 3, 7)],
        trades=[trade(str(i), f"t{i}", 100.0 + i) for i in (7, 3, 11)],
    )
    frames.orders["id"] = frames.orders["id"].astype("int64")
    frames.trades["orderId"] = frames.trades["orderId"].astype("int64")
    return frames


def quote_problems() -> Frames:
    # quote elements with a field no setting names and without a quote time
    quotes = [
        {"orderId": x, "rank": 0, "exchange": "venueA", "price": 100.0, "extra": "v"}
        for x in ("a", "b", "c")
    ]
    orders = [closed_order(x, "buy", 100.2) for x in "abcd"]
    frames = make_frames(orders, quotes=quotes)
    frames.evaluated_tickers = frames.evaluated_tickers.drop(columns=["quotedAt", "reason"])
    return frames


def unusable_quotes() -> Frames:
    # the quotes carry no price under the names the frames were built with
    quotes = [{"orderId": x, "rank": 0, "exchange": "venueA", "px": 100.0} for x in "ab"]
    frames = make_frames([closed_order(x, "buy", 100.2) for x in "abc"], quotes=quotes)
    frames.evaluated_tickers = frames.evaluated_tickers.drop(columns=["price"])
    return frames


def synthetic(kind: str, n: int) -> Any:
    import _synthetic

    from toolkit.frames._frames import build_frames

    bodies = _synthetic.mixed_orders(n) if kind == "mixed" else _synthetic.synthetic_orders(n)
    return build_frames(bodies)


def empty() -> Frames:
    return make_frames([])


@dataclass(frozen=True)
class Case:
    """An order set of the report tests."""

    name: str
    frames: Callable[[], Any]


CASES: list[Case] = [
    Case("routing", routing),
    Case("duplicates", duplicates),
    Case("checks", checks),
    Case("odd orders", odd_orders),
    Case("numeric ids", numeric_ids),
    Case("quote problems", quote_problems),
    Case("unusable quotes", unusable_quotes),
    Case("mixed", lambda: synthetic("mixed", 16)),
    Case("synthetic", lambda: synthetic("synthetic", 6)),
    Case("empty", empty),
]


def as_order_frames(frames: Any) -> Any:
    """``frames`` as OrderFrames (the report tests' stand-ins have no fees or fills)."""
    from toolkit.frames._frames import OrderFrames

    if isinstance(frames, OrderFrames):
        return frames
    return OrderFrames(
        orders=frames.orders,
        trades=frames.trades,
        fees=pd.DataFrame({"orderId": pd.Series(dtype="str")}),
        evaluated_tickers=frames.evaluated_tickers,
        fills=pd.DataFrame({"orderId": pd.Series(dtype="str")}),
    )


def export(frames: Any, folder: Path) -> Path:
    """``frames`` written as an export folder (``OrderFrames.to_parquet``)."""
    as_order_frames(frames).to_parquet(folder)
    return folder


def tick(symbol: str, at_ms: int, mid: float, spread: float = 0.2) -> dict[str, Any]:
    return {
        "symbol": symbol,
        "bid": mid - spread / 2,
        "ask": mid + spread / 2,
        "last": mid,
        "timestamp": pd.Timestamp(at_ms, unit="ms", tz="UTC"),
        "received_at": pd.Timestamp(at_ms + 5, unit="ms", tz="UTC"),
    }


def market_frame(start_ms: int = T0_MS - 100_000, seconds: int = 300) -> pd.DataFrame:
    """Tickers of BTC/BRL every 3 s (mid drifting) from ``start_ms`` for ``seconds``."""
    rows = [
        tick("BTC/BRL", start_ms + s * 1_000, 100.0 + (s % 17) / 10) for s in range(0, seconds, 3)
    ]
    return pd.DataFrame(rows)


def write_recording(root: Path, start_ms: int = T0_MS - 100_000, seconds: int = 300) -> Path:
    """A recording of watchtickers (BTC/BRL and ETH/BRL) every 4 s from ``start_ms`` with a
    disconnect in the middle (a gap), written by the toolkit's recorder."""
    from toolkit.recording._rows import session_row
    from toolkit.recording._writer import RecordingWriter

    def tickers(at_ms: int, btc: float) -> str:
        pairs = [
            {"symbol": "BTC/BRL", "bid": btc - 0.1, "ask": btc + 0.1, "last": btc},
            {"symbol": "ETH/BRL", "bid": 9.9, "ask": 10.1, "last": 10.0},
        ]
        for p in pairs:
            p["timestamp"] = at_ms
        return json.dumps({"channel": "watchtickers", "message": {"tickers": pairs}})

    with RecordingWriter(root) as writer:
        for seq, s in enumerate(range(0, seconds, 4), 1):
            at = start_ms + s * 1_000
            writer.add_raw(tickers(at, 100.0 + (s % 13) / 10), (at + 5) * MS, "c1", seq)
        mid = start_ms + seconds * 500
        gap = (mid * MS, (mid + 20_000) * MS)
        writer.add(session_row("disconnected", received_at_ns=gap[0], connection_id="c1"))
        writer.add(session_row("connected", received_at_ns=gap[1], connection_id="c2"))
    return root


def write_ticker_file(root: Path, date: str, name: str, ticks: list[tuple[int, float]]) -> Path:
    """A ``watchticker`` file of BTC/BRL rows (updated ms, mid) received 7 ms later, one
    connection, as the recorder's schema has them; returns the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from toolkit.recording._rows import partition_dir, recording_schema

    schema = recording_schema()
    n = len(ticks)
    rows: dict[str, list[Any]] = {c: [None] * n for c in schema.names}
    rows.update(
        received_at=[(u + 7) * MS for u, _ in ticks],
        connection_id=["c1"] * n,
        seq=list(range(1, n + 1)),
        channel=["watchticker"] * n,
        symbol=["BTC/BRL"] * n,
        updated_at=[u for u, _ in ticks],
        bid=[m - 0.1 for _, m in ticks],
        ask=[m + 0.1 for _, m in ticks],
        last=[m for _, m in ticks],
        raw=["{}"] * n,
    )
    d = partition_dir(root, "watchticker", date)
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pydict(rows, schema=schema), d / name)
    return d / name
