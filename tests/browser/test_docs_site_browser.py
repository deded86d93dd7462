"""The documentation site, opened from disk (``file://``) in a real browser with every
request off the machine refused: search answers, the notebook pages render their widget
outputs (the live views) from the site's pinned HTML manager, and the views and the report
fit the page and read in the light and the dark scheme at 1,280 px.

A small site is built once the way ``make docs`` builds the real one (mkdocs.yml's theme,
stylesheets, plugins and hooks; _docs_site.py) from two notebooks, one holding a
TickerView's and an OrderStatusView's widget state, one an execution report, and two
Markdown pages. The last tests open the real site's notebook pages when ``make docs`` has
built them (``make test`` builds the site after the unit tests: on a clean clone they are
skipped). Screenshots of every page and scheme go to out/screenshots/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _browser import docs_widgets, embed_js
from _docs_site import CHROMIUM, NODE, ROOT, SITE, build, probe, report_notebook, views_notebook

pytestmark = pytest.mark.skipif(
    NODE is None or not CHROMIUM.exists(), reason="node and /usr/bin/chromium are needed"
)
BOTH = ["light", "dark"]
# the least contrast a text of a view or of the report may have with its background: black
# on the dark scheme's near-black was 1.1; the views' status badges are at 2.7 and above
MIN_CONTRAST = 2.5
GUIDE = """# Cancelling orders

A limit order is withdrawn with `cancel_limit_order`; the answer says whether the
service took the cancellation.
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs-site")
    views_notebook(root / "views.ipynb")
    report_notebook(root / "report.ipynb")
    return build(
        root,
        {
            "index.md": "# Home\n\nThe toolkit's documentation.\n",
            "guide/cancel.md": GUIDE,
            "notebooks/views.ipynb": root / "views.ipynb",
            "notebooks/report.ipynb": root / "report.ipynb",
        },
    )


def _fits_and_reads(result: dict[str, Any]) -> None:
    """The page's live views and report: nothing wider than the content column, every text
    legible on its background, no theme icon over a report's section title."""
    assert result["blocked"] == [] and result["pageErrors"] == [], result
    assert result["colorScheme"] == {"light": "default", "dark": "slate"}[result["scheme"]]
    assert result["overflow"] == [], result
    assert result["lowContrast"] == [], result
    assert result["summaryIcons"] == 0, result


def test_search_answers_from_disk(site: Path) -> None:
    # the theme searches in a Web Worker, which a browser does not start from file://:
    # the offline plugin inlines the index and the site serves the shim (docs/tools/offline.py)
    assert (site / "search" / "search_index.js").exists()
    assert (site / "assets" / "iframe-worker" / "index.js").exists()
    for page in ("index.html", "notebooks/views.html"):
        assert "unpkg.com" not in (site / page).read_text(encoding="utf-8")
    (result,) = probe("docs-search", site / "index.html", query="cancellation")
    assert result["blocked"] == [] and result["pageErrors"] == [], result
    assert result["search"]["results"], result
    assert any("guide/cancel.html" in href for href in result["search"]["results"]), result


def test_a_notebook_page_renders_its_widgets_offline_and_fits(site: Path) -> None:
    page = site / "notebooks" / "views.html"
    text = page.read_text(encoding="utf-8")
    # the page loads the site's own pinned copy, never a CDN
    assert "unpkg.com" not in text and "embed-amd.js" not in text
    version = docs_widgets().HTML_MANAGER
    assert f'src="../assets/widgets/embed.js" data-tk-widgets="{version}"' in text
    served = site / "assets" / "widgets" / "embed.js"
    assert served.read_bytes() == embed_js().read_bytes()

    for result in probe("docs-views", page, schemes=BOTH, views=True, minContrast=MIN_CONTRAST):
        assert result["consoleErrors"] == [], result
        assert result["tickerRows"] == ["BTC/BRL", "ETH/BRL"], result
        assert result["orderRows"] == ["l-000002-bbbb", "l-000001-aaaa"], result
        assert result["status"] and all("stopped" in s for s in result["status"]), result
        _fits_and_reads(result)


def test_a_report_in_a_notebook_page_fits_and_reads(site: Path) -> None:
    page = site / "notebooks" / "report.html"
    for result in probe("docs-report", page, schemes=BOTH, minContrast=MIN_CONTRAST):
        assert result["reports"] == 1, result
        _fits_and_reads(result)


def _built(name: str) -> Path:
    page = SITE / "notebooks" / f"{name}.html"
    inputs = [ROOT / "mkdocs.yml", *(ROOT / "docs" / "tools").glob("*.py")]
    inputs += (ROOT / "docs" / "src" / "assets").rglob("*.css")
    if not page.exists() or page.stat().st_mtime < max(p.stat().st_mtime for p in inputs):
        pytest.skip("the docs site is not built (or older than its hooks and styles): make docs")
    return page


@pytest.mark.parametrize(
    ("name", "orders"), [("02_live_views", True), ("03_record_and_read", False)]
)
def test_the_sites_notebook_pages_render_their_live_views(name: str, orders: bool) -> None:
    page = _built(name)
    for result in probe(f"docs-{name}", page, schemes=BOTH, views=True, minContrast=MIN_CONTRAST):
        assert result["loader"] == ["../assets/widgets/embed.js"], result
        # the views as the notebook left them (stopped), rows and all
        assert {"BTC/BRL", "ETH/BRL"} <= set(result["tickerRows"]), result
        assert bool(result["orderRows"]) == orders, result
        _fits_and_reads(result)


def test_the_sites_report_page_fits_and_reads() -> None:
    page = _built("04_execution_report")
    for result in probe("docs-04_execution_report", page, schemes=BOTH, minContrast=MIN_CONTRAST):
        assert result["reports"] == 1, result
        _fits_and_reads(result)
