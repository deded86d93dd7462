"""Tests for toolkit/frames/_frames.py: every column rule of the frames (PRODUCT.md "Data model of
the frames"), the repair of odd input, and the Parquet / CSV exports read back."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
import warnings
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from toolkit._atomic import MANIFEST
from toolkit.errors import InvalidRequest
from toolkit.frames._frames import OrderFrames, build_frames
from toolkit.frames._schema import FRAME_NAMES
from toolkit.protocol import to_epoch_ms


def _load_synthetic() -> ModuleType:
    # bench/ is not a package on sys.path; load the shared generator from its file
    path = Path(__file__).resolve().parents[2] / "bench" / "_synthetic.py"
    spec = importlib.util.spec_from_file_location("bench_synthetic", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


synthetic = _load_synthetic()


def closed(i: int = 0, **changes: Any) -> dict[str, Any]:
    """A closed market order with 3 trades and 5 quotes, fields overridden by ``changes``."""
    order: dict[str, Any] = synthetic.closed_order(random.Random(i), i, trades=3, quotes=5)
    order.update(changes)
    return order


def ms(value: pd.Timestamp) -> int:
    """Unix milliseconds of a timestamp, whatever its unit."""
    return int(value.as_unit("ns").value // 1_000_000)


# ------------------------------------------------------------------ shape and flattening


def test_nested_objects_are_flattened_with_dots() -> None:
    order = closed(
        RFQ={
            "quoteId": "q-1",
            "quotedPrice": "5.41",
            "quotedAt": 1_793_491_200_000,
            "validUntil": 1_793_491_230_000,
        }
    )
    frames = build_frames([json.dumps(order).encode()])
    row = frames.orders.iloc[0]
    assert row["fee.cost"] == float(order["fee"]["cost"])
    tier = order["fee"]["tierService"]
    assert row["fee.tierService.currentTierFeeRate"] == float(tier["currentTierFeeRate"])
    assert row["fee.tierService.currentTierFeeCripto"] == float(tier["currentTierFeeCripto"])
    assert row["RFQ.quoteId"] == "q-1"
    assert "fee" not in frames.orders and "trades" not in frames.orders
    assert "evaluatedTickers" not in frames.orders
    assert list(frames.trades.columns) == [
        "orderId",
        "id",
        "takerOrMaker",
        "type",
        "side",
        "price",
        "amount",
        "cost",
        "timestamp",
        "fee.cost",
        "fee.rate",
        "fee.cripto",
    ]


def test_every_frame_carries_the_order_id() -> None:
    orders = [closed(i) for i in range(4)]
    frames = build_frames(orders)
    ids = [o["id"] for o in orders]
    assert frames.orders["id"].tolist() == ids
    assert frames.trades["orderId"].tolist() == [i for i in ids for _ in range(3)]
    assert frames.trades["id"].tolist() == [t["id"] for o in orders for t in o["trades"]]
    assert frames.evaluated_tickers["orderId"].tolist() == [i for i in ids for _ in range(5)]
    assert frames.fees["orderId"].tolist() == ids
    assert frames.fills["orderId"].tolist() == frames.trades["orderId"].tolist()
    assert len(frames) == 4


def test_bytes_str_mappings_and_pretty_printed_bodies_give_the_same_frames() -> None:
    orders = [closed(i) for i in range(3)]
    as_bytes = build_frames([json.dumps(o).encode() for o in orders])
    mixed = build_frames(
        [json.dumps(orders[0]), orders[1], bytearray(json.dumps(orders[2], indent=2).encode())]
    )
    for name in FRAME_NAMES:
        pd.testing.assert_frame_equal(getattr(as_bytes, name), getattr(mixed, name))


# ------------------------------------------------------------------ decimals


def test_decimals_become_float64_by_default() -> None:
    order = closed(amount="0.123456789012345678", quoteAmount="350123.45")
    frames = build_frames([order])
    assert frames.orders["amount"].dtype == np.float64
    assert frames.orders["amount"].iloc[0] == float("0.123456789012345678")
    assert frames.orders["quoteAmount"].iloc[0] == 350123.45
    for column, value in (("price", "price"), ("fee.rate", None)):
        assert frames.trades[column].dtype == np.float64
        trade = order["trades"][0]
        expected = trade[value] if value else trade["fee"]["rate"]
        assert frames.trades[column].iloc[0] == float(expected)
    assert frames.evaluated_tickers["price"].iloc[0] == float(order["evaluatedTickers"][0]["price"])


def test_exact_decimals_keep_every_digit() -> None:
    order = closed(
        amount="0.123456789012345678",
        cost="12345678901234567890.5",
        fee={"cost": "0.000000000000000001", "rate": "0.0010", "cripto": "1", "tierService": {}},
    )
    order["trades"][0]["price"] = "350123.123456789012345678"
    frames = build_frames([order], exact=True)
    amount = frames.orders["amount"]
    assert isinstance(amount.dtype, pd.ArrowDtype)
    assert amount.dtype.pyarrow_dtype == pa.decimal128(38, 18)
    assert amount.iloc[0] == Decimal("0.123456789012345678")
    assert frames.orders["cost"].iloc[0] == Decimal("12345678901234567890.5")
    assert frames.orders["fee.cost"].iloc[0] == Decimal("0.000000000000000001")
    assert frames.fees["cost"].iloc[0] == Decimal("0.000000000000000001")
    assert frames.trades["price"].iloc[0] == Decimal("350123.123456789012345678")
    assert frames.fills["price"].iloc[0] == Decimal("350123.123456789012345678")


def test_exact_decimals_that_do_not_fit_are_null_never_rounded() -> None:
    long_fraction = "0.1234567890123456789012"  # 22 decimal places: more than scale 18
    with pytest.warns(RuntimeWarning, match="1 value.s. of amount do not fit"):
        frames = build_frames([closed(amount=long_fraction), closed(1, amount="7")], exact=True)
    amount = frames.orders["amount"]
    assert pd.isna(amount.iloc[0])
    assert amount.iloc[1] == Decimal(7)
    assert isinstance(amount.dtype, pd.ArrowDtype)
    assert amount.dtype.pyarrow_dtype == pa.decimal128(38, 18)


def test_blank_and_non_numeric_decimals_become_null() -> None:
    with pytest.warns(RuntimeWarning, match="1 value.s. of average are not numbers"):
        frames = build_frames([closed(average=""), closed(1, average="n/a"), closed(2)])
    assert frames.orders["average"].isna().tolist() == [True, True, False]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a blank is "no value", not an anomaly
        blank = build_frames([closed(price=" "), closed(1, price="")], exact=True)
    assert blank.orders["price"].isna().all()


# ------------------------------------------------------------------ timestamps


def test_timestamps_are_utc_milliseconds() -> None:
    order = closed(createdAt=1_793_491_200_123)
    frames = build_frames([order])
    created = frames.orders["createdAt"]
    assert str(created.dtype) == "datetime64[ms, UTC]"
    assert created.iloc[0] == pd.Timestamp("2026-11-01T00:00:00.123Z")
    assert str(frames.trades["timestamp"].dtype) == "datetime64[ms, UTC]"
    assert ms(frames.trades["timestamp"].iloc[0]) == order["trades"][0]["timestamp"]
    assert (
        ms(frames.evaluated_tickers["quotedAt"].iloc[0])
        == (order["evaluatedTickers"][0]["quotedAt"])
    )


def test_seconds_or_milliseconds_is_decided_per_column_by_magnitude() -> None:
    # createdAt in seconds (one with a fraction), updatedAt in milliseconds
    orders = [
        closed(0, createdAt=1_793_491_200, updatedAt=1_793_491_200_500),
        closed(1, createdAt=1_793_491_260.25, updatedAt=1_793_491_261_000),
    ]
    frames = build_frames(orders)
    assert frames.orders["createdAt"].tolist() == [
        pd.Timestamp("2026-11-01T00:00:00Z"),
        pd.Timestamp("2026-11-01T00:01:00.250Z"),
    ]
    assert frames.orders["updatedAt"].tolist() == [
        pd.Timestamp("2026-11-01T00:00:00.500Z"),
        pd.Timestamp("2026-11-01T00:01:01Z"),
    ]
    assert str(frames.orders["createdAt"].dtype) == "datetime64[ms, UTC]"


def test_timestamps_sent_as_text_are_parsed() -> None:
    frames = build_frames(
        [closed(executedAt="1793491200000"), closed(1, executedAt="2026-11-01T00:00:01Z")]
    )
    assert frames.orders["executedAt"].tolist() == [
        pd.Timestamp("2026-11-01T00:00:00Z"),
        pd.Timestamp("2026-11-01T00:00:01Z"),
    ]


# ------------------------------------------------------------------ statuses


def test_status_is_canonical_uppercase_and_the_original_is_kept() -> None:
    frames = build_frames(synthetic.mixed_orders(13))
    raw = [o["status"] for o in synthetic.mixed_order_dicts(13)]
    assert frames.orders["statusRaw"].tolist() == raw
    assert frames.orders["status"].tolist() == [s.upper() for s in raw]
    assert set(frames.orders["status"]) >= {"CLOSED", "PENDING", "REJECTED", "OPEN", "EXPIRED"}
    columns = list(frames.orders.columns)
    assert columns.index("statusRaw") == columns.index("status") + 1


# ------------------------------------------------------------------ unknown and missing


def test_unknown_fields_are_kept_including_nested_objects() -> None:
    order = closed(
        newScalar="x",
        newNumber=3,
        newObject={"a": 1, "inner": {"b": "deep"}},
        newList=["p", "q"],
    )
    order["fee"]["discount"] = "0.5"
    order["trades"][0]["liquidityFlag"] = "A"
    order["evaluatedTickers"][0]["latencyMs"] = 12
    frames = build_frames([order, closed(1)])
    row = frames.orders.iloc[0]
    assert row["newScalar"] == "x"
    assert row["newNumber"] == 3
    assert row["newObject.a"] == 1
    assert row["newObject.inner.b"] == "deep"
    assert list(row["newList"]) == ["p", "q"]
    assert row["fee.discount"] == "0.5"
    assert frames.fees["discount"].iloc[0] == "0.5"
    assert frames.trades["liquidityFlag"].iloc[0] == "A"
    assert frames.trades["liquidityFlag"].iloc[1:].isna().all()
    assert frames.evaluated_tickers["latencyMs"].iloc[0] == 12
    # the order without the new fields gets nulls, not an error
    assert pd.isna(frames.orders["newScalar"].iloc[1])
    assert pd.isna(frames.orders["newObject.inner.b"].iloc[1])


def test_missing_optional_fields_are_null() -> None:
    order = closed()
    for name in ("executedExchange", "executedAt", "info"):
        order.pop(name, None)
    del order["evaluatedTickers"][1]["quotedAt"]
    frames = build_frames([order])
    row = frames.orders.iloc[0]
    for name in ("executedExchange", "executedAt", "info", "limitPrice", "RFQ.quoteId"):
        assert pd.isna(row[name]), name
    assert pd.isna(frames.evaluated_tickers["quotedAt"].iloc[1])


def test_empty_input_has_the_full_typed_schema() -> None:
    for exact in (False, True):
        empty = build_frames([], exact=exact)
        full = build_frames(synthetic.mixed_orders(26), exact=exact)
        assert isinstance(OrderFrames.empty(exact=exact), OrderFrames)
        for name in FRAME_NAMES:
            got, want = getattr(empty, name), getattr(full, name)
            assert len(got) == 0, name
            assert list(got.columns) == list(want.columns), name
            assert got.dtypes.to_dict() == want.dtypes.to_dict(), name
        assert "limitPrice" in empty.orders and "RFQ.validUntil" in empty.orders
        assert str(empty.orders["expiresAt"].dtype) == "datetime64[ms, UTC]"


def test_a_field_that_changes_type_becomes_text() -> None:
    orders = [closed(0, extra=1), closed(1, extra="one"), closed(2, extra={"k": True})]
    orders[0]["trades"][0]["venueRef"] = 7
    orders[1]["trades"][0]["venueRef"] = "seven"
    frames = build_frames(orders)
    assert frames.orders["extra"].tolist() == ["1", "one", '{"k":true}']
    assert frames.trades["venueRef"].iloc[0] == "7"
    assert frames.trades["venueRef"].iloc[3] == "seven"
    # the rest of the data is untouched by the slow path
    fast = build_frames([closed(i) for i in range(3)])
    pd.testing.assert_series_equal(frames.orders["amount"], fast.orders["amount"])
    pd.testing.assert_frame_equal(frames.evaluated_tickers, fast.evaluated_tickers, check_like=True)


def test_known_fields_sent_with_another_json_type() -> None:
    order = closed(amount=0.5, info={"provider": "x"})
    order["trades"][1]["amount"] = 2
    broken = closed(1, fee="n/a")
    with pytest.warns(RuntimeWarning, match="fee"):
        frames = build_frames([order, broken], exact=True)
    assert frames.orders["amount"].iloc[0] == Decimal("0.5")
    assert frames.orders["info"].iloc[0] == '{"provider":"x"}'
    assert frames.trades["amount"].iloc[1] == Decimal(2)
    assert pd.isna(frames.orders["fee.cost"].iloc[1])
    assert frames.fees["orderId"].tolist() == [order["id"]]


def test_bad_input_raises_clear_errors() -> None:
    # InvalidRequest: a ValueError, and a tk.ToolkitError like every bad input
    with pytest.raises(InvalidRequest, match="order #1 is not valid JSON"):
        build_frames([json.dumps(closed()), b"{not json"])
    with pytest.raises(InvalidRequest, match="order #0 is not a JSON object"):
        build_frames([b"[1, 2]"])
    with pytest.raises(InvalidRequest, match="order #0"):
        build_frames([b""])
    with pytest.raises(InvalidRequest, match="order #0"):
        build_frames([42])  # type: ignore[list-item]
    with pytest.raises(InvalidRequest, match="sequence of orders"):
        build_frames(json.dumps(closed()))


# ------------------------------------------------------------------ kinds of order


def test_rejected_orders_have_no_extended_fields() -> None:
    rejected = synthetic.mixed_order_dicts(4)[3]
    assert rejected["status"] == "rejected" and "fee" not in rejected
    frames = build_frames([rejected, closed(9)])
    row = frames.orders.iloc[0]
    assert row["status"] == "REJECTED"
    assert row["errorMessage"] == "insufficient balance"
    for name in ("account", "filled", "cost", "fee.cost", "fee.tierService.currentTierFeeRate"):
        assert pd.isna(row[name]), name
    assert rejected["id"] not in set(frames.trades["orderId"])
    assert rejected["id"] not in set(frames.fees["orderId"])
    assert rejected["id"] not in set(frames.evaluated_tickers["orderId"])


def test_limit_orders() -> None:
    dicts = synthetic.mixed_order_dicts(13)
    frames = build_frames(dicts)
    limits = frames.orders[frames.orders["type"] == "limit"].set_index("id")
    source = {o["id"]: o for o in dicts if o["type"] == "limit"}
    assert set(limits.index) == set(source)
    for oid, order in source.items():
        row = limits.loc[oid]
        assert row["limitPrice"] == float(order["limitPrice"])
        assert ms(row["expiresAt"]) == order["expiresAt"]
        assert row["statusGroup"] == order["statusGroup"]
        assert row["statusReason"] == order["statusReason"]
    cancelled = next(o for o in dicts if o["status"] == "CANCELLED")
    assert ms(limits.loc[cancelled["id"], "cancelRequestedAt"]) == cancelled["cancelRequestedAt"]
    assert limits.loc[cancelled["id"], "statusReason"] == "user request"
    outcome = next(o for o in dicts if o["type"] == "limit" and o["status"] == "closed")
    fills = frames.fills[frames.fills["orderId"] == outcome["id"]]
    assert len(fills) == 2 and set(fills["orderType"]) == {"limit"}
    assert set(fills["orderStatus"]) == {"CLOSED"}


def test_rfq_columns() -> None:
    dicts = synthetic.mixed_order_dicts(13)
    rfq = dicts[4]
    assert "RFQ" in rfq
    frames = build_frames(dicts)
    row = frames.orders.set_index("id").loc[rfq["id"]]
    assert row["RFQ.quoteId"] == rfq["RFQ"]["quoteId"]
    assert row["RFQ.quotedPrice"] == float(rfq["RFQ"]["quotedPrice"])
    assert ms(row["RFQ.quotedAt"]) == rfq["RFQ"]["quotedAt"]
    assert ms(row["RFQ.validUntil"]) == rfq["RFQ"]["validUntil"]
    others = frames.orders[frames.orders["id"] != rfq["id"]]
    assert others["RFQ.quoteId"].isna().all()


# ------------------------------------------------------------------ derived frames


def test_evaluated_tickers_rank_and_reason() -> None:
    order = closed()
    order["evaluatedTickers"][2]["reason"] = "venue timeout"
    for quote in order["evaluatedTickers"][:2]:
        quote.pop("reason", None)
    frames = build_frames([order, closed(1)])
    quotes = frames.evaluated_tickers
    assert list(quotes.columns[:6]) == [
        "orderId",
        "rank",
        "exchange",
        "price",
        "quotedAt",
        "reason",
    ]
    assert quotes["rank"].tolist() == [0, 1, 2, 3, 4] * 2
    assert quotes["exchange"].tolist()[:5] == [q["exchange"] for q in order["evaluatedTickers"]]
    assert quotes["reason"].iloc[2] == "venue timeout"
    assert quotes["reason"].iloc[:2].isna().all()


def test_fees_frame() -> None:
    orders = [closed(0), synthetic.mixed_order_dicts(2)[1], closed(2)]
    frames = build_frames(orders)
    fees = frames.fees
    assert list(fees.columns) == [
        "orderId",
        "symbol",
        "cost",
        "rate",
        "cripto",
        "tierService.currentTierFeeRate",
        "tierService.currentTierFeeFiat",
        "tierService.currentTierFeeCripto",
        "operationalFees",
    ]
    assert fees["orderId"].tolist() == [orders[0]["id"], orders[2]["id"]]
    assert fees["cost"].tolist() == [
        float(orders[0]["fee"]["cost"]),
        float(orders[2]["fee"]["cost"]),
    ]
    assert fees["operationalFees"].iloc[1] == float(orders[2]["operationalFees"])


def test_fills_join_order_context_and_venue_falls_back_to_exchange() -> None:
    managed = closed(0, exchange="toolkit-sim", executedExchange="kraken", rule="lowest_fee")
    direct = closed(1, exchange="binance", channel="mobile")
    direct.pop("executedExchange", None)
    blank = closed(2, exchange="foxbit", executedExchange="")
    frames = build_frames([managed, direct, blank])
    fills = frames.fills
    assert len(fills) == len(frames.trades) == 9
    assert fills["venue"].tolist() == ["kraken"] * 3 + ["binance"] * 3 + ["foxbit"] * 3
    assert fills["exchange"].tolist()[:3] == ["toolkit-sim"] * 3
    assert fills["rule"].iloc[0] == "lowest_fee"
    assert fills["channel"].iloc[3] == "mobile"
    assert fills["symbol"].tolist() == [
        o["symbol"] for o in (managed, direct, blank) for _ in "abc"
    ]
    assert set(fills["orderType"]) == {"market"} and set(fills["orderStatus"]) == {"CLOSED"}
    pd.testing.assert_frame_equal(fills[list(frames.trades.columns)], frames.trades)


# ------------------------------------------------------------------ exports


@pytest.fixture(params=[False, True], ids=["float", "exact"])
def frames(request: pytest.FixtureRequest) -> OrderFrames:
    dicts = synthetic.mixed_order_dicts(39, seed=3)
    # unknown fields of every JSON shape must survive the exports too
    dicts[0].update(legs=[{"venue": "kraken", "qty": 1.5}], meta={"tag": "x"}, flag=True)
    for order in dicts:
        order["alwaysNull"] = None
    result = build_frames(dicts, exact=request.param)
    result.missing.extend(["m-404", "l-404"])
    return result


def test_parquet_round_trip_with_pandas(frames: OrderFrames, tmp_path: Path) -> None:
    paths = frames.to_parquet(tmp_path / "out")
    assert sorted(paths) == sorted(FRAME_NAMES)
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.name != MANIFEST) == sorted(
        f"{n}.parquet" for n in FRAME_NAMES
    )  # nothing temporary left behind
    back = OrderFrames.read_parquet(tmp_path / "out")
    for name in FRAME_NAMES:
        if name != "orders":
            pd.testing.assert_frame_equal(getattr(back, name), getattr(frames, name))
    # a column no order ever filled has no JSON type; it is written as text
    assert back.orders.pop("alwaysNull").isna().all()
    pd.testing.assert_frame_equal(back.orders, frames.orders.drop(columns="alwaysNull"))
    assert list(back.orders["legs"].iloc[0]) == [{"venue": "kraken", "qty": 1.5}]
    assert back.orders["meta.tag"].iloc[0] == "x"
    assert back.missing == ["m-404", "l-404"]
    plain = pd.read_parquet(paths["orders"])
    assert str(plain["createdAt"].dtype) == "datetime64[ms, UTC]"


@pytest.mark.parametrize(
    "coverage",
    [
        "limit orders of the listing only (market orders are not listed by the service)",
        {"sources": {"listing": 3}, "warnings": ["2 market orders known from recordings"]},
    ],
)
def test_what_the_set_covers_survives_parquet(
    frames: OrderFrames, tmp_path: Path, coverage: object
) -> None:
    frames.attrs["coverage"] = coverage
    frames.to_parquet(tmp_path / "out")
    assert OrderFrames.read_parquet(tmp_path / "out").attrs["coverage"] == coverage


def test_a_coverage_json_cannot_hold_is_left_out(frames: OrderFrames, tmp_path: Path) -> None:
    frames.attrs["coverage"] = {"since": object()}
    frames.to_parquet(tmp_path / "out")
    assert "coverage" not in OrderFrames.read_parquet(tmp_path / "out").attrs


def test_parquet_is_read_by_duckdb_with_the_same_values(
    frames: OrderFrames, tmp_path: Path
) -> None:
    paths = frames.to_parquet(tmp_path)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    schema = {
        r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT * FROM '{paths['fills']}'").fetchall()
    }
    assert schema["timestamp"] == "TIMESTAMP WITH TIME ZONE"
    exact = isinstance(frames.fills["price"].dtype, pd.ArrowDtype)
    assert schema["price"] == ("DECIMAL(38,18)" if exact else "DOUBLE")
    # epoch_ms: DuckDB needs pytz to hand TIMESTAMPTZ values to Python, the number does not
    rows = con.execute(
        f"SELECT orderId, price, epoch_ms(\"timestamp\"), venue FROM '{paths['fills']}'"
    ).fetchall()
    fills = frames.fills
    assert [r[0] for r in rows] == fills["orderId"].tolist()
    assert [r[1] for r in rows] == fills["price"].tolist()
    assert [r[2] for r in rows] == [ms(t) for t in fills["timestamp"]]
    assert [r[3] for r in rows] == fills["venue"].tolist()
    total = con.execute(f"SELECT sum(\"fee.cost\") FROM '{paths['orders']}'").fetchone()
    assert total is not None
    assert float(total[0]) == pytest.approx(float(frames.orders["fee.cost"].astype(float).sum()))


def test_csv_read_back_by_pandas_and_duckdb(frames: OrderFrames, tmp_path: Path) -> None:
    paths = frames.to_csv(tmp_path, excel=False)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != MANIFEST) == sorted(
        f"{n}.csv" for n in FRAME_NAMES
    )
    text = paths["trades"].read_text()
    header, first = text.splitlines()[:2]
    assert header.split(",")[:3] == ['"orderId"', '"id"', '"takerOrMaker"']
    first_ts = frames.trades["timestamp"].iloc[0]
    iso = first_ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{first_ts.microsecond // 1000:03d}Z"
    assert iso in first
    back = pd.read_csv(paths["trades"])
    assert back["orderId"].tolist() == frames.trades["orderId"].tolist()
    assert np.allclose(back["price"], frames.trades["price"].astype(float))
    parsed = pd.to_datetime(back["timestamp"], utc=True, format="ISO8601")
    assert (parsed.to_numpy() == frames.trades["timestamp"].to_numpy()).all()
    orders = pd.read_csv(paths["orders"])
    assert orders["status"].tolist() == frames.orders["status"].tolist()
    assert orders["statusRaw"].tolist() == frames.orders["statusRaw"].tolist()
    assert json.loads(orders["legs"].iloc[0]) == [{"venue": "kraken", "qty": 1.5}]
    assert orders["flag"].iloc[0] in (True, "true", "True")
    assert orders["alwaysNull"].isna().all()

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    source = f"read_csv('{paths['trades']}')"
    schema = {r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    assert schema["timestamp"] == "TIMESTAMP WITH TIME ZONE"
    rows = con.execute(f'SELECT orderId, amount, epoch_ms("timestamp") FROM {source}').fetchall()
    assert [r[0] for r in rows] == frames.trades["orderId"].tolist()
    assert [Decimal(str(r[1])) for r in rows] == [
        Decimal(str(v)) for v in frames.trades["amount"].tolist()
    ]
    assert [r[2] for r in rows] == [ms(t) for t in frames.trades["timestamp"]]


def test_exports_of_empty_frames(tmp_path: Path) -> None:
    empty = OrderFrames.empty()
    empty.to_parquet(tmp_path / "pq")
    back = OrderFrames.read_parquet(tmp_path / "pq")
    for name in FRAME_NAMES:
        pd.testing.assert_frame_equal(getattr(back, name), getattr(empty, name))
    paths = empty.to_csv(tmp_path / "csv")
    header = paths["orders"].read_text(encoding="utf-8-sig").splitlines()[0]
    assert header.startswith('"id","exchange"')


def test_exports_overwrite_atomically(tmp_path: Path) -> None:
    first = build_frames([closed(0)])
    first.to_parquet(tmp_path)
    second = build_frames([closed(1), closed(2)])
    second.to_parquet(tmp_path)
    assert len(OrderFrames.read_parquet(tmp_path)) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------------ notebook display


def test_repr_html_summarises_without_dumping_rows() -> None:
    dicts = synthetic.mixed_order_dicts(2000)
    frames = build_frames(dicts)
    frames.missing.append("m-gone")
    page = frames._repr_html_()
    assert "OrderFrames" in page and "2,000" in page
    closed_count = sum(o["status"] == "closed" for o in dicts)
    assert f"<td>CLOSED</td><td>{closed_count:,}</td>" in page
    assert "2026-11-01" in page
    assert "1 order(s) could not be loaded" in page
    assert dicts[0]["id"] not in page
    assert len(page) < 3000
    assert repr(frames).startswith("OrderFrames(orders=2000, trades=")
    assert len(repr(frames)) < 200
    assert "<td>0</td>" in OrderFrames.empty()._repr_html_()


# ------------------------------------------------------------------ scale and the simulator


def test_synthetic_bodies_at_scale() -> None:
    bodies = synthetic.synthetic_orders(2000, seed=5)
    frames = build_frames(bodies)
    assert (len(frames.orders), len(frames.trades), len(frames.evaluated_tickers)) == (
        2000,
        6000,
        10000,
    )
    assert frames.orders["status"].eq("CLOSED").all()
    managed = frames.orders["exchange"] == "toolkit-sim"
    assert managed.any() and frames.orders.loc[managed, "executedExchange"].notna().all()
    assert frames.evaluated_tickers["reason"].notna().any()
    originals = [json.loads(b) for b in bodies[:50]]
    assert frames.orders["cost"].iloc[:50].tolist() == [float(o["cost"]) for o in originals]


def test_frames_of_the_simulators_orders(sim: Any) -> None:
    client = sim.client()
    ids = sim.control.order_ids()
    assert len(ids) >= 100
    orders = [client.fetch_order(oid) for oid in ids[:120]]
    profile = client.profile
    frames = build_frames(orders, profile=profile)
    assert frames.orders["id"].tolist() == ids[:120]
    assert frames.orders["status"].tolist() == [str(o["status"]).upper() for o in orders]
    with_trades = sum(len(o.get("trades", [])) for o in orders)
    assert len(frames.trades) == len(frames.fills) == with_trades
    # the service's times are in the profile's unit (alt: float seconds); the frames hold ms
    unit = profile.orders.timestamp_unit

    def moment(value: Any) -> pd.Timestamp:
        return pd.Timestamp(to_epoch_ms(value, unit), unit="ms", tz="UTC")

    assert str(frames.orders["updatedAt"].dtype) == "datetime64[ms, UTC]"
    assert frames.orders["updatedAt"].tolist() == [moment(o["updatedAt"]) for o in orders]
    # the quotes keep the service's names, their time read in the same unit
    q = frames.quote_fields
    quotes = [e for o in orders for e in o.get("evaluatedTickers") or ()]
    assert quotes and len(frames.evaluated_tickers) == len(quotes)
    assert str(frames.evaluated_tickers[q.time].dtype) == "datetime64[ms, UTC]"
    assert frames.evaluated_tickers[q.time].tolist() == [moment(e[q.time]) for e in quotes]
    assert frames.evaluated_tickers[q.venue].tolist() == [e[q.venue] for e in quotes]
