"""The chunks of the out-of-core per-order table (toolkit/report/_parts.py): each chunk's
market read is windowed, a damaged file or a failing chunk leaves nothing behind, and the
set's figures merged from chunks are those of the whole set (sans-I/O)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _parts_cases import export, write_ticker_file
from _report_frames import T0_MS, closed_order, make_frames
from test_parts import assert_same, whole_set

from toolkit.errors import InvalidRequest
from toolkit.report import _engine, _market_join, _memory
from toolkit.report._breakdowns import contingencies
from toolkit.report._checks import TRADE_CHECKS, conform_checks, set_checks
from toolkit.report._definitions import MARKOUT_HORIZONS_S
from toolkit.report._inputs import export_frames
from toolkit.report._memory import half_limit
from toolkit.report._parts import _contingencies, _Merge, order_parts
from toolkit.report._stored_checks import store_checks

DAY_MS = 86_400_000
NS = 1_000_000


def test_each_chunk_reads_only_the_tickers_of_its_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a tick-dense day around T0 and a sparse one two days later; the first chunk's orders
    # are on the dense day, the second chunk's two days later
    root = tmp_path / "rec"
    dense = write_ticker_file(
        root, "2025-11-13", "part-0.parquet", [(T0_MS + s * 500, 100.0) for s in range(-400, 800)]
    )
    later = T0_MS + 2 * DAY_MS
    sparse = write_ticker_file(
        root, "2025-11-15", "part-0.parquet", [(later + s * 10_000, 200.0) for s in range(-9, 20)]
    )
    orders = [
        closed_order("a", "buy", 100.1),
        closed_order("b", "sell", 99.9, createdAt=T0_MS + 3_000, executedAt=T0_MS + 4_000),
        closed_order("c", "buy", 200.2, createdAt=later, executedAt=later + 2_000),
        closed_order("d", "sell", 199.9, createdAt=later + 1_000, executedAt=later + 3_000),
    ]
    folder = export(make_frames(orders), tmp_path / "export")
    read: list[tuple[Any, tuple[str, ...]]] = []
    real = _market_join.window_files

    def spy(market: Any, window: Any) -> tuple[str, ...]:
        files = real(market, window)
        read.append((window, files))
        return files

    monkeypatch.setattr(_market_join, "window_files", spy)
    want = whole_set(export_frames(folder), root)
    assert want["per_order"]["markout_60s_bp"].notna().all()
    read.clear()
    parts = order_parts(folder, root, chunk_orders=2)
    try:
        assert_same(parts, want)
    finally:
        parts.close()
    (w1, f1), (w2, f2) = read
    assert f1 == (str(dense),) and f2 == (str(sparse),)
    # each window spans its orders' moments: from the earliest (the first markout of the
    # first execution) less the quote age limit, to the last markout of the last one
    first, last = min(MARKOUT_HORIZONS_S) * 1_000, max(MARKOUT_HORIZONS_S) * 1_000
    assert w1 == ((T0_MS + 2_000 + first - 60_000) * NS, (T0_MS + 4_000 + last) * NS)
    assert w2 == ((later + 2_000 + first - 60_000) * NS, (later + 3_000 + last) * NS)


def test_the_window_of_the_moments_looked_up() -> None:
    t = pd.to_datetime([T0_MS, T0_MS + 10_000], unit="ms", utc=True)
    po = pd.DataFrame(
        {
            "createdAt": t,
            "endedAt": pd.Series([pd.NaT, T0_MS + 50_000], dtype="datetime64[ms, UTC]"),
            "markout_anchor": pd.Series([T0_MS + 5_000, pd.NaT]).pipe(
                pd.to_datetime, unit="ms", utc=True
            ),
            "executed": [True, False],
        }
    )
    lo, hi = _market_join.moment_window(po, 7 * 10**9) or (None, None)
    first = (T0_MS + 5_000) * NS + min(MARKOUT_HORIZONS_S) * 10**9
    assert lo == min(T0_MS * NS, first) - 7 * 10**9
    assert hi == (T0_MS + 5_000) * NS + max(MARKOUT_HORIZONS_S) * 10**9
    # no quote age limit: no lower bound; no moment at all: no window
    assert _market_join.moment_window(po, None) == (None, hi)
    none = po.assign(createdAt=pd.NaT, endedAt=pd.NaT, executed=False)
    assert _market_join.moment_window(none, None) is None


def loose_export(tmp_path: Path) -> Path:
    frames = make_frames(
        [closed_order(x, "buy", 100.0) for x in "abcdef"],
        trades=[{"orderId": "a", "id": "t1", "amount": 1.0, "cost": 100.0}],
    )
    folder = tmp_path / "loose"
    folder.mkdir()
    frames.orders.to_parquet(folder / "orders.parquet")
    frames.trades.to_parquet(folder / "trades.parquet")
    frames.evaluated_tickers.to_parquet(folder / "evaluated_tickers.parquet")
    return folder


def test_a_damaged_file_is_named_and_nothing_is_left(tmp_path: Path) -> None:
    folder = loose_export(tmp_path)
    data = (folder / "trades.parquet").read_bytes()
    (folder / "trades.parquet").write_bytes(data[: len(data) // 2])
    parts = tmp_path / "parts"
    parts.mkdir()
    with pytest.raises(InvalidRequest, match=r"trades\.parquet"):
        order_parts(folder, chunk_orders=2, folder=parts)
    assert list(parts.iterdir()) == []


def test_a_damaged_second_file_of_a_table_is_named(tmp_path: Path) -> None:
    # a store's tables come in several files: the second one damaged is named
    folder = loose_export(tmp_path)
    damaged = tmp_path / "trades-2.parquet"
    damaged.write_bytes((folder / "trades.parquet").read_bytes()[:-40])

    class Store:
        def table_files(self) -> dict[str, list[Path]]:
            return {
                "orders": [folder / "orders.parquet"],
                "trades": [folder / "trades.parquet", damaged],
            }

    parts = tmp_path / "parts"
    parts.mkdir()
    with pytest.raises(InvalidRequest, match=r"trades-2\.parquet"):
        order_parts(Store(), chunk_orders=2, folder=parts)
    assert list(parts.iterdir()) == []


def test_a_chunk_that_fails_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolkit.report import _per_order

    folder = loose_export(tmp_path)
    real = _per_order.order_metrics
    calls: list[int] = []

    def second_fails(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise InvalidRequest("chunk 2 is broken")
        return real(*args, **kwargs)

    monkeypatch.setattr(_per_order, "order_metrics", second_fails)
    parts = tmp_path / "parts"
    parts.mkdir()
    with pytest.raises(InvalidRequest, match="chunk 2"):
        order_parts(folder, chunk_orders=2, folder=parts)
    assert list(parts.iterdir()) == []


@pytest.mark.parametrize("source", [42, "", None])
def test_a_source_that_is_no_set_is_refused(source: Any) -> None:
    with pytest.raises(InvalidRequest, match=r"export|frames"):
        order_parts(source)


@pytest.mark.parametrize("size", [0, -1, 2.5, True])
def test_a_chunk_size_that_is_no_count_is_refused(size: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="chunk_orders"):
        order_parts(loose_export(tmp_path), chunk_orders=size)


def test_trade_checks_of_chunks_merge_in_the_sets_order(tmp_path: Path) -> None:
    # chunk 1 holds ids z and b, chunk 2 a: the set's rows are sorted by orderId (its
    # groupby of the trades), each check's rows after the previous check's
    def rows(name: str, ids: list[str]) -> pd.DataFrame:
        return pd.DataFrame({"orderId": ids, "check": name, "value": np.arange(len(ids))})

    chunks = [
        {
            TRADE_CHECKS[0]: rows(TRADE_CHECKS[0], ["b", "z"]),
            "side missing/unknown": rows("side missing/unknown", ["z"]),
        },
        {
            TRADE_CHECKS[0]: rows(TRADE_CHECKS[0], ["a"]),
            TRADE_CHECKS[1]: rows(TRADE_CHECKS[1], ["a"]),
        },
    ]
    got = conform_checks(set_checks(chunks, coverage=["partial"]))
    assert got[["orderId", "check"]].values.tolist() == [
        ["", "set coverage"],
        ["z", "side missing/unknown"],
        ["a", TRADE_CHECKS[0]],
        ["b", TRADE_CHECKS[0]],
        ["z", TRADE_CHECKS[0]],
        ["a", TRADE_CHECKS[1]],
    ]
    # the same rows kept on disk, each chunk's check in a file of its own, merged there
    files = []
    for i, chunk in enumerate(chunks):
        files.append({})
        for k, (name, frame) in enumerate(chunk.items()):
            files[-1][name] = tmp_path / f"c{i}-{k}.parquet"
            conform_checks([frame]).to_parquet(files[-1][name], index=False)
    stored = store_checks(files, tmp_path, coverage=["partial"])
    pd.testing.assert_frame_equal(stored.read(), got)
    assert stored.rows() == len(got)


def test_contingencies_of_chunks_are_those_of_the_set() -> None:
    quotes = pd.DataFrame(
        {
            "exchange": ["v1", "v2", "", "v1", "v2", "v1"],
            "reason": ["", "timeout", "stale", "timeout", "", "timeout"],
        }
    )
    merge = _Merge()
    for part in (quotes.iloc[:2], quotes.iloc[2:5], quotes.iloc[5:]):
        venue = part["exchange"].replace("", "(none)")
        merge.reasons.append(
            pd.DataFrame({"exchange": venue, "reason": part["reason"]}).value_counts()
        )
    got, got_reasons = _contingencies(merge)
    want, want_reasons = contingencies(quotes)
    pd.testing.assert_frame_equal(got, want)
    pd.testing.assert_frame_equal(got_reasons, want_reasons)


def test_the_pass_holds_its_chunks_under_half_the_engine_memory_and_frees_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each chunk's joins open a connection of their own beside the pass's: the pass gets
    # half of $TOOLKIT_REPORT_MEMORY, so both stay within the limit's order
    opened: list[str | None] = []
    real = _engine.connection

    def spy(limit: str | None = None) -> Any:
        opened.append(limit)
        return real(limit)

    monkeypatch.setattr(_engine, "connection", spy)
    monkeypatch.setenv(_engine.MEMORY_ENV, "600MB")
    released: list[int] = []
    monkeypatch.setattr(_memory, "release_memory", lambda: released.append(1))
    orders = [closed_order(c, "buy", 100.1) for c in "abc"]
    folder = export(make_frames(orders), tmp_path / "export")
    order_parts(folder, chunk_orders=2).close()
    assert opened and opened[0] == "300MB"
    assert len(released) == 2  # after each chunk, what it freed goes back to the system
    assert [half_limit(x) for x in ("2GB", "1.5GiB", "80%", "lots")] == [
        "1000MB",
        "805MB",
        None,
        None,
    ]
    # a limit DuckDB refuses is still named as the variable it came from
    monkeypatch.setenv(_engine.MEMORY_ENV, "lots")
    with pytest.raises(InvalidRequest, match=_engine.MEMORY_ENV):
        order_parts(folder, chunk_orders=2)
