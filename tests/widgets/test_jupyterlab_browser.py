"""Notebook 02 in a real JupyterLab at 1,280 px, in the light and the dark theme.

`jupyter lab` runs on loopback (a token, no browser, a temporary root holding one copy of
the notebook per theme, temporary user settings that pick the theme and silence the news
prompt); Debian's headless Chromium, driven by playwright-core (jupyterlab_probe.mjs),
opens each copy with the file browser open, runs every cell from the Run menu (the
notebook starts its own simulator) and watches the live views while they run. Fails when
a view's cell, badge, outcome, status line or control lies outside its output area or the
notebook's visible width, or when its text is clipped: during the run (for 300 ms or
more) or once the views have stopped. Screenshots of each view, per theme, are kept as
out/browser/jupyterlab_<theme>_<view>.png, next to what the browser saw
(jupyterlab_02.json) and the server's log.

tests/widgets/test_views_layout_browser.py checks the same views, embedded, in a page
shaped like JupyterLab (fast, with every state the views can show); this test is the
real thing with the notebook an analyst runs."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import nbformat
import pytest
from _browser import free_port as _free_port
from _browser import playwright as _playwright
from _browser import stop as _stop
from _browser import using as _using

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "02_live_views.ipynb"
ARTEFACTS = ROOT / "out" / "browser"
PROBE = Path(__file__).resolve().parent / "jupyterlab_probe.mjs"
CHROMIUM = Path("/usr/bin/chromium")  # the probe launches exactly this binary
NODE = shutil.which("node")
NPM = shutil.which("npm")
JUPYTER_LAB = Path(sys.executable).parent / "jupyter-lab"
HAS_JUPYTERLAB = importlib.util.find_spec("jupyterlab") is not None and JUPYTER_LAB.exists()
WIDTH, HEIGHT = 1280, 900
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
# deadlines only: the probe ends once both pages have run every cell (with both cores busy,
# two kernels running the notebook at once take several times their usual ~30 s)
PROBE_TIMEOUT_S = 300

# JupyterLab's values of the variables the views use (theme-*-extension/index.css)
EXPECTED = {
    "light": {"text": "rgba(0, 0, 0, 0.87)", "open": "rgb(25, 118, 210)"},
    "dark": {"text": "rgba(255, 255, 255, 0.87)", "open": "rgb(33, 150, 243)"},
}


# -- processes -----------------------------------------------------------------------------


def _wait_ready(url: str, proc: subprocess.Popen[Any], log: Path, timeout: float = 180.0) -> None:
    """Until the server answers its status API (it does once every extension is loaded)."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"jupyter lab exited:\n{log.read_text()[-3000:]}"
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as answer:
            if answer.status == 200:
                return
        assert time.monotonic() < deadline, f"jupyter lab not answering:\n{log.read_text()[-3000:]}"
        time.sleep(0.1)


# -- the set-up ------------------------------------------------------------------------------


def _settings(directory: Path) -> Path:
    """User settings for the server: no news or update prompt (it would cover the views
    and fetch from the internet). Returns the theme's settings file, which the probe writes
    before it opens each theme's page."""
    apputils = directory / "@jupyterlab" / "apputils-extension"
    apputils.mkdir(parents=True)
    notification = apputils / "notification.jupyterlab-settings"
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    themes = apputils / "themes.jupyterlab-settings"
    themes.write_text(json.dumps({"theme": THEMES["light"]}))
    return themes


