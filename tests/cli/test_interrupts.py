"""Ctrl-C (SIGINT) and SIGTERM on ``toolkit sync`` and ``toolkit load``, as a user meets
them: a real subprocess against the simulator, interrupted once progress is seen (the
simulator's ``silent_after_requests`` knob counts the requests answered, then holds the
rest, so the command is surely mid-run). One line on stderr, exit 130 / 143, what was
fetched kept (sync: in the store) or counted (load), no temporary file, the lock free."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.sim import Simulator
from toolkit.store import OrderStore

ANSWERED = 30


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with Simulator(seed=5, engine=False, history_orders=120) as s:
        yield s


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    env["TOOLKIT_API_SECRET"] = "demo-secret"
    return env


def _start(sim: Simulator, *args: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "toolkit.cli", *args]
    cmd += ["--base-url", sim.base_url, "--api-key", "demo", "--concurrency", "4"]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    )


def _wait_until_silent(sim: Simulator, proc: subprocess.Popen[str]) -> None:
    """Until the simulator has answered ``ANSWERED`` requests and holds the next ones."""
    deadline = time.monotonic() + 120
    while not sim.control.knobs()["silent"]:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the command made no progress"
        time.sleep(0.05)  # polling a condition, not waiting a fixed time


def _interrupt(sim: Simulator, proc: subprocess.Popen[str], sig: int) -> tuple[str, str]:
    _wait_until_silent(sim, proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    sim.control.set_knobs(silent=False)
    return out, err


SIGNALS = pytest.mark.parametrize(
    ("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Task was destroyed" not in err and "Event loop is closed" not in err
    return lines[0]


@SIGNALS
def test_sync_interrupted_keeps_every_body_fetched(
    sim: Simulator, tmp_path: Path, sig: int, status: int
) -> None:
    ids = sim.control.order_ids()
    (tmp_path / "ids.txt").write_text("\n".join(ids))
    root = tmp_path / "store"
    sim.control.set_knobs(silent_after_requests=ANSWERED)
    proc = _start(sim, "sync", "--store", str(root), "--ids", str(tmp_path / "ids.txt"))
    _out, err = _interrupt(sim, proc, sig)
    assert proc.returncode == status, err
    line = _one_line(err)
    name = signal.Signals(sig).name
    found = re.fullmatch(
        rf"toolkit sync: interrupted by {name}; the sync was interrupted \((\d+) order\(s\) "
        r"fetched before it kept in the store\)",
        line,
    )
    assert found, line
    kept = int(found.group(1))
    assert 0 < kept < len(ids)
    store = OrderStore(root)
    assert len(store.frames().orders) == kept
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]
    with sim.client() as client:  # the lock is free: the next sync goes on from there
        result = store.sync(client, ids=ids, listing=False)
    assert result.new == len(ids) - kept


@SIGNALS
def test_load_interrupted_says_how_many_were_fetched(
    sim: Simulator, tmp_path: Path, sig: int, status: int
) -> None:
    ids = sim.control.order_ids()
    (tmp_path / "ids.txt").write_text("\n".join(ids))
    out_dir = tmp_path / "out"
    sim.control.set_knobs(silent_after_requests=ANSWERED)
    proc = _start(
        sim, "load", "--ids-file", str(tmp_path / "ids.txt"), "--out", str(out_dir), "--no-progress"
    )
    out, err = _interrupt(sim, proc, sig)
    assert proc.returncode == status, err
    line = _one_line(err)
    name = signal.Signals(sig).name
    found = re.fullmatch(
        rf"toolkit load: interrupted by {name}; load_orders was interrupted with (\d+) "
        r"order\(s\) fetched",
        line,
    )
    assert found, line
    assert 0 < int(found.group(1)) < len(ids)
    assert out == ""
    assert not out_dir.exists() or not list(out_dir.iterdir())
