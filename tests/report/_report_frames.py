"""Hand-made order frames for the report tests: columns and dtypes as docs/contracts.md
"Frames" says (decimals float64, timestamps datetime64[ms, UTC]); bench/ made importable."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

# the synthetic orders of bench/_synthetic.py serve the tests too
BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

T0_MS = 1_763_000_000_000  # 2025-11-13T02:13:20Z

ORDER_DTYPES: dict[str, str] = {
    "id": "str",
    "exchange": "str",
    "symbol": "str",
    "side": "str",
    "type": "str",
    "status": "str",
    "statusRaw": "str",
    "errorMessage": "str",
    "amount": "float64",
    "quoteAmount": "float64",
    "quoteAmountOriginal": "float64",
    "remainingQuoteAmount": "float64",
    "average": "float64",
    "createdAt": "datetime64[ms, UTC]",
    "updatedAt": "datetime64[ms, UTC]",
    "executedAt": "datetime64[ms, UTC]",
    "channel": "str",
    "rule": "str",
    "operationalFees": "float64",
    "executedExchange": "str",
    "filledStatus": "str",
    "amountOriginal": "float64",
    "filled": "float64",
    "cost": "float64",
    "fee.cost": "float64",
    "fee.rate": "float64",
    "fee.cripto": "float64",
    "fee.tierService.currentTierFeeRate": "float64",
    "limitPrice": "float64",
    "statusReason": "str",
}
TRADE_DTYPES: dict[str, str] = {
    "orderId": "str",
    "id": "str",
    "takerOrMaker": "str",
    "type": "str",
    "side": "str",
    "price": "float64",
    "amount": "float64",
    "cost": "float64",
    "timestamp": "datetime64[ms, UTC]",
    "fee.cost": "float64",
    "fee.rate": "float64",
    "fee.cripto": "float64",
}
QUOTE_DTYPES: dict[str, str] = {
    "orderId": "str",
    "rank": "int64",
    "exchange": "str",
    "price": "float64",
    "quotedAt": "datetime64[ms, UTC]",
    "reason": "str",
}
MS_COLUMNS = {"createdAt", "updatedAt", "executedAt", "timestamp", "quotedAt", "triggeredAt"}


def table(rows: Sequence[Mapping[str, Any]], dtypes: Mapping[str, str]) -> pd.DataFrame:
    """A frame with every column of ``dtypes`` (plus extra keys of the rows), typed."""
    df = pd.DataFrame(list(rows))
    for col in dtypes:
        if col not in df.columns:
            df[col] = None
    out = {}
    for col in df.columns:
        dtype: Any = dtypes.get(col, "str" if col not in MS_COLUMNS else "datetime64[ms, UTC]")
        s = df[col]
        if dtype.startswith("datetime"):
            s = pd.to_datetime(pd.to_numeric(s), unit="ms", utc=True).astype(dtype)
        elif dtype == "int64":
            s = pd.to_numeric(s).astype("int64")
        else:
            s = s.astype(dtype)
        out[col] = s
    return pd.DataFrame(out)


@dataclass
class Frames:
    """Stand-in for OrderFrames: the three tables the report reads."""

    orders: pd.DataFrame
    trades: pd.DataFrame = field(default_factory=lambda: table([], TRADE_DTYPES))
    evaluated_tickers: pd.DataFrame = field(default_factory=lambda: table([], QUOTE_DTYPES))


def make_frames(
    orders: Sequence[Mapping[str, Any]],
    trades: Sequence[Mapping[str, Any]] = (),
    quotes: Sequence[Mapping[str, Any]] = (),
) -> Frames:
    return Frames(
        table(orders, ORDER_DTYPES), table(trades, TRADE_DTYPES), table(quotes, QUOTE_DTYPES)
    )


def closed_order(oid: str, side: str, average: float, **over: Any) -> dict[str, Any]:
    """A closed market order of 1 BTC/BRL at ``average``: cost = average, executed 2 s in."""
    row: dict[str, Any] = {
        "id": oid,
        "exchange": "toolkit-sim",
        "executedExchange": "venueA",
        "symbol": "BTC/BRL",
        "side": side,
        "type": "market",
        "status": "CLOSED",
        "statusRaw": "closed",
        "errorMessage": "",
        "amount": 1.0,
        "amountOriginal": 1.0,
        "filled": 1.0,
        "average": average,
        "cost": average,
        "quoteAmount": average,
        "createdAt": T0_MS,
        "updatedAt": T0_MS + 2_000,
        "executedAt": T0_MS + 2_000,
        "channel": "api",
        "rule": "best_price",
        "operationalFees": 0.0,
    }
    row.update(over)
    return row
