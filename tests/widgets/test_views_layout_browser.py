"""The live views in a real browser at 1,280 px, in JupyterLab's light and dark themes: the
widgets' state embedded with ipywidgets' HTML manager in a page laid out like JupyterLab
with its file browser open (the output area is ~900 px wide), loaded in Debian's
headless Chromium. Fails when a view's cell, badge, outcome or button lies outside the
output area or its text is clipped, or when the theme's colours do not apply. Screenshots
are kept in out/browser/views_<theme>_1280.png.

A whole JupyterLab is not started here: the page carries JupyterLab's own theme
stylesheets (shipped with Voilà) and the same widget manager, which is what decides the
layout, for a fraction of the time (tests/browser also runs notebook 02 in Voilà)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _browser import embed_js as _embed_js
from _browser import playwright as _playwright

from toolkit.client._cancel import CancelOutcome, CancelResult
from toolkit.errors import InvalidRequest
from toolkit.widgets import OrderStatusView, TickerView

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = ROOT / "out" / "browser"
PROBE = Path(__file__).resolve().parent / "layout_probe.mjs"
CHROMIUM = Path("/usr/bin/chromium")
NODE = shutil.which("node")
NPM = shutil.which("npm")
THEMES = Path(sys.prefix) / "share" / "jupyter" / "voila" / "themes" / "@jupyterlab"
WIDTH, HEIGHT = 1280, 900

# JupyterLab's values of the variables the views use (theme-*-extension/index.css)
EXPECTED = {
    "light": {"text": "rgba(0, 0, 0, 0.87)", "open": "rgb(25, 118, 210)"},
    "dark": {"text": "rgba(255, 255, 255, 0.87)", "open": "rgb(33, 150, 243)"},
}

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's /usr/bin/chromium is not installed"),
    pytest.mark.skipif(NODE is None or NPM is None, reason="node/npm are not installed"),
    pytest.mark.skipif(not THEMES.exists(), reason="JupyterLab's theme stylesheets are missing"),
]

# a page shaped like JupyterLab at 1,280 px with the file browser open: tab bar and file
# browser on the left, the prompt column, then the output area the views live in
SHELL = """<!doctype html>
<html><head><meta charset="utf-8"><title>toolkit views, {theme}</title>
<link rel="stylesheet" href="theme.css">
<style>
body {{margin: 0; background: var(--jp-layout-color0); color: var(--jp-ui-font-color1);
  font-family: var(--jp-ui-font-family); font-size: var(--jp-ui-font-size1);}}
#shell {{display: flex; width: 100vw;}}
#tabs {{width: 33px; flex: none; background: var(--jp-layout-color2);}}
#files {{width: 250px; flex: none; background: var(--jp-layout-color1);
  border-right: 1px solid var(--jp-border-color2);}}
