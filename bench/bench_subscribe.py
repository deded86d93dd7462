"""Benchmark of a recorder's start: the time from ``Recorder.start()`` until every channel is
subscribed (``wait_subscribed`` returns), on a quiet machine and on a busy one (target:
within 1 s with both cores taken by other work), and the same for ``toolkit record`` (from
the command's launch, Python's own start-up included, to its ``subscribed to`` line).

The busy machine is made by the bench itself: two ``python -c "while True: pass"``
processes, started before the busy rounds and ended after them. The simulator runs in a
process of its own (``toolkit sim --port 0``), as a real service would. For each round it
also prints when the converter process was ready: the time a recorder took to subscribe
before issue #25, when it waited for its converter first. The load averages are printed
with the figures, since other work on the machine changes them. The exit status is 1 when
a busy round of the library missed the target.

    python bench/bench_subscribe.py [--rounds 5] [--cli-rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from toolkit.client import Client
from toolkit.recording._recorder import DEFAULT_CHANNELS, Recorder

TARGET_S = 1.0
#: the longest a round waits for the converter process (under load it took 24-49 s)
CONVERTER_CAP_S = 120.0
KEY, SECRET = "demo", "demo-secret"


def _env() -> dict[str, str]:
    here = str(Path(__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    return env


@contextmanager
def simulator() -> Iterator[str]:
    """``toolkit sim`` on a free loopback port, in its own process; yields its REST URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkit.cli", "sim", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "REST " not in line:
            raise RuntimeError(f"the simulator did not start: {line!r}")
        yield line.split("REST ")[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextmanager
def busy(processes: int = 2) -> Iterator[None]:
    """``processes`` CPU-bound processes for the duration (ended by their own handles)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        time.sleep(2.0)  # let the scheduler see them as the hogs they are
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait(timeout=30)


async def _library_round(base_url: str, root: Path) -> tuple[float, float | None]:
    """(seconds from start() to every channel subscribed, seconds to the converter ready)."""
    async with Client(base_url=base_url, api_key=KEY, api_secret=SECRET) as client:
        rec = Recorder(client, root, channels=DEFAULT_CHANNELS)
        t0 = time.perf_counter()
        rec.start()
        await rec.wait_subscribed(timeout=CONVERTER_CAP_S)
        subscribed = time.perf_counter() - t0
        starting = rec._starting  # the converter, started beside the recording
        ready: float | None = None
        if starting is not None:
            done, _ = await asyncio.wait({starting}, timeout=CONVERTER_CAP_S)
            if done and rec._process is not None:
                ready = time.perf_counter() - t0
        await rec.stop()
    return subscribed, ready


def _cli_round(base_url: str, root: Path) -> float:
    """Seconds from launching ``toolkit record`` to its ``subscribed to`` line."""
    env = _env()
    env["TOOLKIT_API_SECRET"] = SECRET
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "toolkit.cli", "record", "--out", str(root)]
    cmd += ["--base-url", base_url, "--api-key", KEY, "--duration", str(CONVERTER_CAP_S)]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    took = float("nan")
    for line in proc.stderr:
        if line.startswith("subscribed to"):
            took = time.perf_counter() - t0
            break
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=CONVERTER_CAP_S)
    return took


def _line(name: str, values: list[float]) -> str:
    shown = ", ".join(f"{v:.3f}" for v in values)
    return (
        f"{name:<34} median {statistics.median(values):7.3f} s  max {max(values):7.3f} s"
        f"  ({len(values)} rounds: {shown})"
    )


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


def _phase(label: str, base_url: str, rounds: int, cli_rounds: int, tmp: Path) -> list[float]:
    print(f"\n-- {label}: {_load()}", flush=True)
    subscribed: list[float] = []
    ready: list[float] = []
    for i in range(rounds):
        sub, conv = asyncio.run(_library_round(base_url, tmp / f"{label}-lib-{i}"))
        subscribed.append(sub)
        ready.append(CONVERTER_CAP_S if conv is None else conv)
    print(_line("Recorder.start() -> subscribed", subscribed), flush=True)
    print(_line("  converter process ready (before)", ready), flush=True)
    if cli_rounds:
        cli = [_cli_round(base_url, tmp / f"{label}-cli-{i}") for i in range(cli_rounds)]
        print(_line("toolkit record launch -> subscribed", cli), flush=True)
    print(f"   {_load()}", flush=True)
    return subscribed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cli-rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"channels: {', '.join(DEFAULT_CHANNELS)}; target: subscribed within {TARGET_S} s")
    with tempfile.TemporaryDirectory(prefix="bench-subscribe-") as tmp, simulator() as url:
        _phase("quiet", url, args.rounds, args.cli_rounds, Path(tmp))
        with busy():
            loaded = _phase(
                "busy (2 CPU-bound processes)", url, args.rounds, args.cli_rounds, Path(tmp)
            )
    verdict = "met" if max(loaded) <= TARGET_S else "MISSED"
    print(f"\nbusy machine: max {max(loaded):.3f} s to subscribe, target {TARGET_S} s: {verdict}")
    return 0 if max(loaded) <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
