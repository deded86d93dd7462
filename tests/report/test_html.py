"""The HTML report: one self-contained file with every section and definition, escaped
content, long tables cut, and a real headless browser that renders it."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _report_frames import closed_order, make_frames
from _synthetic import mixed_orders

from toolkit.report import ExecutionReport, execution_report
from toolkit.report._definitions import CONVENTIONS, DEFINITIONS, SECTIONS
from toolkit.report._figures import FIGURES
from toolkit.report._format import format_cell
from toolkit.report._html import MAX_HTML_ROWS
from toolkit.report._tables import table_title


@pytest.fixture(scope="module")
def page_and_path(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    from toolkit.frames._frames import build_frames

    report = execution_report(build_frames(mixed_orders(120, seed=9)))
    path = tmp_path_factory.mktemp("html") / "sub" / "report.html"
    page = report.to_html(path)
    return page, path


def test_written_file_is_the_returned_page(page_and_path: tuple[str, Path]) -> None:
    page, path = page_and_path
    assert path.read_text(encoding="utf-8") == page
    assert page.startswith("<!DOCTYPE html>")


def test_self_contained(page_and_path: tuple[str, Path]) -> None:
    page, _ = page_and_path
    assert "http://" not in page and "https://" not in page
    assert "<link" not in page and "<script" not in page and "@import" not in page
    assert 'src="' not in page and 'href="http' not in page
    # every figure inline (as SVG, or the words saying why it is not drawn)
    shown = re.findall(r'data-figure="([a-z_]+)"', page)
    assert sorted(shown) == sorted({f for s in SECTIONS for f in s.figures})
    assert not re.search(r"url\((?!#)", page)  # only the figures' own clip paths


def test_every_section_and_definition_is_there(page_and_path: tuple[str, Path]) -> None:
    page, _ = page_and_path
    for s in SECTIONS:
        assert f'<section id="{s.key}">' in page
        assert f"<h2>{html.escape(s.title)}</h2>" in page
        for name in s.tables:
            assert f"<h3>{html.escape(table_title(name))}</h3>" in page
    for d in DEFINITIONS.values():
        assert html.escape(d.title) in page
        assert html.escape(d.text) in page
    assert html.escape(CONVENTIONS) in page


def test_content_is_escaped() -> None:
    evil = "<script>alert(1)</script>"
    frames = make_frames([closed_order("x", "buy", 100.0, rule=evil)])
    page = execution_report(frames, title="a < b").to_html(figures=False)
    assert evil not in page
    assert html.escape(evil) in page
    assert "<title>a &lt; b</title>" in page


def test_long_tables_are_cut_with_a_note() -> None:
    n = MAX_HTML_ROWS + 30
    frames = make_frames([closed_order(f"o{i}", "buy", 100.0, rule=f"r{i:04d}") for i in range(n)])
    report = execution_report(frames)
    assert len(report["rules"]) == n
    page = report.to_html(figures=False)
    assert "data:image" not in page
    assert f"First {MAX_HTML_ROWS} of {n} rows" in page
    assert ">r0000<" in page
    assert f">r{n - 1:04d}<" not in page.split('<section id="venues">')[1].split("</section>")[0]


def test_empty_report_page_says_so() -> None:
    page = execution_report(make_frames([])).to_html()
    assert "Every headline figure: none." in page
    assert "insufficient coverage (0 of 0)" in page
    assert len(re.findall(r'data-figure="', page)) == len(FIGURES)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    _chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_renders_in_a_real_browser(page_and_path: tuple[str, Path], tmp_path: Path) -> None:
    from PIL import Image

    _, path = page_and_path
    shot = tmp_path / "report.png"
    cmd = [
        str(_chromium()),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}",
        "--window-size=1280,4000",
        path.resolve().as_uri(),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    assert shot.is_file() and shot.stat().st_size > 50_000
    with Image.open(shot) as img:
        assert img.size == (1280, 4000)
        gray = img.convert("L")
        extrema: Any = gray.getextrema()
        lo, hi = extrema
        assert hi - lo > 100, "the screenshot is one flat colour"
        # text and figures: many distinct grey levels, not a blank page with a line
        assert len([c for c in gray.histogram() if c]) > 50


def test_report_object_round_trips_to_same_html_sections(tmp_path: Path) -> None:
    report = execution_report(make_frames([closed_order("a", "buy", 100.0)]))
    back = ExecutionReport.read_parquet(report.to_parquet(tmp_path))
    strip = re.compile(r"Generated [^.]*\.")
    page = report.to_html(figures=False)
    assert strip.sub("", back.to_html(figures=False)) == strip.sub("", page)
    assert ">best_price</td>" in page


def test_whole_numbers_show_without_decimals() -> None:
    assert format_cell(2023.0, "number", "") == "2,023"
    assert format_cell(0.0, "number", "") == "0"
    assert format_cell(12.5, "number", "") == "12.50"
    assert format_cell(float("nan"), "number", "") == "–"
