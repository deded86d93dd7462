"""The documentation site's notebook pages render their widget outputs (the live views) in
a real browser with no network: the docs hook (docs/tools/widgets.py) serves a pinned
ipywidgets HTML manager with the site instead of mkdocs-jupyter's unpkg ``@*`` loader.

The first test builds a small site the way ``make docs`` does (mkdocs-jupyter, the
material theme, the hook) from a notebook holding a TickerView's and an OrderStatusView's
widget state, and opens its page from disk in headless Chromium with every request off the
machine refused. The others open the real notebook 02 and 03 pages when ``make docs`` has
built them (``make test`` builds the site after the unit tests: on a clean clone they are
skipped)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _browser import ARTEFACTS, docs_widgets, embed_js
from _browser import playwright as _playwright

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("docs_probe.mjs")
SITE = ROOT / "out" / "site"
NODE = shutil.which("node")
CHROMIUM = Path("/usr/bin/chromium")
T0 = 1_790_000_000_000

pytestmark = pytest.mark.skipif(
    NODE is None or not CHROMIUM.exists(), reason="node and /usr/bin/chromium are needed"
)


def _probe(page: Path, name: str) -> dict[str, Any]:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTEFACTS / f"{name}.png"
    shot.unlink(missing_ok=True)
    assert NODE is not None
    with tempfile.TemporaryDirectory(prefix="tk-chromium-") as profile:
        done = subprocess.run(
            [NODE, str(PROBE), page.as_uri(), str(shot), profile, str(_playwright())],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert shot.exists()
    return result


def _views() -> list[Any]:
    from toolkit.stream._events import OrderEvent, TickerEvent, TickersEvent
    from toolkit.widgets import OrderStatusView, TickerView

    def tick(symbol: str, last: float, seq: int) -> TickerEvent:
        return TickerEvent(
            "watchtickers", T0 * 10**6, "c1", seq, None, symbol, last - 1, last + 1, last, T0 + seq
        )

    def order(oid: str, status: str, at: int) -> OrderEvent:
        body = {"id": oid, "symbol": "BTC/BRL", "side": "buy", "type": "limit", "status": status,
                "updatedAt": at, "createdAt": T0, "limitPrice": "100.00"}  # fmt: skip
        return OrderEvent("watchorders", at * 10**6, "c1", at, None, oid, status, status, at, body)

    prices = TickerView([], autostart=False)
    for k in range(3):
        prices.apply(TickersEvent("watchtickers", T0 * 10**6, "c1", k, None, (
            tick("BTC/BRL", 350_000.0 + k, k), tick("ETH/BRL", 18_000.0 - k, k))))  # fmt: skip
    orders = OrderStatusView([], autostart=False)
    for k, status in enumerate(["OPEN", "TRIGGERED", "PROCESSING", "EXECUTED"]):
        orders.apply(order("l-000001-aaaa", status, T0 + k))
    orders.apply(order("l-000002-bbbb", "OPEN", T0 + 10))
    for view in (prices, orders):
        view.repaint(force=True)
        view.stop()  # as notebook 02 leaves them: frozen on their last state
    return [prices, orders]


def _notebook(path: Path) -> None:
    import nbformat
    from ipywidgets.embed import embed_data

    views = _views()
    data = embed_data(views=[v.widget for v in views])
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": data["manager_state"]}
    nb.cells.append(nbformat.v4.new_markdown_cell("# Views"))
    for i, (view, spec) in enumerate(zip(views, data["view_specs"], strict=True)):
        cell = nbformat.v4.new_code_cell(f"view{i}", execution_count=i + 1)
        bundle = {"application/vnd.jupyter.widget-view+json": spec, "text/plain": repr(view)}
        cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
        nb.cells.append(cell)
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)


CONFIG = """\
site_name: widgets
docs_dir: docs
site_dir: site
strict: true
use_directory_urls: false
theme: {{name: material, font: false}}
hooks: [{hook}]
plugins:
  - mkdocs-jupyter: {{execute: false, include_source: true, ignore_h1_titles: true}}
nav: [notebooks/views.ipynb]
"""


def test_a_built_notebook_page_renders_its_widgets_offline(tmp_path: Path) -> None:
    _notebook(tmp_path / "docs" / "notebooks" / "views.ipynb")
    hook = ROOT / "docs" / "tools" / "widgets.py"
    (tmp_path / "mkdocs.yml").write_text(CONFIG.format(hook=hook), encoding="utf-8")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    page = tmp_path / "site" / "notebooks" / "views.html"
    text = page.read_text(encoding="utf-8")
    # the page loads the site's own pinned copy, never a CDN
    assert "unpkg.com" not in text and "embed-amd.js" not in text
    version = docs_widgets().HTML_MANAGER
    assert f'src="../assets/widgets/embed.js" data-tk-widgets="{version}"' in text
    served = tmp_path / "site" / "assets" / "widgets" / "embed.js"
    assert served.read_bytes() == embed_js().read_bytes()

    result = _probe(page, "docs_widgets_page")
    assert result["error"] is None, result
    assert result["blocked"] == [] and result["pageErrors"] == [], result
    assert result["consoleErrors"] == [], result
    assert result["tickerRows"] == ["BTC/BRL", "ETH/BRL"], result
    assert result["orderRows"] == ["l-000002-bbbb", "l-000001-aaaa"], result
    assert result["status"] and all("stopped" in s for s in result["status"]), result


@pytest.mark.parametrize(
    ("name", "orders"), [("02_live_views", True), ("03_record_and_read", False)]
)
def test_the_sites_notebook_pages_render_their_live_views(name: str, orders: bool) -> None:
    page = SITE / "notebooks" / f"{name}.html"
    hook = ROOT / "docs" / "tools" / "widgets.py"
    if not page.exists() or page.stat().st_mtime < hook.stat().st_mtime:
        pytest.skip("the docs site is not built (or older than its widgets hook): make docs")
    result = _probe(page, f"docs_{name}")
    assert result["error"] is None, result
    assert result["blocked"] == [] and result["pageErrors"] == [], result
    assert result["loader"] == ["../assets/widgets/embed.js"], result
    # the views as the notebook left them (stopped), rows and all
    assert {"BTC/BRL", "ETH/BRL"} <= set(result["tickerRows"]), result
    assert bool(result["orderRows"]) == orders, result
