"""What the reader sees of the report, without a browser: the one-sentence headline with
units and its BRL total, "insufficient coverage (n of N)" instead of a figure or a chart
resting on too few orders, one name in words per metric, human durations, ordered buckets
with their time zone, "none" for an empty table, data problems apart from economic
outliers, tables formatted in a notebook, and the worst orders sorted by a column shown
first."""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest
from _report_frames import closed_order, make_frames

from toolkit.errors import InvalidRequest
from toolkit.report import ExecutionReport, execution_report
from toolkit.report._daily import daily_cost
from toolkit.report._format import format_cell
from toolkit.report._gate import CoverageRule, figure_coverage
from toolkit.report._headline import gated_summary, headline_html, headline_sentence
from toolkit.report._html import checks_html, figures_html
from toolkit.report._labels import column_label, duration, metric_name, ordered_breakdown
from toolkit.report._shown import shown
from toolkit.report._tables import table_html

T0 = pd.Timestamp("2026-11-02 09:00", tz="UTC")


def _tables(decomposed: int, executed: int) -> dict[str, pd.DataFrame]:
    """The two tables the headline reads: one BRL decomposition row resting on
    ``decomposed`` of ``executed`` orders (the numbers of the hand-checked example)."""
    decomposition = pd.DataFrame(
        {
            "type": ["all"],
            "currency": ["BRL"],
            "orders": [decomposed],
            "notional": [10_720_000.0],
            "routing_gap_bp": [3.0],
            "execution_bp": [1.5],
            "fees_bp": [5.25],
            "total_bp": [9.75],
            "total": [10_452.0],
        }
    )
    po = pd.DataFrame(
        {
            "executed": [True] * executed,
            "currency": ["BRL"] * executed,
            "type": ["market"] * executed,
            "decomposed": [True] * decomposed + [False] * (executed - decomposed),
        }
    )
    return {"cost_decomposition": decomposition, "per_order": po}


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", fragment)).strip()


def test_headline_is_one_sentence_with_units_and_the_brl_total() -> None:
    sentence = _text(headline_sentence(_tables(1_000, 1_054), CoverageRule()))
    assert sentence == (
        "Trading cost over the period: 9.75 bp = 10,452.00 BRL: routing 3.00 bp, "
        "execution 1.50 bp, fees 5.25 bp (1,000 of 1,054 executed orders (95 %))."
    )


def test_headline_below_the_threshold_says_insufficient_coverage_not_a_figure() -> None:
    out_html = headline_sentence(_tables(15, 1_054), CoverageRule())
    text = _text(out_html)
    assert "insufficient coverage (15 of 1,054)" in text
    assert "BRL:" not in text and "9.75" not in text and "tk-total" not in out_html
    # the threshold is the caller's: 15 orders pass a rule of 10 orders and 1 %
    assert "9.75 bp" in _text(headline_sentence(_tables(15, 1_054), CoverageRule(0.01, 10)))


def test_coverage_rule_needs_both_the_count_and_the_share() -> None:
    rule = CoverageRule()
    assert (rule.min_coverage, rule.min_orders) == (0.20, 30)
    assert rule.enough(30, 150) and not rule.enough(29, 30) and not rule.enough(30, 151)
    assert not rule.enough(0, 0)


