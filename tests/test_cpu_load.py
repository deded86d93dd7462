"""The CPU load the live tests run under (tests/_load.py, ``TOOLKIT_TEST_LOAD``): its
processes spin while it runs, and none is left running or unreaped after it stops, after
a Ctrl-C of the test run, or after the test run is killed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _cpu_load import CpuLoad, load_from_env

ROOT = Path(__file__).resolve().parents[1]

# a test run whose one test writes the pids of its load and then waits to be interrupted
_BLOCKED = """\
import time

def test_blocks(cpu_load, tmp_path_factory):
    import os, pathlib
    out = pathlib.Path(os.environ["LOAD_PIDS"])
    out.with_suffix(".tmp").write_text(" ".join(map(str, cpu_load.running())))
    out.with_suffix(".tmp").replace(out)
    time.sleep(600)
"""


def _until(condition: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def _exists(pid: int) -> bool:
    """Whether ``pid`` is still a process (a zombie counts: it was not reaped)."""
    return Path(f"/proc/{pid}").exists()


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (neither gone nor a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_the_load_spins_n_processes_and_reaps_them_when_stopped() -> None:
    load = CpuLoad(2).start()
    try:
        pids = load.running()
        assert len(pids) == 2 and os.getpid() not in pids
        # each one burns CPU: its own time grows while this test waits
        start = {pid: _cpu_ticks(pid) for pid in pids}
        _until(lambda: all(_cpu_ticks(pid) > start[pid] for pid in pids))
    finally:
        load.stop()
    assert load.running() == []
    assert not any(_exists(pid) for pid in pids)


def test_the_load_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLKIT_TEST_LOAD", "3")
    load = load_from_env()
    assert load is not None and load.n == 3 and load.running() == []
    for off in ("", "0"):
        monkeypatch.setenv("TOOLKIT_TEST_LOAD", off)
        assert load_from_env() is None
    monkeypatch.setenv("TOOLKIT_TEST_LOAD", "two")
    with pytest.raises(ValueError, match="TOOLKIT_TEST_LOAD"):
        load_from_env()


@pytest.mark.parametrize("how", ["ctrl-c", "kill -9"])
def test_no_load_process_outlives_the_test_run(how: str, tmp_path: Path) -> None:
    (tmp_path / "test_blocked.py").write_text(_BLOCKED)
    pids_file = tmp_path / "pids"
    run = subprocess.Popen(
        # tests/conftest.py as a plugin: its session fixture starts the load
        [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)]),
            "TOOLKIT_TEST_LOAD": "2",
            "LOAD_PIDS": str(pids_file),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _until(lambda: pids_file.exists() or run.poll() is not None, timeout=60)
        assert pids_file.exists(), run.communicate()[0].decode()[-2000:]
        pids = [int(p) for p in pids_file.read_text().split()]
        assert len(pids) == 2 and all(_exists(pid) for pid in pids)
        run.send_signal(signal.SIGINT if how == "ctrl-c" else signal.SIGKILL)
        run.wait(30)
        if how == "ctrl-c":  # the session's teardown stopped and reaped them
            _until(lambda: not any(_exists(pid) for pid in pids))
        else:
            # the kernel killed them with their parent (their reaper is init's)
            _until(lambda: not any(_running(pid) for pid in pids))
    finally:  # whatever went wrong, nothing of that run (its group) keeps running
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
        run.wait()
