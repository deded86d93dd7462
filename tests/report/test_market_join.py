"""The market join on the report's engine (toolkit/report/_market_join.py): a recording's
root read where it lies, ties and the quote-age limit settled as the pandas join did, the
engine's memory limit checked."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _report_frames import T0_MS, closed_order, make_frames

from toolkit.errors import InvalidRequest
from toolkit.report import _metrics, execution_report
from toolkit.report._engine import MEMORY_ENV
from toolkit.report._market import read_market

MS = 1_000_000  # ns per ms


def write_tickers(root: Path, ticks: list[tuple[int, int, float]]) -> Path:
    """A recording of ``watchticker`` rows of BTC/BRL: (updated ms, received ms, mid), one
    connection, seq in the order given, spread 0.2, as the recorder's schema has them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from toolkit.recording._rows import partition_dir, recording_schema

    schema = recording_schema()
    n = len(ticks)
    rows: dict[str, list[Any]] = {name: [None] * n for name in schema.names}
    rows.update(
        received_at=[r * MS for _, r, _ in ticks],
        connection_id=["c1"] * n,
        seq=list(range(1, n + 1)),
        channel=["watchticker"] * n,
        symbol=["btc/brl"] * n,  # the pair in another case: compared without it
        updated_at=[u for u, _, _ in ticks],
        bid=[m - 0.1 for _, _, m in ticks],
        ask=[m + 0.1 for _, _, m in ticks],
        last=[m for _, _, m in ticks],
        raw=["{}"] * n,
    )
    d = partition_dir(root, "watchticker", "2025-11-13")
    d.mkdir(parents=True)
    pq.write_table(pa.Table.from_pydict(rows, schema=schema), d / "part-0.parquet")
    return root


def test_a_recording_root_is_read_by_the_engine_not_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.recording import _read

    root = write_tickers(tmp_path, [(T0_MS - 2_000, T0_MS - 1_990, 100.0)])
    write_tickers(tmp_path / "later", [(T0_MS + 1_000, T0_MS + 1_010, 200.0)])
    # a second file of the channel: both are read
    (tmp_path / "later" / "channel=watchticker" / "date=2025-11-13" / "part-0.parquet").rename(
        tmp_path / "channel=watchticker" / "date=2025-11-13" / "part-1.parquet"
    )
    asked: list[Any] = []
    real = _read.read_table

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(args[1] if len(args) > 1 else kwargs.get("channel"))
        return real(*args, **kwargs)

    monkeypatch.setattr(_read, "read_table", spy)
    frames = make_frames([closed_order("b", "buy", 101.0, executedAt=T0_MS + 1_005)])
    po = execution_report(frames, root)["per_order"].set_index("orderId")
    # the ticker rows never pass through pandas: only watchtickers and _session do
    assert asked and all("watchticker" not in channels for channels in asked), asked
    assert po.loc["b", "arrival_mid"] == pytest.approx(100.0)
    # +0 s markout at T0 + 1.005 s: the 200 mid of T0 + 1 s, in the second file
    assert po.loc["b", "markout_0s_bp"] == pytest.approx((101 - 200) / 200 * 1e4)


def test_the_root_and_its_rows_as_a_frame_give_the_same_orders(tmp_path: Path) -> None:
    ticks = [(T0_MS + s * 1_000, T0_MS + s * 1_000 + 7, 100.0 + s) for s in range(-70, 130, 3)]
    root = write_tickers(tmp_path, ticks)
    frames = make_frames(
        [closed_order("b", "buy", 101.0), closed_order("s", "sell", 99.0, createdAt=T0_MS + 9)]
    )
    lazy = _metrics.per_order(frames, None)
    from_root = execution_report(frames, root)["per_order"]
    from_frame = execution_report(frames, read_market(root))["per_order"]
    pd.testing.assert_frame_equal(from_root, from_frame)
    assert from_root["markout_60s_bp"].notna().all()
    assert lazy["arrival_mid"].isna().all()


def test_a_tie_at_one_moment_takes_the_row_read_last(tmp_path: Path) -> None:
    # two tickers of the same pair at the same service time: the one received later wins
    # (as the pandas join took the last of equal times), in a frame and in a recording
    ticks = [(T0_MS - 1_000, T0_MS - 900, 100.0), (T0_MS - 1_000, T0_MS - 800, 110.0)]
    ticks.append((T0_MS + 5_000, T0_MS + 5_010, 120.0))  # the recording runs past T0
    frames = make_frames([closed_order("b", "buy", 101.0)])
    root = write_tickers(tmp_path, ticks)
    from_root = execution_report(frames, root)["per_order"]
    assert from_root["creation_mid"].iloc[0] == pytest.approx(110.0)
    rows = read_market(root)
    assert _metrics.per_order(frames, rows)["creation_mid"].iloc[0] == pytest.approx(110.0)
    # the same rows in the other order: the other one is the last
    flipped = rows.iloc[[1, 0, 2]].reset_index(drop=True)
    assert _metrics.per_order(frames, flipped)["creation_mid"].iloc[0] == pytest.approx(100.0)


def test_a_ticker_exactly_max_quote_age_old_is_still_a_price() -> None:
    def tick(at_ms: int, mid: float) -> dict[str, Any]:
        at = pd.Timestamp(at_ms, unit="ms", tz="UTC")
        return {"symbol": "BTC/BRL", "bid": mid - 0.1, "ask": mid + 0.1, "last": mid} | {
            "timestamp": at,
            "received_at": at,
        }

    frames = make_frames([closed_order("b", "buy", 101.0)])  # created at T0
    market = pd.DataFrame([tick(T0_MS - 60_000, 100.0), tick(T0_MS + 90_000, 100.0)])
    po = _metrics.per_order(frames, market, max_quote_age=60.0)
    assert po["creation_mid"].iloc[0] == pytest.approx(100.0)
    # a millisecond older is no price at T0
    po = _metrics.per_order(frames, market, max_quote_age=59.999)
    assert math.isnan(po["creation_mid"].iloc[0])
    assert _metrics.per_order(frames, market, max_quote_age=None)["creation_mid"].notna().all()


def test_an_unreadable_engine_memory_limit_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_ENV, "lots")
    frames = make_frames([closed_order("b", "buy", 101.0)])
    market = pd.DataFrame(
        {"symbol": ["BTC/BRL"], "bid": [99.9], "ask": [100.1], "last": [100.0]}
        | {"timestamp": [pd.Timestamp(T0_MS - 1_000, unit="ms", tz="UTC")]}
    )
    with pytest.raises(InvalidRequest, match=rf"\${MEMORY_ENV}='lots'"):
        execution_report(frames, market)