def test_headline_table_shows_coverage_and_hides_thin_values() -> None:
    rows = [
        ("all", "arrival slippage", "bp", 15, 4.2, 1.0, 7.0),
        ("all", "execution slippage (vs chosen venue)", "bp", 1_000, 1.5, 1.0, 2.0),
    ]
    cols = ["type", "metric", "unit", "orders", "value", "ci_low", "ci_high"]
    tables = _tables(1_000, 1_054)
    out_html = headline_html(pd.DataFrame(rows, columns=cols), tables, CoverageRule())
    cells = [_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", out_html)]
    assert cells[:2] == ["arrival slippage", "insufficient coverage (15 of 1,054)"]
    assert cells[2] == "execution slippage"
    assert cells[3] == "1.50 bp [1.00, 2.00] 1,000 of 1,054 orders (95 %)"


def test_no_chart_below_its_threshold() -> None:
    po = pd.DataFrame(
        {
            "executed": [True] * 100,
            "type": ["market"] * 100,
            "quote_slippage_bp": [1.0] * 5 + [float("nan")] * 95,
            "decomposed": [True] * 100,
        }
    )
    tables = {"per_order": po}
    assert figure_coverage("slippage_distribution", tables) == (5, 100)
    figures = {"slippage_distribution": "<svg>chart</svg>", "cost_waterfall": "<svg>w</svg>"}
    out = "".join(
        figures_html(["slippage_distribution", "cost_waterfall"], figures, tables, CoverageRule())
    )
    assert "<svg>chart</svg>" not in out
    assert "Slippage distribution: insufficient coverage (5 of 100), not drawn." in out
    assert "<svg>w</svg>" in out and "100 of 100 orders (100\xa0%)" in out


def test_one_name_per_metric_in_words() -> None:
    for name in ("quote slippage", "execution slippage (vs chosen venue)"):
        assert metric_name(name) == "execution slippage"
    assert column_label("quote_slippage_bp") == "execution slippage (bp)"
    assert column_label("execution_bp") == "execution slippage (bp)"
    assert column_label("markout_-20s_bp") == "markout -20 s (bp)"
    assert column_label("some_new_thing_bp") == "some new thing (bp)"


def test_durations_in_human_units() -> None:
    assert duration(43_718.5) == "12 h 9 min"
    assert duration(0.25) == "250 ms"
    assert duration(4.25) == "4.2 s"
    assert duration(185.0) == "3 min 5 s"
    assert duration(-40.0) == "-40 s"
    assert duration(3 * 86_400 + 4 * 3_600) == "3 d 4 h"
    # every duration of the page: the 12 hours that read "43,718.5 s"
    assert format_cell(43_718.5, "seconds", "") == "12 h 9 min"


def test_breakdown_buckets_in_order_with_the_time_zone() -> None:
    df = pd.DataFrame(
        {
            "dimension": ["size_bucket"] * 3 + ["hour"] * 2,
            "group": ["10k-100k", "1k-10k", "< 1k", "09h", "23h"],
            "orders": [1, 2, 3, 4, 5],
        }
    )
    out = ordered_breakdown(df)
    assert out["group"].tolist() == [
        "< 1k",
        "1k-10k",
        "10k-100k",
        "09:00-10:00 UTC",
        "23:00-00:00 UTC",
    ]
    assert set(out["dimension"]) == {"size (notional)", "hour (UTC)"}
    # as the page and the notebook show the breakdown table
    cells = re.findall(r'<td class="txt">([^<]*)</td>', table_html(df, "breakdown"))
    assert [html.unescape(c) for c in cells[1::2]] == out["group"].tolist()


def test_empty_table_says_none_not_its_columns() -> None:
    out_html = table_html(
        pd.DataFrame({"exchange": [], "venue": [], "orders": []}), "venue_mismatch"
    )
    assert _text(out_html) == "Executed on another venue than requested: none."


def test_checks_split_data_problems_from_economic_outliers() -> None:
    checks = pd.DataFrame(
        {
            "orderId": ["a", "b", "c"],
            "check": ["average vs trades VWAP", "outlier quote_slippage_bp", "outlier x"],
            "value": [1.0, 900.0, 800.0],
            "expected": [1.1, 0.0, 0.0],
            "diff_bp": [-900.0, 900.0, 800.0],
            "detail": ["", "", ""],
        }
    )
    out_html = checks_html(checks)
    problems, outliers = out_html.split("<h4>Economic outliers</h4>")
    assert "<h4>Data problems</h4>" in problems and "1 flag(s) in 1 check(s)" in problems
    assert "2 flag(s) in 2 check(s)" in outliers and "average vs" not in outliers
    assert "outlier of execution slippage (bp): 1 row(s)" in outliers


@pytest.fixture(scope="module")
def small() -> ExecutionReport:
    orders = [closed_order(f"o{i}", "buy", 1_000.0 * (i + 1)) for i in range(3)]
    return execution_report(make_frames(orders))


def test_tables_format_in_a_notebook_and_stay_dataframes(small: ExecutionReport) -> None:
    summary = small.summary
    assert isinstance(summary, pd.DataFrame)
    shown = summary._repr_html_()
    assert not re.search(r"\d\.\d+e[+-]\d", shown), shown
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", shown)
    assert heads and not any("_" in h for h in heads), heads
    assert type(summary[["metric"]]) is pd.DataFrame  # operations give plain frames
    for name, df in small.tables.items():
        assert "e+0" not in df._repr_html_(), name


def test_no_snake_case_header_and_one_name_per_metric_on_the_page(
    small: ExecutionReport,
) -> None:
    page = small.to_html()
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    assert heads and not [h for h in heads if "_" in h]
    text = re.sub(r"<[^>]+>", " ", page.split("<body>")[1]).lower()
    assert "quote slippage" not in text and "execution slippage (vs" not in text
    assert "execution slippage" in text


def test_worst_orders_lead_with_the_column_they_are_sorted_by() -> None:
    worst = pd.DataFrame(
        {
            "orderId": ["a", "b"],
            "type": ["market", "market"],
            "currency": ["BRL", "BRL"],
            "total_cost_bp": [5.0, 90.0],
            "total_cost_amount": [500.0, 90.0],
        }
    )
    out_html = table_html(worst, "worst_orders", "BRL")
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", out_html)
    assert heads[:3] == ["order id", "total cost (BRL)", "total cost (bp)"]
    assert "Sorted by total cost (BRL), highest first." in out_html


def test_coverage_thresholds_are_checked() -> None:
    report = execution_report(make_frames([]))
    with pytest.raises(InvalidRequest, match="min_coverage"):
        ExecutionReport(report.tables, min_coverage=20)
    assert ExecutionReport(report.tables, min_orders=5).rule.min_orders == 5


def test_every_headline_figure_table_hides_thin_values_too() -> None:
    summary = pd.DataFrame(
        {
            "metric": ["orders", "arrival slippage", "total cost", "maker share (trades)"],
            "value": [2_001.0, 4.2, 9.75, 0.5],
            "unit": ["count", "bp", "bp", "share"],
            "orders": [2_001, 15, 1_000, 12],
            "market": [2_001.0, 4.2, 9.75, 0.5],
            "market_orders": [2_001, 15, 1_000, 12],
        }
    )
    shown = gated_summary(summary, _tables(1_000, 1_054), CoverageRule())
    assert shown["value"].tolist() == [
        2_001.0,
        "insufficient coverage (15 of 1,054)",
        9.75,
        0.5,
    ]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table_html(shown, "summary"))
    assert "insufficient coverage (15 of 1,054)" in cells and "2,001" in cells
    assert "9.75 bp" in cells


