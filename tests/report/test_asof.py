"""The market join's lookup in numpy (toolkit/report/_asof.py), sans-I/O: of tickers at one
time the one read last as the engine's ORDER BY orders them (missing read-order values
included, which a recording never has), and the backward lookup's limits: the quote age,
the recording's span, its gaps and pairs without tickers."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from toolkit.report._asof import Latest, backward


def ticks(**columns: list) -> pa.Table:
    n = len(columns["t"])
    base = {
        "symbol": ["BTC/BRL"] * n,
        "mid": [100.0 + i for i in range(n)],
        "spread_bp": [1.0] * n,
        "o1": list(range(n)),
        "o2": [None] * n,
        "o3": [None] * n,
    }
    base.update(columns)
    return pa.table(
        {
            "symbol": pa.array(base["symbol"], pa.string()),
            "t": pa.array(base["t"], pa.int64()),
            "mid": pa.array(base["mid"], pa.float64()),
            "spread_bp": pa.array(base["spread_bp"], pa.float64()),
            "o1": pa.array(base["o1"], pa.int64()),
            "o2": pa.array(base["o2"], pa.string()),
            "o3": pa.array(base["o3"], pa.int64()),
        }
    )


@pytest.mark.parametrize("seed", range(5))
def test_the_row_read_last_is_the_engines_first_by_read_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 3000
    o1 = rng.integers(0, 4, n).astype(object)
    o1[rng.random(n) < 0.2] = None
    o2 = rng.choice(np.array(["a", "b", "B", "ab", None], dtype=object), n)
    o3 = rng.integers(0, 3, n).astype(object)
    o3[rng.random(n) < 0.3] = None
    table = ticks(
        symbol=list(rng.choice(["BTC/BRL", "btc-brl", "ETH/BRL", None], n)),
        t=list(rng.integers(0, 40, n)),
        mid=list(np.arange(n, dtype="float64") + 1),
        spread_bp=[None if i % 7 == 0 else float(i) for i in range(n)],
        o1=list(o1),
        o2=list(o2),
        o3=list(o3),
    )
    pairs = {"BTCBRL": 0, "ETHBRL": 1}
    con = duckdb.connect()
    con.register("tk", table)
    con.register("m", pa.table({"symbol": ["BTC/BRL", "btc-brl", "ETH/BRL"], "sid": [0, 0, 1]}))
    # rows alike in every read-order value are left out: either may be taken
    want = con.sql(
        "WITH r AS (SELECT m.sid, tk.* FROM tk JOIN m USING (symbol) QUALIFY "
        "count(*) OVER (PARTITION BY m.sid, t, o1, o2, o3) = 1) "
        "SELECT sid, t, first(mid ORDER BY o1 DESC, o2 DESC NULLS FIRST, o3 DESC NULLS FIRST) "
        "AS mid, first(spread_bp ORDER BY o1 DESC, o2 DESC NULLS FIRST, o3 DESC NULLS FIRST) "
        "AS spread FROM r GROUP BY sid, t ORDER BY sid, t"
    ).to_arrow_table()
    kept = con.sql(
        "SELECT tk.* FROM tk JOIN m USING (symbol) QUALIFY "
        "count(*) OVER (PARTITION BY m.sid, t, o1, o2, o3) = 1"
    ).to_arrow_table()
    got = Latest(kept, pairs)

    def column(name: str) -> np.ndarray:
        return want.column(name).to_numpy(zero_copy_only=False)

    assert len(got.t) == want.num_rows == 80  # 2 pairs x 40 times, ~37 rows each
    np.testing.assert_array_equal(got.sid, column("sid"))
    np.testing.assert_array_equal(got.t, column("t"))
    np.testing.assert_array_equal(got.mid, column("mid"))
    np.testing.assert_array_equal(got.spread_bp, column("spread").astype("float64"))


def test_rows_without_a_known_pair_or_time_are_no_tickers() -> None:
    table = ticks(t=[1, None, 3], symbol=["BTC/BRL", "BTC/BRL", "XRP/BRL"])
    got = Latest(table, {"BTCBRL": 0})
    assert got.t.tolist() == [1] and got.sid.tolist() == [0]
    none = Latest(ticks(t=[1], symbol=[None]), {})
    assert len(none.t) == 0


def lookup(latest: Latest, moments: list[int], **kw: object) -> list[int]:
    t = np.array(moments, dtype="int64")
    sid = np.zeros(len(t), dtype="int64")
    args: dict = {"tolerance_ns": None, "span": (0, 10**6), "gaps": (np.array([]), np.array([]))}
    args.update(kw)
    return backward(latest, sid, t, **args).tolist()


def test_the_last_ticker_at_or_before_the_moment_never_a_later_one() -> None:
    latest = Latest(ticks(t=[10, 20, 30]), {"BTCBRL": 0})
    assert lookup(latest, [5, 10, 19, 20, 35]) == [-1, 0, 0, 1, 2]


def test_the_quote_age_limit_is_inclusive() -> None:
    latest = Latest(ticks(t=[10]), {"BTCBRL": 0})
    assert lookup(latest, [15, 16], tolerance_ns=5) == [0, -1]


def test_a_moment_outside_the_recording_reads_nothing() -> None:
    latest = Latest(ticks(t=[10]), {"BTCBRL": 0})
    assert lookup(latest, [11, 50, 51], span=(10, 50)) == [0, 0, -1]


def test_a_gap_between_the_ticker_and_the_moment_is_no_price() -> None:
    latest = Latest(ticks(t=[10, 40]), {"BTCBRL": 0})
    gaps = (np.array([15, 60]), np.array([25, 70]))
    # in the gap, after it (the ticker before it), after the next ticker, a gap that
    # ended exactly at the ticker's time still lies between
    assert lookup(latest, [20, 30, 45, 65], gaps=gaps) == [-1, -1, 1, -1]
    assert lookup(latest, [45], gaps=(np.array([30]), np.array([40]))) == [-1]
    assert lookup(latest, [45], gaps=(np.array([30]), np.array([39]))) == [1]


def test_a_pair_without_tickers_reads_nothing() -> None:
    latest = Latest(ticks(t=[10]), {"BTCBRL": 0})
    got = backward(
        latest,
        np.array([-1, 1, 0]),
        np.array([20, 20, 20]),
        tolerance_ns=None,
        span=(0, 100),
        gaps=(np.array([]), np.array([])),
    )
    assert got.tolist() == [-1, -1, 0]
