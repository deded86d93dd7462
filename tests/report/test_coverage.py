"""What the report's set covers: the frames' coverage note and warnings reach the page (under
the title), the notebook view, ``repr``/``describe`` and ``data_checks``; the "all" column is
the set's, and an order type the set lacks is named, never shown as every order."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from _report_frames import closed_order, make_frames
from _synthetic import mixed_orders, synthetic_orders

from toolkit.report import ExecutionReport, execution_report
from toolkit.report._html import headline_html
from toolkit.sim import Simulator
from toolkit.store import OrderStore

NO_MARKET = "no market orders in this set"
NO_LIMIT = "no limit orders in this set"


def _title_block(page: str) -> str:
    """The page between its title and its first section."""
    return page.split("</h1>", 1)[1].split("<section", 1)[0]


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment))


def test_a_listing_only_report_says_it_holds_limit_orders_only(sim: Simulator) -> None:
    with sim.client() as client:
        frames = client.load_orders(progress=False)
    note = frames.attrs["coverage"]
    assert "market orders are not listed" in note
    assert set(frames.orders["type"].str.lower()) == {"limit"}
    report = execution_report(frames)

    assert report.coverage[0] == note
    assert any(n.startswith(NO_MARKET) for n in report.coverage)
    for text in (report.describe(), repr(report)):
        assert note in text and NO_MARKET in text
    checks = report["data_checks"]
    assert checks.loc[checks["check"] == "set coverage", "detail"].tolist() == [note]

    for page in (report.to_html(figures=False), report._repr_html_()):
        top = _text(_title_block(page))
        assert "What this set covers" in top
        assert note in top and NO_MARKET in top
        summary = _text(page.split('<section id="summary">', 1)[1].split("</section>", 1)[0])
        assert "all orders in this set" in summary and NO_MARKET in summary
        # the "all" column is the set's own, never "all orders" alone
        assert not re.search(r"<th>all orders</th>", page)


def test_store_coverage_warnings_reach_the_report(sim: Simulator, tmp_path: Path) -> None:
    market_ids = sim.control.order_ids(type="market")[:15]
    store = OrderStore(tmp_path / "store")
    with sim.client() as client:
        store.sync(client, ids=market_ids)
    frames = store.frames()
    warnings = frames.attrs["coverage"]["warnings"]
    assert warnings and set(frames.orders["type"].str.lower()) == {"market", "limit"}
    report = execution_report(frames)

    # both types present: the store's warnings, and no note of a missing type
    assert report.coverage == warnings
    checks = report["data_checks"]
    assert checks.loc[checks["check"] == "set coverage", "detail"].tolist() == warnings
    top = _text(_title_block(report.to_html(figures=False)))
    assert all(_text(w) in top for w in warnings)
    assert all(w in repr(report) for w in warnings)


def test_coverage_survives_the_parquet_round_trip(tmp_path: Path) -> None:
    from toolkit.frames._frames import build_frames

    frames = build_frames(synthetic_orders(12, seed=3))
    frames.attrs["coverage"] = "the given order ids"
    report = execution_report(frames)
    assert report.coverage[0] == "the given order ids"
    assert report.coverage[1].startswith(NO_LIMIT)
    back = ExecutionReport.read_parquet(report.to_parquet(tmp_path / "tables"))
    assert back.coverage == report.coverage
    assert back.describe() == report.describe()


def test_frames_without_coverage_name_only_a_missing_type() -> None:
    both = execution_report(make_frames([]))
    assert both.coverage == [] and "coverage" not in both.describe()
    from toolkit.frames._frames import build_frames

    mixed = execution_report(build_frames(mixed_orders(30, seed=2)))
    assert mixed.coverage == [] and mixed["data_checks"]["check"].ne("set coverage").all()
    market = execution_report(make_frames([closed_order("a", "buy", 100.0)]))
    assert len(market.coverage) == 1 and market.coverage[0].startswith(NO_LIMIT)
    assert market["data_checks"].empty


def test_headline_names_the_set_and_a_missing_type() -> None:
    rows = [(t, "routing gap", "bp", 3, 1.0, 0.5, 1.5) for t in ("market", "limit", "all")]
    cols = ["type", "metric", "unit", "orders", "value", "ci_low", "ci_high"]
    full = headline_html(pd.DataFrame(rows, columns=cols))
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", full)
    assert heads == ["metric", "market orders", "limit orders", "all orders in this set"]
    assert "in this set:" not in full
    limit_only = headline_html(pd.DataFrame(rows[1:], columns=cols))
    assert re.findall(r"<th[^>]*>([^<]*)</th>", limit_only)[1:] == [
        "limit orders",
        "all orders in this set",
    ]
    assert NO_MARKET in limit_only
