"""A CPU load generator for the tests: N processes that each spin one core until stopped,
the field conditions the live tests must hold under (``TOOLKIT_TEST_LOAD=N``).

They stay in the test run's process group, so a Ctrl-C in the terminal reaches them too,
and each asks the kernel to end it when its parent dies (a ``kill -9`` of pytest leaves
no spinning process behind)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Any

ENV = "TOOLKIT_TEST_LOAD"

# PR_SET_PDEATHSIG (Linux): SIGKILL when the parent goes; then spin without sleeping
_SPIN = """\
import ctypes, os, signal, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
except (AttributeError, OSError):
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit(0)  # the parent went before the death signal was armed
while True:
    pass
"""


class CpuLoad:
    """``n`` CPU-bound processes while in ``with`` (or between ``start`` and ``stop``)."""

    def __init__(self, n: int) -> None:
        if n < 0:
            raise ValueError(f"{ENV} must be a number of processes >= 0, not {n}")
        self.n = n
        self.procs: list[subprocess.Popen[Any]] = []

    def __repr__(self) -> str:
        return f"CpuLoad(n={self.n}, running={len(self.running())})"

    def start(self) -> CpuLoad:
        parent = str(os.getpid())
        for _ in range(self.n):
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", _SPIN, parent],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        return self

    def running(self) -> list[int]:
        """The pids of the load processes still running."""
        return [p.pid for p in self.procs if p.poll() is None]

    def stop(self, grace: float = 5.0) -> None:
        """Kill every load process and reap it (no zombie left)."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        for proc in self.procs:
            proc.wait(grace)
        self.procs = []

    def __enter__(self) -> CpuLoad:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def load_from_env() -> CpuLoad | None:
    """The load ``TOOLKIT_TEST_LOAD`` asks for (a number of processes), or None."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"{ENV} must be a number of processes, not {value!r}") from None
    return CpuLoad(n) if n > 0 else None
