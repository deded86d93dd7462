"""The live views rendered by a real browser: widget state captured after running against
the simulator, embedded with ipywidgets' HTML manager, and loaded in headless Chromium."""

from __future__ import annotations

import asyncio
import html.parser
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _browser import embed_js as _embed_js

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = ROOT / "out" / "browser"
# the HTML manager matching ipywidgets 8 (its embed.js bundles the standard controls)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--allow-file-access-from-files",
    # let the page's scripts run to completion before the DOM is dumped
    "--virtual-time-budget=8000",
]

START = {"BTC/BRL": 350_000.0, "ETH/BRL": 18_000.0, "SOL/BRL": 800.0, "USDT/BRL": 5.5}

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def _chromium(*args: str) -> str:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="tk-chromium-") as profile:
        done = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class _Rows(html.parser.HTMLParser):
    """Rendered ticker rows: symbol -> the texts of its cells (script contents ignored,
    so the embedded widget state cannot pass for rendered DOM)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[str]] = {}
        self._symbol: str | None = None
        self._depth = 0
        self.status: list[str] = []
        self._in_status = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and "tk-row" in (a.get("class") or "") and a.get("data-symbol"):
            self._symbol = a["data-symbol"]
            self.rows[self._symbol or ""] = []
            self._depth = 0
        elif self._symbol is not None:
            self._depth += 1 if tag == "span" else 0
        if tag == "div" and "tk-status" in (a.get("class") or ""):
            self._in_status = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "div":
            self._symbol = None
            self._in_status = False

    def handle_data(self, data: str) -> None:
        if self._symbol is not None and data.strip():
            self.rows[self._symbol].append(data.strip())
        if self._in_status and data.strip():
            self.status.append(data.strip())


async def _until(condition: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"{what}: not within {timeout} s"
        await asyncio.sleep(0.02)


def _painted(*views: Any) -> Callable[[], bool]:
    """Whether every change the views took is painted into their widgets (the throttle
    paints the last one when its window opens)."""
    return lambda: not any(view._dirty() for view in views)


def _export(views: list[Any], page: Path, embed_js: Path) -> None:
    from ipywidgets.embed import dependency_state, embed_minimal_html

    shutil.copy(embed_js, page.parent / "embed.js")
    shown = [v.widget for v in views]
    embed_minimal_html(
        page,
        views=shown,
        title="toolkit live views",
        state=dependency_state(shown),
        embed_url="embed.js",
        requirejs=False,
        cors=False,
    )


@pytest.mark.timeout(360)  # four Chromium runs, slow with both cores busy
def test_live_views_render_in_chromium(fresh_sim: Any, tmp_path: Path) -> None:
    from toolkit.widgets import OrderStatusView, TickerView

    embed_js = _embed_js()
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    first, second = tmp_path / "first.html", tmp_path / "second.html"

    async def main() -> tuple[float, str]:
        client = fresh_sim.client()
        view = TickerView(client, max_hz=20)
        orders = OrderStatusView(client, status="OPEN", max_rows=5)
        try:
            await _until(lambda: view.state == "connected", "the ticker view connected")
            # the engine is off in this fixture: moving each pair is what makes ticks
            for symbol, price in START.items():
                fresh_sim.control.move_price(symbol, price)
            await _until(lambda: len(view.rows) >= 4, "the four pairs")
            order = await client.acreate_limit_order("ETH/BRL", "buy", "100", amount="0.01")
            await _until(lambda: order["id"] in orders.visible_order_ids, "the order shown")
            await _until(_painted(view, orders), "the last changes painted")
            _export([view, orders], first, embed_js)
            before = view.rows["BTC/BRL"].last
            target = round(before * 1.05, 2)
            fresh_sim.control.move_price("BTC/BRL", target)
            await _until(
                lambda: abs(view.rows["BTC/BRL"].last / target - 1) < 0.01, "BTC/BRL moved"
            )
            await _until(_painted(view), "the move painted")
            _export([view], second, embed_js)
            return before, str(order["id"])
        finally:
            await view.astop()
            await orders.astop()
            await client.aclose()

    before, order_id = asyncio.run(main())

    dumps = []
    doms = []
    for page in (first, second):
        parser = _Rows()
        doms.append(_chromium("--dump-dom", page.as_uri()))
        parser.feed(doms[-1])
        dumps.append(parser)
    one, two = dumps
    # the order view rendered too: its row with the OPEN badge, the filter and Cancel
    scripts_removed = re.sub(r"<script.*?</script>", "", doms[0], flags=re.DOTALL)
    assert f'data-order="{order_id}"' in scripts_removed
    assert 'data-status="OPEN"' in scripts_removed
    assert "<select" in scripts_removed and ">Cancel<" in scripts_removed
    assert set(one.rows) >= {"BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL"}, one.rows
    assert "connected" in one.status
    btc_one, btc_two = one.rows["BTC/BRL"], two.rows["BTC/BRL"]
    assert btc_one[0] == "BTC/BRL"
    last_one = float(btc_one[3].replace(",", ""))
    last_two = float(btc_two[3].replace(",", ""))
    assert last_one == pytest.approx(before, abs=0.01)
    assert last_two > last_one * 1.03  # the rendered price moved with the simulator's
    assert btc_one != btc_two

    # artefacts kept under out/browser/ (gitignored): the two pages and their screenshots
    for page, name in ((first, "live_views"), (second, "ticker_view_after_move")):
        shot = ARTEFACTS / f"{name}.png"
        shot.unlink(missing_ok=True)
        _chromium(f"--screenshot={shot}", "--window-size=1250,650", page.as_uri())
        assert shot.exists() and shot.stat().st_size > 5_000
        shutil.copy(page, ARTEFACTS / f"{name}.html")
    shutil.copy(embed_js, ARTEFACTS / "embed.js")
