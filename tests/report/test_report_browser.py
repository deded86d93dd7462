"""The report in a real browser (Debian's headless Chromium driven by playwright-core, the
project's harness: tests/_browser.py) at 1,280 and 390 px, light and dark: the one-line
headline and its BRL total are inside the window without scrolling sideways, the charts
are drawn in the page's text colour, and no chart is drawn below its coverage threshold
(a thin report says "insufficient coverage (n of N)" in its place). A screenshot of each
state is written to out/screenshots/report_<set>_<width>_<scheme>.png (the window) and
..._full.png (the whole page)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _browser import ROOT
from _browser import playwright as _playwright
from _synthetic import mixed_orders

from toolkit.report import ExecutionReport, execution_report
from toolkit.report._gate import figure_coverage

PROBE = Path(__file__).resolve().parent / "report_probe.mjs"
SHOTS = ROOT / "out" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
NODE = shutil.which("node")
NPM = shutil.which("npm")
SIZES = ((1280, 900), (390, 844))
SCHEMES = ("light", "dark")

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's /usr/bin/chromium is not installed"),
    pytest.mark.skipif(NODE is None or NPM is None, reason="node/npm are not installed"),
]


def _reports() -> dict[str, ExecutionReport]:
    from toolkit.frames._frames import build_frames

    return {
        # ~140 executed orders, ~100 of them decomposed: the headline and most charts
        "full": execution_report(build_frames(mixed_orders(600, seed=4))),
        # ~10 executed orders: below the default threshold (30 orders) everywhere
        "thin": execution_report(build_frames(mixed_orders(50, seed=4))),
    }


@pytest.fixture(scope="module")
def seen() -> dict[str, Any]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    reports = _reports()
    jobs = []
    with (
        tempfile.TemporaryDirectory(prefix="tk-report-") as tmp,
        tempfile.TemporaryDirectory(prefix="tk-chromium-") as profile,
    ):
        for name, report in reports.items():
            page = Path(tmp) / f"report_{name}.html"
            report.to_html(page)
            for width, height in SIZES:
                for scheme in SCHEMES:
                    stem = f"report_{name}_{width}_{scheme}"
                    jobs.append(
                        {
                            "url": page.as_uri(),
                            "name": name,
                            "width": width,
                            "height": height,
                            "scheme": scheme,
                            "shot": str(SHOTS / f"{stem}.png"),
                            "full": str(SHOTS / f"{stem}_full.png"),
                        }
                    )
        jobs_file = Path(tmp) / "jobs.json"
        jobs_file.write_text(json.dumps(jobs), encoding="utf-8")
        assert NODE is not None
        done = subprocess.run(
            [NODE, str(PROBE), str(jobs_file), profile, str(_playwright())],
            capture_output=True,
            text=True,
            timeout=600,  # sixteen loads of a long page with both cores busy
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    tail = results.pop()
    assert "error" not in tail, tail
    assert not tail["pageErrors"] and not tail["blocked"], tail
    return {"reports": reports, "states": results}


def _states(seen: dict[str, Any], name: str) -> list[dict[str, Any]]:
    states = [s for s in seen["states"] if s["name"] == name]
    assert len(states) == len(SIZES) * len(SCHEMES)
    return states


def test_headline_and_brl_total_in_the_window_without_scrolling_sideways(
    seen: dict[str, Any],
) -> None:
    for s in _states(seen, "full"):
        where = f"{s['width']} px {s['scheme']}"
        assert s["scrollWidth"] <= s["innerWidth"], f"{where}: the page scrolls sideways"
        text = s["headlineText"].replace("\xa0", " ")
        assert text.startswith("Trading cost over the period: "), (where, text)
        assert " bp = " in text and "routing " in text and "execution " in text, text
        assert "fees " in text, text
        h, total = s["headline"], s["total"]
        assert h["left"] >= 0 and h["right"] <= s["innerWidth"], (where, h)
        assert total is not None and s["totalText"].endswith(" BRL"), (where, s["totalText"])
        assert total["left"] >= 0 and total["right"] <= s["innerWidth"], (where, total)
        assert total["bottom"] <= s["innerHeight"], (where, total)
        assert Path(s["shot"]).stat().st_size > 10_000 and Path(s["full"]).is_file()


def test_worst_orders_keep_their_cost_column_in_view(seen: dict[str, Any]) -> None:
    for s in _states(seen, "full"):
        heads = s["worstHeads"]
        assert [h["text"] for h in heads[:2]] == ["order id", "total cost (BRL)"], heads
        # the order and what it cost fit the window, phone included, with no sideways scroll
        assert all(h["left"] >= 0 and h["right"] <= s["innerWidth"] for h in heads[:2]), heads


def test_charts_follow_the_theme(seen: dict[str, Any]) -> None:
    colours = {}
    for s in _states(seen, "full"):
        assert s["figures"], s
        # the chart's labels are the page's text colour, light on dark and dark on light
        assert s["chartTextColour"] == s["bodyColour"], s
        colours[(s["width"], s["scheme"])] = (s["bodyColour"], s["bodyBackground"])
    assert colours[(1280, "light")] != colours[(1280, "dark")]


def test_no_chart_drawn_below_its_coverage_threshold(seen: dict[str, Any]) -> None:
    for name in ("full", "thin"):
        report = seen["reports"][name]
        below = set()
        for figure in report.figures:
            n, total = figure_coverage(figure, report.tables)
            if not report.rule.enough(n, total):
                below.add(figure)
        for s in _states(seen, name):
            drawn = set(s["figures"])
            gaps = {g["figure"] for g in s["gaps"]}
            assert drawn.isdisjoint(below), (name, drawn & below)
            assert gaps == below, (name, gaps, below)
            assert all("insufficient coverage (" in g["text"] for g in s["gaps"]), s["gaps"]
    thin = _states(seen, "thin")[0]
    assert not thin["figures"], "a thin report draws no chart"
    assert thin["headlineText"].startswith("Trading cost over the period: insufficient coverage")
    assert thin["total"] is None  # no BRL figure resting on ~10 orders
    full = _states(seen, "full")[0]
    assert "markout_curve" in {g["figure"] for g in full["gaps"]}  # no market recording
