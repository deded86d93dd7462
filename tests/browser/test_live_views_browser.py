"""The live views rendered by a real browser: widget state captured after running against
the simulator, embedded with ipywidgets' HTML manager, and loaded in headless Chromium."""

from __future__ import annotations

import asyncio
import contextlib
import html.parser
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _browser import embed_js as _embed_js
from _browser import free_port as _free_port
from _browser import playwright as _playwright
from _browser import stop as _stop
from _browser import using as _using

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


# -- clicking Cancel in a live page --------------------------------------------------------

HERE = Path(__file__).resolve().parent
CANCEL_PROBE = HERE / "cancel_probe.mjs"
SHOTS = ROOT / "out" / "screenshots"
NODE = shutil.which("node")
VOILA = Path(sys.executable).parent / "voila"
# deadlines only: each wait of the probe ends as soon as the page shows what it waits for
# (with both cores busy a kernel's start and each round trip take several times longer)
WAIT_MS = 120_000
# the page: the view of the OPEN orders, on a live kernel, against the test's simulator
CELLS = [
    "import toolkit as tk\n\nclient = tk.Client.from_env()",
    'orders = tk.OrderStatusView(client, status="OPEN", max_rows=8)\norders',
]


def _voila(notebook: Path, port: int, base_url: str, log: Path) -> subprocess.Popen[Any]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TOOLKIT_ENV", "TOOLKIT_WS_URL", "TOOLKIT_PROFILE", "TOOLKIT_PROFILE_ID")
    }
    env.update(
        TOOLKIT_BASE_URL=base_url,
        TOOLKIT_API_KEY="demo",
        TOOLKIT_API_SECRET="demo-secret",
        TOOLKIT_PROFILE_ID="P1",  # the profile a cancel names (the account's orders')
        JUPYTER_RUNTIME_DIR=str(notebook.parent / "jupyter-runtime"),
        # the kernelspec runs "python": the venv's
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    with log.open("wb") as sink:
        return subprocess.Popen(
            [
                str(VOILA),
                str(notebook),
                f"--port={port}",
                "--no-browser",
                "--Voila.ip=127.0.0.1",
                "--Voila.port_retries=0",
                "--progressive_rendering=True",
                "--show_tracebacks=True",
            ],
            cwd=notebook.parent,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _wait_http(url: str, proc: subprocess.Popen[Any], log: Path, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"voila exited:\n{log.read_text()[-3000:]}"
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=2)
            return
        except urllib.error.HTTPError:
            return  # any HTTP status will do
        except OSError:
            pass
        assert time.monotonic() < deadline, f"voila not answering:\n{log.read_text()[-3000:]}"
        time.sleep(0.1)


class _Gate:
    """A TCP forwarder on loopback between the page's kernel and the simulator: ``close()``
    drops every connection and closes the port (the service unreachable, as a closed port
    on 127.0.0.1 is), ``open()`` listens on the same port again."""

    def __init__(self, target_port: int) -> None:
        self.port = _free_port()
        self._target = target_port
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self._server: socket.socket | None = None
        self.open()

    def open(self) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(64)
        server.settimeout(0.1)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def _accept(self, server: socket.socket) -> None:
        while self._server is server:
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._socks |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        with self._lock:
            socks, self._socks = self._socks, set()
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def _cancel_probe(config: dict[str, Any], gate: _Gate) -> dict[str, Any]:
    """Run the probe; when it asks for the service to go away, close the gate."""
    assert NODE is not None
    probe = subprocess.Popen(
        [NODE, str(CANCEL_PROBE), json.dumps(config)],
        cwd=HERE,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert probe.stdin is not None and probe.stdout is not None
    last = ""
    try:
        # the probe's own waits end it (each has a deadline); pytest's timeout bounds this
        for line in probe.stdout:
            last = line.strip() or last
            if last == json.dumps({"ask": "offline"}, separators=(",", ":")):
                gate.close()
                probe.stdin.write("ok\n")
                probe.stdin.flush()
        err = probe.stderr.read() if probe.stderr else ""
        probe.wait(60)
    finally:
        _stop(probe)
        for pid in _using(str(config["profile"])):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert probe.returncode == 0, err[-3000:]
    result: dict[str, Any] = json.loads(last)
    return result


@pytest.mark.timeout(1500)  # two themes, each a kernel and a dozen round trips, cores busy
@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_a_click_after_the_rows_moved_cancels_nothing_and_offline_disables_cancel(
    tmp_path: Path,
) -> None:
    """Issue #27, in Chromium at 1,280 and 390 px, JupyterLab's light and dark themes (a
    Voilà page, so a live kernel answers the clicks): at one spot, a first click arms the
    order there and a second one cancels it; once that order has left the OPEN view and
    the rows moved, a click at the same spot only arms the order now there, so the
    simulator ends with exactly the confirmed orders cancelled; a view whose service went
    unreachable (its port closed) disables every Cancel. Screenshots of each state:
    out/screenshots/."""
    import nbformat

    from toolkit.sim import Simulator

    if not VOILA.exists():
        pytest.fail(f"{VOILA} missing: install the dev extra (pip install -e '.[dev]')")
    _playwright()
    SHOTS.mkdir(parents=True, exist_ok=True)
    notebook = tmp_path / "cancel.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nbformat.write(nb, notebook)
    with Simulator(seed=11, engine=False, history_orders=40) as sim:
        client = sim.client()
        try:
            # far below the market: they stay OPEN until cancelled
            mine = [
                str(client.create_limit_order("BTC/BRL", "buy", "1000", amount="0.001")["id"])
                for _ in range(10)
            ]
            before = set(client.load_orders(status="OPEN").orders["id"])
            port = _free_port()
            log = tmp_path / "voila.log"
            # the page's kernel reaches the simulator through a gate the test can close
            gate = _Gate(int(sim.base_url.rsplit(":", 1)[1]))
            voila = _voila(notebook, port, f"http://127.0.0.1:{gate.port}", log)
            results = []
            try:
                _wait_http(f"http://127.0.0.1:{port}/", voila, log)
                for theme in ("light", "dark"):
                    profile = tmp_path / f"chromium-{theme}"
                    config = {
                        "url": f"http://127.0.0.1:{port}/?theme={theme}",
                        "theme": theme,
                        "widths": [1280, 390],
                        "height": 1100,
                        "shots": str(SHOTS),
                        "profile": str(profile),
                        "timeoutMs": WAIT_MS,
                    }
                    results.append(_cancel_probe(config, gate))
                    gate.open()  # the next page's kernel reaches the service again
                    (SHOTS / f"views_{theme}_cancel.json").write_text(
                        json.dumps(results[-1], indent=1), encoding="utf-8"
                    )
            finally:
                gate.close()
                survivors = _stop(voila)
                shutil.copy(log, SHOTS / "views_cancel_voila.log")
            assert not survivors, f"voila's kernels left running: {survivors}"
            after = set(client.load_orders(status="OPEN").orders["id"])
        finally:
            client.close()

    confirmed = set()
    for result in results:
        context = json.dumps(result, indent=1)[:4000]
        assert result["error"] is None, context
        # (the page's requests off loopback, Voilà's CDN icon font, are refused: no network)
        assert result["pageErrors"] == [], context
        assert [run["width"] for run in result["runs"]] == [1280, 390], context
        for run in result["runs"]:
            first, second = run["first"], run["second"]
            assert run["armedText"] == f"Confirm cancel {first}", context
            assert "accepted" in run["outcome"] or "cancel" in run["outcome"], context
            assert second != first, context
            # the click at the same spot after the rows moved armed the order there, only
            assert run["secondText"] == f"Confirm cancel {second}", context
            assert run["secondOutcome"] == "", context
            confirmed.add(first)
            assert all(Path(shot).stat().st_size > 5_000 for shot in run["shots"])
        assert [o["width"] for o in result["offline"]] == [390, 1280], context
        for offline in result["offline"]:
            for seen in (offline, offline["after"]):  # before and after the screenshot
                assert seen["state"] in ("reconnecting", "error"), context
                assert seen["cancels"] > 0 and seen["enabled"] == 0, context
            assert Path(offline["shot"]).stat().st_size > 5_000
    # the simulator agrees: exactly the confirmed orders were cancelled, nothing else
    assert len(confirmed) == 4
    assert before - after == confirmed, (sorted(before - after), sorted(confirmed))
    assert confirmed <= set(mine)
