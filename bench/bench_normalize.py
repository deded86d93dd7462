"""Normalisation benchmark (PRODUCT.md "Targets"): raw fetchOrder bodies -> frames with
``build_frames`` against ``pd.json_normalize`` + ``pd.to_numeric`` on the same input, one run.

    python bench/bench_normalize.py [--orders 100000] [--trades 3] [--quotes 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _synthetic import synthetic_orders

from toolkit.frames._frames import build_frames
from toolkit.frames._schema import EVALUATED_TICKER, ORDER, TRADE, columns_of_kind

TARGET_RATIO = 10.0


def _numeric(df: pd.DataFrame, decimals: frozenset[str], timestamps: frozenset[str]) -> None:
    for name in df.columns:
        if name in decimals:
            df[name] = pd.to_numeric(df[name], errors="coerce")
        elif name in timestamps:
            df[name] = pd.to_datetime(df[name], unit="ms", utc=True)


def baseline(bodies: Sequence[bytes]) -> dict[str, pd.DataFrame]:
    """What an analyst writes without the toolkit: parse, json_normalize, to_numeric."""
    docs = [json.loads(body) for body in bodies]
    orders = pd.json_normalize(docs).drop(columns=["trades", "evaluatedTickers"])
    trades = pd.json_normalize(docs, record_path="trades", meta="id", meta_prefix="order.")
    quotes = pd.json_normalize(
        docs, record_path="evaluatedTickers", meta="id", meta_prefix="order."
    )
    _numeric(orders, columns_of_kind(ORDER, "dec"), columns_of_kind(ORDER, "ts"))
    _numeric(trades, columns_of_kind(TRADE, "dec"), columns_of_kind(TRADE, "ts"))
    _numeric(
        quotes, columns_of_kind(EVALUATED_TICKER, "dec"), columns_of_kind(EVALUATED_TICKER, "ts")
    )
    return {"orders": orders, "trades": trades, "evaluated_tickers": quotes}


def _timed(fn: Any, *args: Any) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def run(orders: int = 100_000, trades: int = 3, quotes: int = 5) -> dict[str, float]:
    """Time both on the same bodies; checks they agree before reporting."""
    bodies = synthetic_orders(orders, seed=0, trades=trades, quotes=quotes)
    size_mb = sum(map(len, bodies)) / 1e6
    toolkit_s, frames = _timed(build_frames, bodies)
    baseline_s, base = _timed(baseline, bodies)
    # same input, same numbers: a fast wrong answer is not a result
    checks = {
        "orders": len(frames.orders) == len(base["orders"]) == orders,
        "trades": len(frames.trades) == len(base["trades"]),
        "quotes": len(frames.evaluated_tickers) == len(base["evaluated_tickers"]),
        "trade amounts": np.isclose(frames.trades["amount"].sum(), base["trades"]["amount"].sum()),
        "fees": np.isclose(frames.orders["fee.cost"].sum(), base["orders"]["fee.cost"].sum()),
        "createdAt": bool(
            (frames.orders["createdAt"].to_numpy() == base["orders"]["createdAt"].to_numpy()).all()
        ),
    }
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        raise RuntimeError(f"build_frames and the baseline disagree on: {', '.join(failed)}")
    return {
        "orders": float(orders),
        "input_mb": size_mb,
        "toolkit_s": toolkit_s,
        "baseline_s": baseline_s,
        "ratio": baseline_s / toolkit_s,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--orders", type=int, default=100_000, help="orders (default 100000)")
    parser.add_argument("--trades", type=int, default=3, help="trades per order (default 3)")
    parser.add_argument("--quotes", type=int, default=5, help="quotes per order (default 5)")
    args = parser.parse_args(argv)
    result = run(args.orders, args.trades, args.quotes)
    print(
        f"normalise {args.orders:,} closed orders ({result['input_mb']:.0f} MB of JSON, "
        f"{args.trades} trades, {args.quotes} quotes each)"
    )
    print(f"  build_frames (pyarrow)              {result['toolkit_s']:8.2f} s")
    print(f"  json_normalize + to_numeric         {result['baseline_s']:8.2f} s")
    verdict = "meets" if result["ratio"] >= TARGET_RATIO else "MISSES"
    print(f"  ratio {result['ratio']:.1f}x ({verdict} the >= {TARGET_RATIO:.0f}x target)")
    print(json.dumps({"bench": "normalize", **result}))
    return 0 if result["ratio"] >= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
