"""What the real-browser tests share: the processes they start and how they stop them,
playwright-core (pinned in tests/browser/package-lock.json; it drives Debian's Chromium
and never downloads a browser) and the ipywidgets HTML manager for embedded views (the
pinned copy the docs site serves, docs/tools/widgets.py)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ARTEFACTS = ROOT / "out" / "browser"
PLAYWRIGHT = ROOT / "tests" / "browser" / "node_modules" / "playwright-core"
NPM = shutil.which("npm")


def children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                tree.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    return tree


def descendants(pid: int) -> list[int]:
    tree, out, todo = children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop(proc: subprocess.Popen[Any], grace: float = 15.0) -> list[int]:
    """SIGTERM ``proc`` (a Jupyter server shuts its kernels down), SIGKILL its process
    group if it hangs, then whatever it started that still runs (kernels, Chromium run in
    sessions of their own). Returns the pids that were still running."""
    spawned = descendants(proc.pid)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # start_new_session: pgid == pid
            proc.wait(5)
    deadline = time.monotonic() + 5
    while any(alive(p) for p in spawned) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [p for p in spawned if alive(p)]
    for pid in survivors:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return survivors


def using(marker: str) -> list[int]:
    """Live processes whose command line mentions ``marker`` (a path unique to this run)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "cmdline").read_bytes() and alive(int(entry.name)):
                    pids.append(int(entry.name))
    return pids


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def playwright(timeout: float = 120) -> Path:
    """playwright-core in tests/browser/node_modules, installed once with ``npm ci``."""
    if not (PLAYWRIGHT / "package.json").exists():
        assert NPM is not None, "npm is needed once to install playwright-core"
        done = subprocess.run(
            [NPM, "ci", "--prefix", str(PLAYWRIGHT.parents[1]), "--no-audit", "--no-fund"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"},
        )
        assert done.returncode == 0, done.stderr[-2000:]
    return PLAYWRIGHT


def docs_widgets() -> Any:
    """docs/tools/widgets.py: the pinned HTML manager the docs site serves, and its hook."""
    spec = importlib.util.spec_from_file_location(
        "tk_docs_widgets", ROOT / "docs" / "tools" / "widgets.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def embed_js() -> Path:
    """The ipywidgets HTML manager's ``embed.js``: the pinned copy the docs site serves
    (fetched once with ``npm pack``, its sha512 checked; see docs/tools/widgets.py)."""
    return Path(docs_widgets().bundle()) / "embed.js"
