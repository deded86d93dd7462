"""Numbers the frames keep exactly: an integer beyond int64 is kept as its digits (text),
never a rounded double; ``exact=True`` decimals are always ``decimal128(38, 18)``, whatever
the load holds, and a value that type cannot hold is null with a warning, never a
``decimal256`` or another scale."""

from __future__ import annotations

import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from toolkit.frames._frames import build_frames

T0_MS = 1_793_491_200_000


def body(i: int, **changes: Any) -> dict[str, Any]:
    order: dict[str, Any] = {
        "id": f"o-{i}",
        "symbol": "SHIB/BRL",
        "side": "buy",
        "type": "market",
        "status": "closed",
        "amount": "1",
        "createdAt": T0_MS,
        "updatedAt": T0_MS,
    }
    order.update(changes)
    return order


def test_integers_beyond_int64_keep_every_digit(tmp_path: Path) -> None:
    big = 2**70
    frames = build_frames([body(0, venueOrderNo=big, sequence=big + 1), body(1, sequence=7)])
    assert frames.orders["venueOrderNo"].tolist()[0] == str(big)
    assert pd.isna(frames.orders["venueOrderNo"].tolist()[1])
    assert frames.orders["sequence"].tolist() == [str(big + 1), "7"]
    frames.to_parquet(tmp_path)
    path = tmp_path / "orders.parquet"
    row = duckdb.sql(f"select venueOrderNo from read_parquet('{path}') where id = 'o-0'")
    assert row.fetchall() == [(str(big),)]


@pytest.mark.parametrize(
    "text",
    [
        "0.0000000000000000001",  # 19 fractional digits
        "123456789012345678901234.5",  # 24 integer digits
        "1" + "0" * 50 + ".5",  # once a decimal256
    ],
)
def test_exact_values_that_do_not_fit_are_null_and_the_type_stays(
    text: str, tmp_path: Path
) -> None:
    with pytest.warns(RuntimeWarning, match=r"1 value\(s\) of amount do not fit .*'o-0'"):
        frames = build_frames([body(0, amount=text), body(1, amount="1.5")], exact=True)
    amount = frames.orders["amount"]
    assert amount.dtype == pd.ArrowDtype(pa.decimal128(38, 18))
    assert pd.isna(amount.iloc[0]) and amount.iloc[1] == Decimal("1.5")
    frames.to_parquet(tmp_path)
    assert pq.read_schema(tmp_path / "orders.parquet").field("amount").type == pa.decimal128(38, 18)


def test_exact_values_at_the_edges_of_the_type_are_kept() -> None:
    edges = [
        "99999999999999999999.999999999999999999",  # 20 + 18 digits
        "0.100000000000000000000000000000",  # trailing zeros hold no digit
        "1e-18",
        "-0.000",
        "1E+19",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frames = build_frames([body(i, amount=t) for i, t in enumerate(edges)], exact=True)
    amount = frames.orders["amount"]
    assert amount.dtype == pd.ArrowDtype(pa.decimal128(38, 18))
    assert amount.tolist() == [Decimal(t) for t in edges]


def test_an_integer_field_some_orders_lack_stays_exact(tmp_path: Path) -> None:
    """numpy would make it float64 (2**53 + 1 rounds to 2**53): the frames keep a
    nullable Int64, and so does the Parquet export read back by DuckDB."""
    frames = build_frames([body(0, sequence=2**53 + 1), body(1)])
    column = frames.orders["sequence"]
    assert str(column.dtype) == "Int64"
    assert column.iloc[0] == 2**53 + 1 and column.isna().iloc[1]
    paths = frames.to_parquet(tmp_path)
    got = duckdb.sql(f"select sequence from '{paths['orders']}' order by sequence").fetchall()
    assert got[0][0] == 2**53 + 1
