"""The page reads well: % for shares, thousands separators with the quote currency, no
exponent notation, the summary first, data checks collapsed with counts, theme colours from
CSS variables, a short notebook view; and headless Chromium screenshots in light and dark
(kept under out/test-artifacts/report/, listed in the test output)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _report_frames import closed_order, make_frames
from _synthetic import mixed_orders

from toolkit.report import ExecutionReport, execution_report
from toolkit.report._format import format_cell
from toolkit.report._gate import CoverageRule
from toolkit.report._html import CSS, body_html, fragment_html

ARTIFACTS = (
    Path(
        os.environ.get(
            "TOOLKIT_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "out" / "test-artifacts"
        )
    )
    / "report"
)


@pytest.fixture(scope="module")
def report() -> ExecutionReport:
    from toolkit.frames._frames import build_frames

    return execution_report(build_frames(mixed_orders(150, seed=4)))


def test_cells_are_formatted_by_what_they_hold() -> None:
    assert format_cell(0.03483, "share", "") == "3.5 %"
    assert format_cell(10_930_000.0, "amount", "BRL") == "10,930,000.00 BRL"
    assert format_cell(1.234e-5, "number", "") == "0.00001234"
    assert format_cell(0.0012, "rate", "") == "0.120 %"
    assert format_cell(-25.1234, "bp", "") == "-25.12"
    assert format_cell(1_378.0, "count", "") == "1,378"
    assert format_cell(float("nan"), "bp", "") == "–"


def test_no_exponent_and_currency_amounts_in_the_page(report: ExecutionReport) -> None:
    page = report.to_html(figures=False)
    text = re.sub(r"<[^>]+>", " ", page.split("<body>")[1])
    assert not re.search(r"\d\.?\d*e[+-]\d", text), re.search(r"\d\.?\d*e[+-]\d+", text)
    assert re.search(r"\d{1,3}(,\d{3})+\.\d\d BRL", text)
    assert "fiat" not in re.findall(r"<td[^>]*>([^<]*)</td>", page)
    # shares as percentages (the fill rate of the headline among them)
    assert re.search(r"\d+\.\d %", text)


def test_summary_comes_first_and_checks_are_collapsed(report: ExecutionReport) -> None:
    page = report.to_html(figures=False)
    sections = re.findall(r'<section id="([a-z_]+)">', page)
    assert sections[0] == "summary"
    summary = page.split('<section id="summary">')[1].split("</section>")[0]
    assert "Headline" in summary and "Cost decomposition" in summary
    checks = page.split('<section id="checks">')[1].split("</section>")[0]
    n = len(report["data_checks"])
    assert n > 0
    assert "flag(s) in" in checks and checks.count("<details") >= 2
    # every table heading carries its definition one click away
    assert page.count('<details class="def">') >= len(re.findall(r"<h3>", page)) - 1


def test_colours_come_from_theme_variables() -> None:
    colours = re.findall(r"(?:color|background):\s*([^;}]+)", CSS)
    assert colours and all(c.strip().startswith(("var(", "inherit", "#ffffff")) for c in colours)
    assert "--jp-layout-color2" in CSS and "--jp-content-font-color1" in CSS


def test_notebook_view_is_the_summary_with_the_rest_collapsed(report: ExecutionReport) -> None:
    frag = report._repr_html_()
    assert "<html" not in frag
    summary = frag.split('<section id="summary">')[1].split("</section>")[0]
    assert "<details" not in summary.split("<h3>Headline</h3>")[0]
    for key in ("slippage", "venues", "fees", "checks", "definitions"):
        section = frag.split(f'<section id="{key}">')[1]
        assert section.startswith('<details class="section"><summary>'), key
        assert "<details open" not in section.split("</section>")[0]


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _shot(page: Path, shot: Path, profile: Path, *extra: str) -> Any:
    from PIL import Image

    cmd = [
        str(_chromium()),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        f"--screenshot={shot}",
        "--window-size=1280,1600",
        *extra,
        page.resolve().as_uri(),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=90)
    return Image.open(shot).convert("L")


def _share(gray: Any, lo: int, hi: int) -> float:
    hist = gray.histogram()
    return sum(hist[lo : hi + 1]) / (gray.size[0] * gray.size[1])


#: JupyterLab's dark theme variables (a subset): the fragment must follow them
JUPYTER_DARK = """
body { background: #111111; margin: 1em; font-family: sans-serif;
  --jp-layout-color0: #111111; --jp-layout-color1: #1a1a1a; --jp-layout-color2: #2b2b2b;
  --jp-content-font-color1: rgba(255, 255, 255, 0.87); --jp-content-font-color2:
  rgba(255, 255, 255, 0.54); --jp-border-color2: #3a3a3a; --jp-brand-color1: #64b5f6; }
"""


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed")
def test_screenshots_light_and_dark(
    report: ExecutionReport, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = ARTIFACTS / "report.html"
    report.to_html(page)
    light = _shot(page, ARTIFACTS / "report-light.png", tmp_path / "p1")
    dark = _shot(page, ARTIFACTS / "report-dark.png", tmp_path / "p2", "--force-dark-mode")
    # the standalone page follows the system: a white page in light, a dark one in dark,
    # and text on both (many pixels far from the background)
    assert light.getpixel((5, 5)) > 240 and dark.getpixel((5, 5)) < 40
    assert _share(light, 0, 120) > 0.004 and _share(dark, 150, 255) > 0.004
    # the notebook fragment inside JupyterLab's dark theme, with its figures: no white
    # header strips (white text on white), no white figure cards, light text present
    assert report._figure_svgs
    body = body_html(
        report.tables,
        report._figure_svgs,
        report.title,
        report.describe(),
        collapsed=False,
        rule=CoverageRule(0.0, 1),  # every chart drawn, the waterfall near the top
    )
    assert "<svg" in body
    lab = ARTIFACTS / "notebook-dark.html"
    lab.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{JUPYTER_DARK}</style>"
        f"</head><body>{fragment_html(body)}</body></html>",
        encoding="utf-8",
    )
    nb = _shot(lab, ARTIFACTS / "notebook-dark.png", tmp_path / "p3")
    assert _share(nb, 235, 255) < 0.01, "white areas in the dark theme"
    assert _share(nb, 150, 255) > 0.004, "no light text in the dark theme"
    with capsys.disabled():  # listed in the test output, whatever the capture mode
        for name in ("report-light.png", "report-dark.png", "notebook-dark.png"):
            print(f"\nscreenshot: {ARTIFACTS / name}", end="")


def test_small_report_formats_amounts_in_its_currency() -> None:
    r = execution_report(make_frames([closed_order("a", "buy", 123_456.78)]))
    page = r.to_html(figures=False)
    assert "123,456.78 BRL" in page
