"""The report reads the quotes through the frames' mapping (the profile's
``orders.quote_*_field``): slippage under alt names equals the default-named case, and a frame
without the mapped columns says so loudly instead of reporting 0 of N."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from toolkit.frames._frames import OrderFrames, build_frames
from toolkit.report import execution_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frames"))
from _quote_bodies import ALT, order


def _quiet_report(frames: OrderFrames):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return execution_report(frames)


def test_slippage_under_alt_names_equals_the_default_case() -> None:
    default = _quiet_report(build_frames([order(i) for i in range(3)]))
    alt = _quiet_report(
        build_frames([order(i, names=ALT, seconds=True) for i in range(3)], profile=ALT)
    )
    cols = [
        "quote",
        "quote_slippage_bp",
        "best_quote",
        "best_venue",
        "best_quote_slippage_bp",
        "quotes_seen",
        "contingencies",
        "executedAt",
    ]
    pd.testing.assert_frame_equal(alt["per_order"][cols], default["per_order"][cols])
    assert alt["per_order"]["quote_slippage_bp"].notna().all()
    assert alt["per_order"]["quote_slippage_bp"].iloc[0] == pytest.approx(100.0)
    pd.testing.assert_frame_equal(alt["slippage"], default["slippage"])
    pd.testing.assert_frame_equal(alt["contingencies"], default["contingencies"])
    assert alt["contingencies"]["contingencies"].sum() == 3
    assert alt["data_checks"].empty


def test_after_parquet_the_report_still_reads_alt_names(tmp_path: Path) -> None:
    build_frames([order(names=ALT)], profile=ALT).to_parquet(tmp_path)
    report = _quiet_report(OrderFrames.read_parquet(tmp_path))
    assert report["per_order"]["quote_slippage_bp"].notna().all()


def test_frames_without_the_mapped_columns_warn_with_the_setting() -> None:
    # alt-named bodies built under the default profile: none of the mapped columns exist
    frames = build_frames([order(names=ALT)])
    assert len(frames.evaluated_tickers) == 3
    with pytest.warns(RuntimeWarning, match=r"orders\.quote_venue_field") as caught:
        report = execution_report(frames)
    text = str(caught[0].message)
    assert "orders.quote_price_field" in text and "venue, px" in text
    checks = report["data_checks"]
    row = checks[checks["check"] == "evaluatedTickers fields"]
    assert len(row) == 1 and "orders.quote_venue_field" in row["detail"].iloc[0]
    assert report["per_order"]["quote_slippage_bp"].isna().all()
    assert report["contingencies"].empty


def _report_warning(frames: OrderFrames, pattern: str):  # type: ignore[no-untyped-def]
    """The report and every warning it gave, one of which matches ``pattern``."""
    with pytest.warns(RuntimeWarning) as caught:
        report = execution_report(frames)
    messages = [str(w.message) for w in caught]
    assert any(re.search(pattern, m) for m in messages), messages
    return report, messages


def test_a_misnamed_reason_field_is_named_not_read_as_clean_quotes() -> None:
    # the service calls the reason "why"; the default profile says "reason": the excluded
    # venueC (98, the cheapest) would silently become the best clean quote
    body = order()
    body["evaluatedTickers"][2]["why"] = body["evaluatedTickers"][2].pop("reason")
    frames = build_frames([body])
    assert frames.evaluated_tickers["why"].notna().sum() == 1
    report, messages = _report_warning(frames, r"orders\.quote_reason_field")
    [text] = messages
    assert "why (1 quote(s))" in text and "orders.quote_time_field" in text
    checks = report["data_checks"]
    [detail] = checks.loc[checks["check"] == "evaluatedTickers unknown fields", "detail"]
    assert detail == text and "'reason'" in detail


def test_a_misnamed_time_field_is_named_not_an_empty_quote_age() -> None:
    # the profile says "ts", the service sends "quotedAt": no quote has a time
    body = order(names=ALT)
    for q in body["evaluatedTickers"]:
        q["quotedAt"] = q.pop("ts")
    frames = build_frames([body], profile=ALT)
    report, messages = _report_warning(frames, r"orders\.quote_time_field = 'ts'")
    assert len(messages) == 2  # quotedAt is unknown, and ts holds no value
    assert any("quotedAt (3 quote(s))" in m for m in messages)
    checks = report["data_checks"]
    assert set(checks["check"]) == {
        "evaluatedTickers unknown fields",
        "evaluatedTickers quote time",
    }
    assert report["quote_age"].empty
    assert report["per_order"]["quote_slippage_bp"].notna().all()  # the rest still reads
