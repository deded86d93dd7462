"""Labels from the data in the figures are plain text: a ``$`` in a venue or a symbol is
never matplotlib mathtext, which crashed the page (``$\\foo$``) or turned text italic."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from _report_frames import T0_MS, closed_order, make_frames

from toolkit.report import execution_report
from toolkit.report._svg import figure_svg

# the audit's strings: two that mathtext refuses, one it parses into something else
LABELS = ["$\\foo$", "venue_$x^$", "US$ 1 $2"]


def _quote(oid: str, rank: int, exchange: str, price: float) -> dict[str, Any]:
    return {
        "orderId": oid,
        "rank": rank,
        "exchange": exchange,
        "price": price,
        "quotedAt": T0_MS,
        "reason": "",
    }


@pytest.mark.parametrize("label", LABELS)
def test_dollar_labels_draw_as_text(label: str) -> None:
    orders = [
        closed_order("a", "buy", 100.0, executedExchange=label, symbol=f"BTC/{label}"),
        closed_order("b", "sell", 100.0, executedExchange="venueB", symbol=f"BTC/{label}"),
    ]
    quotes = [
        _quote("a", 0, label, 99.9),
        _quote("a", 1, "venueB", 99.8),
        _quote("b", 0, "venueB", 100.1),
        _quote("b", 1, label, 100.2),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing else is odd about these orders
        report = execution_report(make_frames(orders, quotes=quotes))
    assert label in set(report["venues"]["venue"])
    assert not report["cost_decomposition"].empty

    # every figure drawn as SVG, whatever the page shows of it (two orders are too few)
    for name, fig in report.figures.items():
        assert "<svg" in figure_svg(fig, name)
    report.to_html()
    assert "<table" in report._repr_html_()

    texts = {
        t.get_text(): t.get_parse_math()
        for fig in report.figures.values()
        for t in fig.findobj(lambda a: hasattr(a, "get_parse_math"))
    }
    shown = [t for t in texts if label in t]
    assert shown, "the label appears in a figure"  # venue tick, waterfall axis label
    assert not any(texts[t] for t in shown)
