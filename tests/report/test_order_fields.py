"""An order whose ``side`` (spec 2.4: buy or sell) or ``status`` (spec 3.1 market, 3.2 limit)
the report cannot read drops out of every slippage figure: the report says so, with a
warning naming the field and the count, and a data_checks row per order."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolkit.frames._frames import build_frames
from toolkit.report import ExecutionReport, execution_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frames"))
from _quote_bodies import order

Body = dict[str, Any]


def _report(*bodies: Body) -> tuple[ExecutionReport, list[str]]:
    with pytest.warns(RuntimeWarning) as caught:
        report = execution_report(build_frames(list(bodies)))
    return report, [str(w.message) for w in caught]


def _limit(body: Body) -> None:
    body.update(type="limit", status="PENDING")  # a market status on a limit order


CASES: list[tuple[str, Callable[[Body], object], str, str, str]] = [
    ("side missing", lambda b: b.pop("side"), "side", "missing", "side missing"),
    ("side long", lambda b: b.update(side="long"), "side", "'long'", "is not buy or sell"),
    ("status missing", lambda b: b.pop("status"), "status", "missing", "status missing"),
    (
        "status filled",
        lambda b: b.update(status="filled"),
        "status",
        "'FILLED'",
        "is not a market status (spec 3.1: pending, executed, closed, rejected, expired)",
    ),
    ("limit pending", _limit, "status", "'PENDING'", "is not a limit status (spec 3.2: OPEN"),
]


@pytest.mark.parametrize(
    ("mutate", "field", "shown", "detail"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_an_unreadable_side_or_status_is_named_with_the_count(
    mutate: Callable[[Body], object], field: str, shown: str, detail: str
) -> None:
    bad = [order(1), order(2)]
    for body in bad:
        mutate(body)
    report, messages = _report(order(0), *bad)
    [text] = [m for m in messages if m.startswith("2 order(s)")]
    assert f"have {field} missing" in text and shown in text
    assert "leaves them out" in text
    checks = report["data_checks"]
    rows = checks[checks["check"] == f"{field} missing/unknown"]
    assert sorted(rows["orderId"]) == ["o-1", "o-2"]
    assert all(detail in d for d in rows["detail"])
    # the figures indeed rest on the one good order: what the warning is about
    assert report["per_order"]["quote_slippage_bp"].notna().sum() == 1


def test_readable_sides_and_statuses_give_no_check() -> None:
    bodies = [order(0), order(1)]
    bodies[1].update(side="SELL", status="Closed")  # case is not a problem
    limit = order(2)
    limit.update(type="limit", status="CANCELLED")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = execution_report(build_frames([*bodies, limit]))
    checks = set(report["data_checks"]["check"])
    assert not checks & {"side missing/unknown", "status missing/unknown"}
