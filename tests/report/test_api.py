"""``execution_report`` / ``ExecutionReport``: tables, figures, notebook view, Parquet round
trip, and a report built from the simulator's own order history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _report_frames import T0_MS, Frames, closed_order, make_frames
from _synthetic import mixed_orders

from toolkit.report import ExecutionReport, execution_report
from toolkit.report._definitions import DEFINITIONS, SECTIONS
from toolkit.report._figures import FIGURES


@pytest.fixture(scope="module")
def mixed_report() -> ExecutionReport:
    from toolkit.frames._frames import build_frames

    return execution_report(build_frames(mixed_orders(80, seed=5)))


def test_report_has_every_table_and_section(mixed_report: ExecutionReport) -> None:
    for section in SECTIONS:
        for name in section.tables:
            assert isinstance(mixed_report[name], pd.DataFrame)
    assert mixed_report.summary is mixed_report.tables["summary"]
    assert set(mixed_report.definitions) == {d.title for d in DEFINITIONS.values()}
    assert "80 orders" in repr(mixed_report)


def test_figures_are_matplotlib_and_never_shown(mixed_report: ExecutionReport) -> None:
    from matplotlib.figure import Figure

    figs = mixed_report.figures
    assert set(figs) == set(FIGURES)
    for name, fig in figs.items():
        assert isinstance(fig, Figure), name
        assert fig.axes, name
    # drawn once: the property caches
    assert mixed_report.figures is figs
    # pyplot stays out: no figure manager was opened behind the user's back
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []


def test_figures_draw_the_tables(mixed_report: ExecutionReport) -> None:
    figs = mixed_report.figures
    venues = mixed_report["venues"]
    bars: list[Any] = list(figs["venue_shares"].axes[0].patches)
    # one bar for the order share and one for the notional share of every venue
    assert len(bars) == 2 * len(venues)
    heights = sorted(round(b.get_height(), 9) for b in bars)
    expected = pd.concat([venues["order_share"], venues["notional_share"]])
    assert heights == sorted(round(float(h), 9) for h in expected)
    funnel = mixed_report["funnel"]
    funnel_bars: list[Any] = list(figs["limit_funnel"].axes[0].patches)
    widths = [b.get_width() for b in funnel_bars]
    assert widths == funnel["orders"].tolist()
    lines = figs["latency_cdf"].axes[0].get_lines()
    steps = [ln for ln in lines if not str(ln.get_label()).startswith("_")]
    assert len(steps) == len(mixed_report["time_to_execution"])


def test_figures_of_an_empty_report_say_no_data() -> None:
    report = execution_report(make_frames([]))
    for name, fig in report.figures.items():
        texts = [t.get_text() for t in fig.axes[0].texts]
        assert any(t.startswith("no data") for t in texts), name


def test_repr_html_is_a_fragment_with_the_summary(mixed_report: ExecutionReport) -> None:
    frag = mixed_report._repr_html_()
    assert "<html" not in frag and "<body" not in frag
    assert 'class="tk-report"' in frag
    assert "executed orders" in frag
    assert "<svg" in frag and "data:image" not in frag


def test_to_parquet_round_trip(tmp_path: Path, mixed_report: ExecutionReport) -> None:
    out = mixed_report.to_parquet(tmp_path / "tables")
    assert {p.stem for p in out.glob("*.parquet")} == set(mixed_report.tables)
    back = ExecutionReport.read_parquet(out)
    assert set(back.tables) == set(mixed_report.tables)
    for name, df in mixed_report.tables.items():
        pd.testing.assert_frame_equal(back[name], df, obj=name)
    assert back.describe() == mixed_report.describe()


def test_empty_report_round_trips_with_typed_columns(tmp_path: Path) -> None:
    report = execution_report(make_frames([]))
    back = ExecutionReport.read_parquet(report.to_parquet(tmp_path))
    for name, df in report.tables.items():
        pd.testing.assert_frame_equal(back[name], df, obj=name)


def test_missing_table_is_refused() -> None:
    with pytest.raises(ValueError, match="missing"):
        ExecutionReport({"summary": pd.DataFrame()})


def test_market_as_a_recording_root(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from toolkit.recording._rows import partition_dir, recording_schema

    schema = recording_schema()
    ms = [T0_MS - 2_000, T0_MS + 1_000]
    rows: dict[str, list[Any]] = {name: [None, None] for name in schema.names}
    rows.update(
        received_at=[(t + 3) * 1_000_000 for t in ms],
        connection_id=["c1", "c1"],
        seq=[1, 2],
        channel=["watchticker", "watchticker"],
        symbol=["BTC/BRL", "BTC/BRL"],
        updated_at=ms,
        bid=[99.9, 199.9],
        ask=[100.1, 200.1],
        last=[100.0, 200.0],
        raw=["{}", "{}"],
    )
    d = partition_dir(tmp_path, "watchticker", "2025-11-13")
    d.mkdir(parents=True)
    pq.write_table(pa.Table.from_pydict(rows, schema=schema), d / "part-0.parquet")
    report = execution_report(make_frames([closed_order("b", "buy", 101.0)]), tmp_path)
    po = report["per_order"]
    # the 200 ticker came after createdAt: the arrival price is the earlier mid, 100
    assert po["arrival_mid"].iloc[0] == pytest.approx(100.0)
    assert report.summary.set_index("metric").loc["arrival slippage", "value"] == pytest.approx(
        100.0
    )


def test_report_of_the_simulator_history(sim: object) -> None:
    """The simulator's history through the real client: every section has numbers."""
    from toolkit.frames._frames import build_frames

    ids = sim.control.order_ids()  # type: ignore[attr-defined]
    with sim.client() as client:  # type: ignore[attr-defined]
        raw = [client.fetch_order(i) for i in ids[:120]]
        # the quotes are read under the service's names (alt: venue/px/ts/why)
        frames = build_frames(raw, profile=client.profile)
    assert frames.quote_fields.venue in frames.evaluated_tickers.columns
    report = execution_report(frames)
    s = report.summary.set_index("metric")["value"]
    assert s["executed orders"] > 0
    assert -1_000 < s["quote slippage"] < 1_000
    assert 0 <= s["best-venue hit rate"] <= 1
    assert not report["venues"].empty and not report["contingencies"].empty
    assert not report["fees"].empty
    # the simulator rounds consistently: its averages and quoteAmounts match its trades
    checks = report["data_checks"]
    assert not checks["check"].isin(["average vs trades VWAP"]).any(), checks.head()
    assert not checks["check"].isin(["quoteAmount vs sum of trade costs"]).any(), checks.head()


def test_frames_with_only_orders() -> None:
    frames = Frames(make_frames([closed_order("a", "buy", 100.0)]).orders)
    report = execution_report(frames)
    assert report.summary.set_index("metric").loc["orders", "value"] == 1
    assert "<section" in report.to_html(figures=False)