def test_scope_line_has_thousands_separators() -> None:
    tables = dict(execution_report(make_frames([])).tables)
    n = 2_028
    tables["per_order"] = pd.DataFrame(
        {
            "executed": [True] * n,
            "createdAt": [T0] * n,
            "arrival_mid": [float("nan")] * n,
            "type": ["market"] * n,
        }
    )
    tables.pop("daily_cost")
    assert ExecutionReport(tables).describe().startswith("2,028 orders (2,028 executed)")


def test_intervals_carry_the_unit_of_their_value() -> None:
    headline = pd.DataFrame(
        {
            "type": ["all", "all"],
            "metric": ["execution slippage (vs chosen venue)", "fill rate"],
            "unit": ["bp", "share"],
            "orders": [1_035, 1_035],
            "value": [-0.16, 0.96],
            "ci_low": [-0.5985, 0.935],
            "ci_high": [0.3309, 0.983],
        }
    )
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", shown(headline, "headline")._repr_html_())
    assert cells[:6] == ["all", "execution slippage", "1,035", "-0.16 bp", "-0.60 bp", "0.33 bp"]
    assert cells[-3:] == ["96.0 %", "93.5 %", "98.3 %"]
    daily = daily_cost(
        pd.DataFrame(
            {
                "executed": [True, True],
                "decomposed": [True, True],
                "currency": ["BRL", "BRL"],
                "createdAt": [T0, T0],
                "notional": [100.0, 300.0],
                "total_cost_amount": [1.0, 2.0],
            }
        )
    )
    page = table_html(daily, "daily_cost")
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    assert "95 % low (BRL)" in heads and "95 % high (bp)" in heads
    assert not [
        c for c in re.findall(r"<td[^>]*>([^<]*)</td>", page) if re.fullmatch(r"-?\d+\.\d{3,}", c)
    ]
