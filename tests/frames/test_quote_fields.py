"""The profile's evaluatedTickers mapping in the frames: alt names keep their own columns with
the types the default names get, timestamps in seconds become the right moments everywhere,
and the mapping survives Parquet."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
from _quote_bodies import ALT, T0_S, order

from toolkit.frames._frames import OrderFrames, build_frames
from toolkit.frames._schema import QuoteFields
from toolkit.profile import DEFAULT_PROFILE


def test_alt_names_are_the_columns_with_the_default_types() -> None:
    default = build_frames([order()])
    alt = build_frames([order(names=ALT, seconds=True)], profile=ALT)
    assert alt.quote_fields == QuoteFields(venue="venue", price="px", time="ts", reason="why")
    et, ref = alt.evaluated_tickers, default.evaluated_tickers
    assert list(et.columns) == ["orderId", "rank", "venue", "px", "ts", "why"]
    assert "exchange" not in et and "price" not in et and "quotedAt" not in et
    assert str(et["px"].dtype) == str(ref["price"].dtype) == "float64"
    assert str(et["ts"].dtype) == str(ref["quotedAt"].dtype) == "datetime64[ms, UTC]"
    assert et["ts"].tolist() == ref["quotedAt"].tolist()
    assert et["ts"].iloc[0] == pd.Timestamp("2026-11-01T00:00:00Z")
    assert et["px"].tolist() == [100.0, 99.5, 98.0]
    assert et["why"].fillna("").tolist() == ["", "", "stale book"]


def test_exact_alt_price_is_a_decimal() -> None:
    alt = build_frames([order(names=ALT)], profile=ALT, exact=True)
    assert str(alt.evaluated_tickers["px"].dtype).startswith("decimal128")


def test_seconds_become_the_same_moments_in_every_frame() -> None:
    ms_frames = build_frames([order(), order(1)])
    s_frames = build_frames([order(seconds=True), order(1, seconds=True)])
    for name in ("orders", "trades", "evaluated_tickers", "fills"):
        a, b = ms_frames.frames()[name], s_frames.frames()[name]
        stamps = [c for c in a.columns if str(a[c].dtype).startswith("datetime64")]
        assert stamps, name
        for col in stamps:
            assert str(b[col].dtype) == "datetime64[ms, UTC]", (name, col)
            assert b[col].tolist() == a[col].tolist(), (name, col)
    assert s_frames.orders["RFQ.validUntil"].iloc[0] == pd.Timestamp("2026-11-01T00:00:30Z")


def test_a_column_mixing_seconds_and_milliseconds_is_read_per_value() -> None:
    frames = build_frames([order(seconds=True), order(1)])
    assert frames.orders["createdAt"].tolist() == [
        pd.Timestamp("2026-11-01T00:00:00Z"),
        pd.Timestamp("2026-11-01T00:00:01Z"),
    ]


def test_dotted_quote_fields_reach_nested_values() -> None:
    nested = DEFAULT_PROFILE.replace({"orders.quote_price_field": "quote.px"})
    body = order()
    for q in body["evaluatedTickers"]:
        q["quote"] = {"px": q.pop("price")}
    et = build_frames([body], profile=nested).evaluated_tickers
    assert et["quote.px"].tolist() == [100.0, 99.5, 98.0]


def test_odd_input_under_alt_names_goes_through_the_repair_pass() -> None:
    a, b = order(names=ALT, seconds=True), copy.deepcopy(order(1, names=ALT, seconds=True))
    b["evaluatedTickers"][0]["px"] = 100  # a number where text is expected
    b["evaluatedTickers"][1]["ts"] = T0_S + 0.5
    et = build_frames([a, b], profile=ALT).evaluated_tickers
    assert et["px"].tolist()[3:5] == [100.0, 99.5]
    assert et["ts"].iloc[4] == pd.Timestamp("2026-11-01T00:00:00.500Z")


def test_the_mapping_survives_parquet(tmp_path: Path) -> None:
    alt = build_frames([order(names=ALT)], profile=ALT)
    alt.to_parquet(tmp_path)
    back = OrderFrames.read_parquet(tmp_path)
    assert back.quote_fields == alt.quote_fields
    pd.testing.assert_frame_equal(back.evaluated_tickers, alt.evaluated_tickers)


def test_empty_frames_under_a_profile_have_its_columns() -> None:
    et = OrderFrames.empty(profile=ALT).evaluated_tickers
    assert list(et.columns) == ["orderId", "rank", "venue", "px", "ts", "why"]
    assert str(et["ts"].dtype) == "datetime64[ms, UTC]"
