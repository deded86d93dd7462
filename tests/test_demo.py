"""The offline demo end to end (``toolkit demo``): simulator, activity made through the
toolkit, a recording, every order loaded, Parquet/CSV exports and the HTML report."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest

from toolkit.cli import main
from toolkit.demo import DemoResult, run_demo
from toolkit.recording._read import read_recording


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    out = tmp_path_factory.mktemp("demo")
    return run_demo(out, seed=3, record_seconds=2.0, history_orders=300, log=lambda _: None)


def test_demo_writes_every_artefact(demo: DemoResult) -> None:
    for path in [*demo.parquet.values(), *demo.csv.values(), demo.report_html]:
        assert path.is_file() and path.stat().st_size > 0, path
    assert set(demo.parquet) == {"orders", "trades", "fees", "evaluated_tickers", "fills"}
    assert any(demo.report_tables.glob("*.parquet"))
    assert str(demo.out) in demo.summary()


def test_demo_activity_reaches_the_loaded_frames(demo: DemoResult) -> None:
    orders = pd.read_parquet(demo.parquet["orders"])
    assert len(orders) == demo.orders > 300
    made = orders.set_index("id").loc[demo.created]
    assert (made["type"] == "limit").all()
    # the three cancels were accepted, so those orders can no longer execute
    assert set(demo.cancel_outcomes.values()) == {"accepted"}
    cancelled = made.loc[list(demo.cancel_outcomes), "status"]
    assert set(cancelled) <= {"CANCELLING", "CANCELLED"}


def test_demo_recording_holds_the_streams(demo: DemoResult) -> None:
    ticks = read_recording(demo.recording, channel="watchticker")
    orders = read_recording(demo.recording, channel="watchorders")
    assert len(ticks) > 0 and set(ticks["symbol"]) == {"BTC/BRL"}
    assert set(demo.created) <= set(orders["order_id"])
    assert demo.recorded_messages >= len(ticks) + len(orders)


def test_demo_exports_read_back_the_same_in_duckdb(demo: DemoResult) -> None:
    fills = pd.read_parquet(demo.parquet["fills"])
    con = duckdb.connect()
    n, cost = con.execute(
        "select count(*), sum(cost) from read_parquet(?)", [str(demo.parquet["fills"])]
    ).fetchone()  # type: ignore[misc]
    assert n == len(fills) == demo.fills
    assert cost == pytest.approx(fills["cost"].sum())
    csv_n = con.execute("select count(*) from read_csv_auto(?)", [str(demo.csv["fills"])])
    assert csv_n.fetchone() == (len(fills),)


def test_demo_report_is_self_contained(demo: DemoResult) -> None:
    html = demo.report_html.read_text()
    assert "Execution-quality report" in html
    assert '<svg role="img"' in html  # the figures inline, in the page's text colour
    assert "Trading cost over the period: " in html
    assert "http://" not in html and "https://" not in html


def test_demo_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "--out", str(tmp_path), "--seconds", "1", "--history", "200"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "report.html" in printed and str(tmp_path) in printed
    assert (tmp_path / "report.html").is_file()


def test_demo_report_prices_arrivals_from_every_recorded_pair(demo: DemoResult) -> None:
    # the report reads the recording's root: watchTickers gives every pair, not only the
    # watchTicker symbol (BTC/BRL); the demo places market orders on all four pairs
    per_order = pd.read_parquet(demo.report_tables / "per_order.parquet")
    priced = set(per_order.loc[per_order["arrival_mid"].notna(), "symbol"])
    assert priced - {"BTC/BRL"}, priced


def test_demo_records_its_orders_while_the_converter_is_still_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #25: on a busy machine the converter process took up to 49 s to start, and the
    demo's orders were placed before the recorder had subscribed (0 recorded). The demo
    waits for the subscription, never for the converter: one that never gets ready still
    leaves every order of the demo in the recording."""
    import asyncio

    from toolkit.recording._convert import ConverterProcess

    async def never_ready(self: ConverterProcess, *args: object, **kwargs: object) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(ConverterProcess, "start", never_ready)
    result = run_demo(tmp_path, seed=5, record_seconds=0.5, history_orders=100, log=lambda _: None)
    orders = read_recording(result.recording, channel="watchorders")
    assert set(result.created) <= set(orders["order_id"])
    assert list((result.recording / "_wal").glob("*.wal")) == []