def _lab(tmp: Path, port: int, token: str, settings: Path, log: Path) -> subprocess.Popen[Any]:
    env = {
        **os.environ,
        # nothing from the user's own Jupyter set-up; the venv's kernel and extensions
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        # the notebook writes its files here, not under the repository
        "TOOLKIT_NOTEBOOK_OUT": str(tmp / "notebook-out"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    with log.open("wb") as sink:
        return subprocess.Popen(
            [
                str(JUPYTER_LAB),
                "--no-browser",
                "--allow-root",  # CI runs as root
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",  # this port or fail, never a neighbour
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={tmp / 'root'}",
                f"--LabApp.user_settings_dir={settings}",
                f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
                # offline: no announcements, no update check, no extension listing
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.extension_manager=readonly",
                # window.jupyterapp: the probe waits for the notebook's kernel itself
                "--LabApp.expose_app_in_browser=True",
            ],
            cwd=tmp / "root",
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _probe(config: dict[str, Any], profile: Path) -> dict[str, Any]:
    assert NODE is not None
    probe = subprocess.Popen(
        [NODE, str(PROBE), json.dumps(config)],
        cwd=PROBE.parent,
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
        _stop(probe)
        # the probe closes Chromium itself; anything still running on its profile is a leak
        leaked = _using(str(profile))
        for pid in leaked:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert probe.returncode == 0, err[-3000:]
    assert not leaked, f"Chromium processes left running: {leaked}"
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


# -- the test --------------------------------------------------------------------------------


def test_notebook02s_cancel_cells_and_ids_are_in_sight_in_jupyterlab_at_1280px() -> None:
    """The arithmetic behind what the browser test sees: notebook 02's order rows (amount,
    filled and average price, full times) are wider than JupyterLab's ~848 px output area
    at 1,280 px with the file browser open, so the view scrolls sideways; the Cancel cell
    (wide enough for "Confirm cancel <13-character id>", 13 px font) and the id column
    (the table's 0.92 of it) come first and fit, in sight. The grid does not depend on
    what the rows show, so nothing moves when a timeline grows."""
    from toolkit.widgets._order_format import order_grid

    grid, width_em = order_grid(13)
    action_px = (0.6 * (15 + 13) + 2.5) * 13  # see OrderStatusView._set_grid
    id_px = (0.62 * 13 + 0.4) * 0.92 * 13
    assert action_px + id_px <= 848, action_px + id_px
    assert order_grid(13) == (grid, width_em)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's /usr/bin/chromium is not installed")
@pytest.mark.skipif(
    not HAS_JUPYTERLAB, reason="jupyterlab is not installed (pip install -e '.[dev]')"
)
@pytest.mark.skipif(NODE is None or NPM is None, reason="node/npm (the browser driver) missing")
@pytest.mark.timeout(PROBE_TIMEOUT_S + 300)
def test_notebook02_in_jupyterlab_light_and_dark_at_1280px(tmp_path: Path) -> None:
    playwright = _playwright()
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTEFACTS.glob("jupyterlab_*"):
        old.unlink()
    code_cells = sum(c.cell_type == "code" for c in nbformat.read(NOTEBOOK, as_version=4).cells)
    for theme in THEMES:
        (tmp_path / "root" / theme).mkdir(parents=True)
        shutil.copy(NOTEBOOK, tmp_path / "root" / theme / NOTEBOOK.name)
    themes_file = _settings(tmp_path / "settings")

    port, token = _free_port(), secrets.token_hex(16)
    base = f"http://127.0.0.1:{port}/"
    log = tmp_path / "jupyterlab.log"
    profile = tmp_path / "chromium-profile"
    lab = _lab(tmp_path, port, token, tmp_path / "settings", log)
    try:
        _wait_ready(f"{base}api/status?token={token}", lab, log)
        result = _probe(
            {
                "base": base,
                "token": token,
                "themes": [
                    {"name": name, "label": label, "path": f"{name}/{NOTEBOOK.name}"}
                    for name, label in THEMES.items()
                ],
                "settingsFile": str(themes_file),
                "codeCells": code_cells,
                "width": WIDTH,
                "height": HEIGHT,
                "shots": str(ARTEFACTS),
                "profile": str(profile),
                "playwright": str(playwright),
                "timeoutMs": PROBE_TIMEOUT_S * 1000,
            },
            profile,
        )
    finally:
        survivors = _stop(lab)
        shutil.copy(log, ARTEFACTS / "jupyterlab_02.log")
    (ARTEFACTS / "jupyterlab_02.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    assert not survivors, f"JupyterLab's kernels left running: {survivors}"

    assert result["error"] is None, result["error"]
    assert result["blocked"] == [], result["blocked"]  # nothing but loopback was asked for
    assert set(result["pages"]) == set(THEMES), list(result["pages"])
    for theme, page in result["pages"].items():
        context = f"{theme}: " + json.dumps(page, indent=1)[:6000]
        if page["error"] is not None:
            server = (ARTEFACTS / "jupyterlab_02.log").read_text(errors="replace")
            context += "\nthe server's log ends:\n" + server[-2500:]
        assert page["error"] is None, context
        assert page["pageErrors"] == [], context
        assert page["errors"] == [], context  # no cell raised
        assert page["prompts"] == [f"[{i}]:" for i in range(1, code_cells + 1)], context
        assert page["status"] == ["● stopped", "● stopped"], context
        # the window JupyterLab was laid out in: 1,280 px, the file browser open beside
        # the notebook
        shell = page["shell"]
        assert shell["width"] == WIDTH, context
        assert shell["fileBrowser"][1] - shell["fileBrowser"][0] >= 200, context
        assert shell["notebook"][0] >= shell["fileBrowser"][1], context
        # both views rendered, with their rows; OPEN limit orders had a Cancel button
        assert page["final"]["prices"]["rows"] == 4, context
        assert page["final"]["orders"]["rows"] >= 2, context
        assert page["maxButtons"].get("orders", 0) >= 1, context
        # nothing outside the viewport or clipped: not while the cells ran, not at the end
        assert page["liveProblems"] == [], json.dumps(page["liveProblems"], indent=1)
        assert page["finalProblems"] == [], json.dumps(page["finalProblems"], indent=1)
        # the theme's variables are what the views are painted with
        colours = page["colours"]
        assert colours["text"] == EXPECTED[theme]["text"], colours
        assert colours["badges"].get("OPEN") == EXPECTED[theme]["open"], colours
        for view in ("prices", "orders"):
            shot = ARTEFACTS / f"jupyterlab_{theme}_{view}.png"
            assert shot.exists() and shot.stat().st_size > 20_000, shot
