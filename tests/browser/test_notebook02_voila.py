"""Notebook 02 in a real browser: served by Voilà on loopback, its kernel executing it while
Debian's headless Chromium (driven by playwright-core, see voila_probe.mjs) watches the live
views render: the four pairs, BTC/BRL's price changing, the order view with status badges.
A screenshot taken during the live window is kept as out/browser/voila_02.png."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from _browser import free_port as _free_port
from _browser import stop as _stop
from _browser import using as _using

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
NOTEBOOK = ROOT / "notebooks" / "02_live_views.ipynb"
ARTEFACTS = ROOT / "out" / "browser"
SCREENSHOT = ARTEFACTS / "voila_02.png"
PROBE = HERE / "voila_probe.mjs"
CHROMIUM = Path("/usr/bin/chromium")  # voila_probe.mjs launches exactly this binary
NODE = shutil.which("node")
NPM = shutil.which("npm")
VOILA = Path(sys.executable).parent / "voila"

SYMBOLS = {"BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL"}
STATUSES = {"OPEN", "TRIGGERED", "PROCESSING", "CANCELLING", "EXECUTED", "CLOSED", "CANCELLED"}
# printed by the notebook's second-to-last cell, once its live window is over
DONE_TEXT = "repaints"
# deadlines only: the probe ends as soon as the page shows DONE_TEXT (with both cores busy
# the kernel's start and the notebook's cells take several times their usual ~20 s)
PROBE_TIMEOUT_S = 240

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's /usr/bin/chromium is not installed"),
    pytest.mark.skipif(NODE is None or NPM is None, reason="node/npm are not installed"),
]


# -- processes ---------------------------------------------------------------------------


def _wait_http(url: str, proc: subprocess.Popen[Any], log: Path, timeout: float = 120.0) -> None:
    """Until the server answers HTTP (a HEAD, which Voilà refuses without starting a kernel)."""
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


# -- the driver ----------------------------------------------------------------------------


def _playwright() -> None:
    """playwright-core (pinned in package-lock.json) in tests/browser/node_modules, installed
    once with `npm ci`; it drives /usr/bin/chromium and never downloads a browser."""
    if (HERE / "node_modules" / "playwright-core" / "package.json").exists():
        return
    assert NPM is not None
    done = subprocess.run(
        [NPM, "ci", "--prefix", str(HERE), "--no-audit", "--no-fund"],
        capture_output=True,
        text=True,
        timeout=45,
        check=False,
        env={**os.environ, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _probe(url: str, tmp_path: Path) -> dict[str, Any]:
    assert NODE is not None
    shot = tmp_path / "voila_02.png"
    profile = tmp_path / "chromium-profile"
    probe = subprocess.Popen(
        [NODE, str(PROBE), url, str(shot), str(PROBE_TIMEOUT_S * 1000), DONE_TEXT, str(profile)],
        cwd=HERE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = probe.communicate(timeout=PROBE_TIMEOUT_S + 60)
    except subprocess.TimeoutExpired:
        pytest.fail("the browser probe did not finish in time")
    finally:
        # the probe closes Chromium itself; anything still running on its profile is a leak
        _stop(probe)
        survivors = _using(str(profile))
        for pid in survivors:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert probe.returncode == 0, err[-3000:]
    assert not survivors, f"Chromium processes left running: {survivors}"
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    if shot.exists():
        shutil.copy(shot, SCREENSHOT)
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    # what the browser saw, next to the screenshot
    (ARTEFACTS / "voila_02.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


# -- the test ------------------------------------------------------------------------------


@pytest.mark.timeout(PROBE_TIMEOUT_S + 240)
def test_notebook02_live_views_in_voila(tmp_path: Path) -> None:
    if not VOILA.exists():
        pytest.fail(f"{VOILA} missing: install the dev extra (pip install -e '.[dev]')")
    _playwright()
    SCREENSHOT.unlink(missing_ok=True)

    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "voila.log"
    env = {
        **os.environ,
        # the notebook writes its files here, not under the repository
        "TOOLKIT_NOTEBOOK_OUT": str(tmp_path / "notebook-out"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        # the kernelspec runs "python": the venv's, as under nbclient
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    with log.open("wb") as sink:
        voila = subprocess.Popen(
            [
                str(VOILA),
                str(NOTEBOOK),
                f"--port={port}",
                "--no-browser",
                "--Voila.ip=127.0.0.1",
                "--Voila.port_retries=0",  # this port or fail, never a neighbour
                # the page connects to the kernel and runs the cells one by one, so its
                # widgets are live while the notebook executes (without it Voilà sends
                # the page only once every cell has run, and this notebook ends by
                # stopping its views)
                "--progressive_rendering=True",
                "--show_tracebacks=True",
            ],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_http(url, voila, log)
        result = _probe(url, tmp_path)
    finally:
        survivors = _stop(voila)
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(log, ARTEFACTS / "voila_02.log")
    assert not survivors, f"voila's kernels left running: {survivors}"

    context = json.dumps({k: v for k, v in result.items() if k != "shot"}, indent=1)[:4000]
    assert result["error"] is None, result["error"]
    assert result["pageErrors"] == [], result["pageErrors"]
    assert result["errors"] == [], result["errors"]
    assert set(result["symbolsSeen"]) >= SYMBOLS, context

    # BTC/BRL's "last" cell, sampled while the kernel ran: the price moved under our eyes
    prices = [float(text.replace(",", "")) for _, text in result["btc"]]
    assert all(p > 0 for p in prices), prices
    assert len(set(prices)) >= 3, context  # the notebook's own move, then the engine's ticks

    # what the screenshot shows: both views live, the four pairs and orders with badges
    shot = result["shot"]
    assert shot is not None, context
    assert set(shot["rows"]) >= SYMBOLS, shot["rows"]
    for symbol in SYMBOLS:
        cells = shot["rows"][symbol]
        assert cells[0] == symbol and float(cells[3].replace(",", "")) > 0, cells
    badges = [status for status in shot["orders"].values() if status]
    assert badges and set(badges) <= STATUSES, shot["orders"]
    assert shot["status"] and all("connected" in s for s in shot["status"]), shot["status"]

    # the notebook ran to its end: the print after the live window, views still connected
    assert result["doneLine"] is not None, context
    assert result["doneLine"].startswith("connected"), result["doneLine"]
    assert result["shotAtMs"] < result["elapsedMs"]
    assert SCREENSHOT.exists() and SCREENSHOT.stat().st_size > 20_000