#notebook {{flex: 1 1 auto; min-width: 0; display: flex; padding: 8px 24px 8px 4px;}}
#prompt {{width: 64px; flex: none;}}
#out {{{out}}}
{extra}
</style>
</head><body class="jp-ThemedContainer">
<div id="shell"><div id="tabs"></div><div id="files"></div>
<div id="notebook"><div id="prompt"></div><div id="out">{snippet}</div></div></div>
</body></html>
"""


class _Cancels:
    """Answers cancels as the service would for the orders of this page."""

    async def acancel_limit_order(self, order_id: str) -> CancelResult:
        if order_id.endswith("trig"):
            return CancelResult(order_id, CancelOutcome.DEFERRED, "TRIGGERED", 409)
        return CancelResult(order_id, CancelOutcome.ACCEPTED, "CANCELLING", 202)


def _views(ev: Any) -> tuple[TickerView, OrderStatusView]:
    now = int(datetime.now(UTC).timestamp() * 1000)
    prices = TickerView([], symbols=["BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL"], autostart=False)
    for i, last in enumerate((351_234.56, 18_765.43, 812.34, 5.4321)):
        for k in range(30):
            prices.apply(ev.ticker(prices.subscriptions[i][1]["symbol"], last * (1 + k / 1000)))
    prices.set_error(
        "XYZ/BRL", str(InvalidRequest("subscribe watchTicker: unknown symbol XYZ/BRL"))
    )
    prices.repaint(force=True)

    orders = OrderStatusView([], client=_Cancels(), max_rows=10, autostart=False)
    steps = ["OPEN", "TRIGGERED", "PROCESSING", "OPEN", "TRIGGERED", "PROCESSING", "EXECUTED"]
    for k, status in enumerate([*steps, "closed"]):
        orders.apply(ev.order("l-002192-7d97", status, now - 9_000 + k, reconciled=k == 3))
    orders.apply(ev.order("m-000881-aa01", "pending", now - 5_000, type_="market"))
    orders.apply(ev.order("m-000881-aa01", "closed", now - 4_000, type_="market"))
    orders.apply(ev.order("l-000004-4002", "OPEN", 1_790_000_000_000))  # another day
    wide = ev.order("l-000005-4002", "OPEN", now - 6_000)
    # numbers wider than the columns' least (JupyterLab clipped "181.36312525")
    wide.order.update(amount="12345.12345678", filled="181.36312525", limitPrice="1234567.89")
    orders.apply(wide)
    for i in range(4):
        orders.apply(ev.order(f"l-00{i}310-open", "OPEN", now - 3_000 + i))
    orders.apply(ev.order("l-000777-trig", "OPEN", now - 2_000))

    async def cancel() -> None:
        await orders.cancel("l-000777-trig")  # the longest outcome text
        await orders.cancel("l-000310-open")
        orders.apply(ev.order("l-000777-trig", "TRIGGERED", now - 1_000))
        orders.apply(ev.order("l-000310-open", "CANCELLING", now - 500))

    asyncio.run(cancel())
    orders.repaint(force=True)
    prices._set_state("connected")
    orders._set_state("gap reconciled", "gap of 2.5 s")
    return prices, orders


# a phone (390 px): no tab bar, file browser or prompt column
PHONE = "#tabs, #files, #prompt {display: none;} #notebook {padding: 8px;}"


def _page(
    tmp: Path,
    theme: str,
    views: tuple[TickerView, OrderStatusView],
    out: str = "flex: 1 1 auto; min-width: 0;",
    extra: str = "",
) -> Path:
    from ipywidgets.embed import dependency_state, embed_snippet

    shown = [v.widget for v in views]
    snippet = embed_snippet(
        shown, state=dependency_state(shown), embed_url="embed.js", requirejs=False, cors=False
    )
    shutil.copy(_embed_js(), tmp / "embed.js")
    shutil.copy(THEMES / f"theme-{theme}-extension" / "index.css", tmp / "theme.css")
    page = tmp / f"views_{theme}.html"
    page.write_text(
        SHELL.format(theme=theme, snippet=snippet, out=out, extra=extra), encoding="utf-8"
    )
    return page


@pytest.mark.parametrize("width", [WIDTH, 390])
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_views_fit_without_clipping_in_both_themes(ev: Any, theme: str, width: int) -> None:
    """At 1,280 px (JupyterLab with its file browser open) and 390 px (a phone): nothing
    clipped, nothing outside the output area but what its view scrolls to sideways, and
    every Cancel button in sight (its cell comes first)."""
    views = _views(ev)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTEFACTS / f"views_{theme}_{width}.png"
    shot.unlink(missing_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="tk-views-") as tmp,
        tempfile.TemporaryDirectory(prefix="tk-chromium-") as profile,
    ):
        page = _page(Path(tmp), theme, views, extra=PHONE if width < WIDTH else "")
        assert NODE is not None
        done = subprocess.run(
            [
                NODE,
                str(PROBE),
                page.as_uri(),
                str(shot),
                str(width),
                str(HEIGHT),
                profile,
                str(_playwright()),
            ],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        shutil.copy(page, ARTEFACTS / page.name)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"] is None, result["error"]
    assert not result["pageErrors"] and not result["blocked"], result
    # everything rendered: 4 pairs and the error row; 9 orders; Cancel on the OPEN ones
    assert result["counts"]["tickerRows"] == 5
    assert result["counts"]["orderRows"] == 9
    assert result["counts"]["buttons"] == 5
    # the output area is what JupyterLab leaves at 1,280 px with the file browser open
    left, right = result["area"]
    if width == WIDTH:
        assert 850 <= right - left <= 950, result["area"]
    else:
        assert right - left <= 390, result["area"]
    assert result["problems"] == [], json.dumps(result["problems"], indent=1)
    # the theme's variables are what the views are painted with
    colours = result["colours"]
    assert colours["text"] == EXPECTED[theme]["text"], colours
    assert colours["open"] == EXPECTED[theme]["open"], colours
    assert colours["error"] is not None and colours["up"] is not None
    assert shot.exists() and shot.stat().st_size > 10_000


def _probe(page: Path, shot: Path, profile: str) -> dict[str, Any]:
    assert NODE is not None
    pw = str(_playwright())
    done = subprocess.run(
        [NODE, str(PROBE), page.as_uri(), str(shot), str(WIDTH), str(HEIGHT), profile, pw],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"] is None, result["error"]
    assert not result["pageErrors"] and not result["blocked"], result
    return result


def test_order_rows_crossing_midnight_fit_jupyterlabs_848px_output_area(ev: Any) -> None:
    """Notebook 02's widest order rows (13-character ids, "+1 → CANCELLING → CANCELLED",
    a Cancel button) in the 848 px JupyterLab leaves its output at 1,280 px with the file
    browser open: they fit with today's times and still do when some orders were updated
    on another day or year (a run just after midnight UTC, or on New Year's Day)."""
    now = int(datetime.now(UTC).timestamp() * 1000)
    prices = TickerView([], symbols=["BTC/BRL"], autostart=False)
    prices.apply(ev.ticker("BTC/BRL", 351_234.56))
    prices.repaint(force=True)
    orders = OrderStatusView([], client=_Cancels(), max_rows=6, autostart=False)
    for k, status in enumerate(["OPEN", "CANCELLING", "CANCELLED"]):
        orders.apply(ev.order("l-000123-7d97", status, now - 9_000 + k))
    orders.apply(ev.order("l-000124-7d97", "OPEN", now - 5_000))
    orders.apply(ev.order("l-000125-7d97", "OPEN", now - 86_400_000))  # yesterday
    orders.apply(ev.order("l-000126-7d97", "OPEN", now - 400 * 86_400_000))  # last year
    orders.repaint(force=True)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTEFACTS / "views_light_848_midnight.png"
    with (
        tempfile.TemporaryDirectory(prefix="tk-views-") as tmp,
        tempfile.TemporaryDirectory(prefix="tk-chromium-") as profile,
    ):
        page = _page(Path(tmp), "light", (prices, orders), out="flex: none; width: 848px;")
        result = _probe(page, shot, profile)
    left, right = result["area"]
    assert right - left == 848, result["area"]
    assert result["counts"]["orderRows"] == 4 and result["counts"]["buttons"] == 3, result
    assert result["problems"] == [], json.dumps(result["problems"], indent=1)
