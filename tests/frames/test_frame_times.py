"""Times that are no moment between 2000 and 9999 (NaN, Infinity, 1e300, beyond int64, µs,
ns, 1969, text that is no time) in the frames: the order store's range, but one odd order
never fails the load: null, and one warning per column naming the count, an order and
``orders.timestamp_unit``. Most of a required time out of range is a unit mistake:
InvalidResponse naming that setting. 0 is "no value", as in recordings."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from toolkit.errors import InvalidResponse
from toolkit.frames._build import _build_tables
from toolkit.frames._frames import build_frames
from toolkit.frames._parse import _parse

T0_MS = 1_793_491_200_000  # 2026-11-01T00:00:00Z


def body(i: int, **changes: Any) -> dict[str, Any]:
    order: dict[str, Any] = {
        "id": f"o-{i}",
        "symbol": "BTC/BRL",
        "side": "buy",
        "type": "market",
        "status": "closed",
        "amount": "1",
        "createdAt": T0_MS + i,
        "updatedAt": T0_MS + i + 1,
        "trades": [{"id": f"t-{i}", "price": "100", "amount": "1", "timestamp": T0_MS + i}],
    }
    order.update(changes)
    return order


def raw(order: dict[str, Any], **literals: str) -> bytes:
    """``order`` as JSON bytes with ``literals`` written as they are (``NaN``, ``1e300``)."""
    text = json.dumps({**order, **{k: f"@{k}@" for k in literals}})
    for key, literal in literals.items():
        text = text.replace(f'"@{key}@"', literal)
    return text.encode()


def messages(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_nan_infinity_and_huge_times_are_null_with_one_warning_per_column() -> None:
    bodies = [raw(body(i)) for i in range(10)]
    bodies[1] = raw(body(1), updatedAt="NaN")
    bodies[2] = raw(body(2), updatedAt="Infinity")
    bodies[3] = raw(body(3), updatedAt="1e300")
    bodies[4] = raw(body(4), updatedAt="99999999999999999999999")
    odd_trade = body(5)
    odd_trade["trades"][0]["timestamp"] = "@t@"
    bodies[5] = json.dumps(odd_trade).replace('"@t@"', "-Infinity").encode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frames = build_frames(bodies)
    updated = frames.orders["updatedAt"]
    assert updated.isna().tolist() == [i in (1, 2, 3, 4) for i in range(10)]
    assert updated.iloc[0] == pd.Timestamp(T0_MS + 1, unit="ms", tz="UTC")
    assert frames.trades["timestamp"].isna().tolist() == [i == 5 for i in range(10)]
    said = messages(caught)
    about_updated = [m for m in said if "of updatedAt" in m]
    assert len(about_updated) == 1
    assert "4 value(s) of updatedAt" in about_updated[0]
    assert "'o-1'" in about_updated[0] and "orders.timestamp_unit" in about_updated[0]
    about_trades = [m for m in said if "trades[].timestamp" in m]
    assert len(about_trades) == 1 and "'o-5'" in about_trades[0]


def test_micro_and_nanoseconds_are_null_never_the_year_58000(tmp_path: Path) -> None:
    us, ns = (T0_MS + 7) * 1000, (T0_MS + 7) * 1_000_000
    bodies = [body(0), body(1, createdAt=us), body(2, createdAt=ns), body(3)]
    with pytest.warns(RuntimeWarning, match=r"2 value\(s\) of createdAt .*'o-1'"):
        frames = build_frames(bodies)
    assert frames.orders["createdAt"].isna().tolist() == [False, True, True, False]
    frames.to_parquet(tmp_path)
    # DuckDB cannot read a ns value written as ms; what was written reads back
    rows = duckdb.sql(
        f"select id, createdAt from read_parquet('{tmp_path / 'orders.parquet'}') order by id"
    ).fetchall()
    assert [r[1] is None for r in rows] == [False, True, True, False]


def test_before_2000_and_text_that_is_no_time_are_null_with_a_warning() -> None:
    bodies = [
        body(0, executedAt=-1),
        body(1, executedAt="1969-12-31T23:59:59Z"),
        body(2, executedAt="yesterday"),
        body(3, executedAt="2026-11-01T00:00:01Z"),
    ]
    with pytest.warns(RuntimeWarning, match=r"3 value\(s\) of executedAt .*'o-0'"):
        frames = build_frames(bodies)
    assert frames.orders["executedAt"].tolist()[3] == pd.Timestamp("2026-11-01T00:00:01Z")
    assert frames.orders["executedAt"].isna().tolist() == [True, True, True, False]


def test_zero_and_blank_are_no_value_without_a_warning() -> None:
    bodies = [body(0, executedAt=0), body(1, executedAt=""), body(2, executedAt="0"), body(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frames = build_frames(bodies)
    assert frames.orders["executedAt"].isna().all()
    assert frames.orders["createdAt"].notna().all()


@pytest.mark.parametrize("scale", [1000, 1_000_000])
def test_most_required_times_out_of_range_is_a_unit_mistake(scale: int) -> None:
    bodies = [body(i, createdAt=(T0_MS + i) * scale) for i in range(3)]
    with pytest.raises(InvalidResponse) as info:
        build_frames(bodies)
    text = str(info.value)
    assert "createdAt of 3 of 3 orders" in text and "orders.timestamp_unit" in text
    assert info.value.order_id == "o-0"


def test_one_order_whose_only_time_is_nan_is_refused_as_the_store_does() -> None:
    with pytest.raises(InvalidResponse, match=r"updatedAt of 1 of 1 orders.*nan"):
        build_frames([raw(body(0), updatedAt="NaN")])


def test_the_profile_unit_is_how_numbers_are_read() -> None:
    t0 = T0_MS // 1000
    seconds = [body(i, createdAt=t0 + i, updatedAt=t0 + i, trades=[]) for i in range(2)]
    wire = _parse([json.dumps(b).encode() for b in seconds])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        as_seconds = _build_tables(wire, False, unit="s")["orders"]
    moment = as_seconds.column("createdAt").to_pylist()[1]
    assert moment == pd.Timestamp(T0_MS + 1000, unit="ms", tz="UTC")
    with pytest.raises(InvalidResponse, match=r"now 'ms'"):
        _build_tables(wire, False, unit="ms")
    millis = _parse([json.dumps(body(i)).encode() for i in range(2)])
    with pytest.raises(InvalidResponse, match=r"now 's'"):
        _build_tables(millis, False, unit="s")
