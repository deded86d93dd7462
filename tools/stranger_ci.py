"""CI's stranger stage in one command (``make stranger``, ``make stranger PROFILE=alt``):
a service the client has never seen, and nothing but ``toolkit doctor`` to learn it.

1. ``toolkit sim`` serves ``profiles/<PROFILE>.toml`` (its ``[simulator]`` table
   included) on a free loopback port; the stage waits for its ready line, not a delay.
2. ``toolkit doctor --probe-cancel --write-profile out/<PROFILE>-doctor.toml`` runs from
   the default profile with only the four connection variables (TOOLKIT_BASE_URL,
   TOOLKIT_WS_URL, TOOLKIT_API_KEY, TOOLKIT_API_SECRET); its table goes to
   out/<PROFILE>-doctor.txt. ``--probe-cancel`` is the doctor's one opt-in probe that
   sends cancels, of order ids that do not exist (nothing in the account changes): the
   batch cancel's route, id field and largest batch, and where a cancel's ``profileId``
   travels, are shown by nothing else (without TOOLKIT_PROFILE_ID it sends a made-up
   profileId; the client also learns the placement from its first cancel).
3. The simulator stops; ``pytest -m network`` runs every network test with the written
   profile on the client side (TOOLKIT_TEST_CLIENT_PROFILE) and ``profiles/<PROFILE>.toml``
   on the server side (TOOLKIT_TEST_PROFILES), with no hand edit in between.

Exit status: pytest's, or 2 when the simulator or the doctor could not run (one line on
stderr). Arguments after ``--`` go to pytest (``-x``, ``-k name``, a test path).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the line ``toolkit sim`` prints once it accepts connections
_READY = re.compile(r"REST (http://\S+)\s+WebSocket (ws://\S+?)/\?token=")
#: the doctor's summary line: match / differ / unknown counts
_SUMMARY = re.compile(r"(\d+) match, (\d+) differ, (\d+) unknown")
#: the demo account of the simulator (toolkit/sim/_accounts.py)
API_KEY, API_SECRET = "demo", "demo-secret"
READY_TIMEOUT_S = 120.0


class StageError(Exception):
    """A step of the stage could not run: said in one line, exit status 2."""


def _base_env() -> dict[str, str]:
    """The environment without any TOOLKIT_* variable: the doctor and the tests get only
    the ones this stage sets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def start_sim(profile: Path, log: Path) -> tuple[subprocess.Popen[str], str, str]:
    """``toolkit sim`` serving ``profile`` on a free loopback port, once it said it is
    ready: (process, REST base address, WebSocket base address)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkit.sim", "--port", "0", "--profile", str(profile)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_base_env(),
        cwd=ROOT,
    )
    found: list[tuple[str, str]] = []
    ready = threading.Event()

    def read() -> None:  # the ready line, then the rest into the log, until it exits
        assert proc.stdout is not None
        with log.open("w", encoding="utf-8") as out:
            for line in proc.stdout:
                out.write(line)
                out.flush()
                match = _READY.search(line)
                if match and not found:
                    found.append((match.group(1), match.group(2)))
                    ready.set()
        ready.set()

    threading.Thread(target=read, name="sim-output", daemon=True).start()
    ready.wait(READY_TIMEOUT_S)
    if not found:
        stop_sim(proc)
        said = log.read_text(encoding="utf-8").strip().splitlines() if log.exists() else []
        raise StageError(
            f"toolkit sim did not start within {READY_TIMEOUT_S:g} s: "
            f"{said[-1] if said else 'no output'}"
        )
    return proc, *found[0]


def stop_sim(proc: subprocess.Popen[str]) -> None:
    """SIGTERM (its clean stop), then a kill if it has not ended within 30 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_doctor(base_url: str, ws_url: str, written: Path, table: Path) -> tuple[int, ...]:
    """``toolkit doctor --probe-cancel --write-profile written`` with the four connection
    variables only; its output into ``table``; the (match, differ, unknown) counts of its
    summary."""
    env = _base_env()
    env.update(
        TOOLKIT_BASE_URL=base_url,
        TOOLKIT_WS_URL=ws_url,
        TOOLKIT_API_KEY=API_KEY,
        TOOLKIT_API_SECRET=API_SECRET,
    )
    written.unlink(missing_ok=True)  # the profile this run writes, not an older one
    done = subprocess.run(
        [
            *(sys.executable, "-m", "toolkit.cli", "doctor", "--probe-cancel"),
            *("--write-profile", str(written)),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    table.write_text(done.stdout + done.stderr, encoding="utf-8")
    # 1 is a doctor that saw differences (or an incomplete step): the profile is written
    if done.returncode not in (0, 1) or not written.exists():
        last = (done.stderr or done.stdout).strip().splitlines()
        raise StageError(
            f"toolkit doctor exited {done.returncode} without writing {written}: "
            f"{last[-1] if last else 'no output'} (see {table})"
        )
    summary = _SUMMARY.search(done.stdout)
    return tuple(int(n) for n in summary.groups()) if summary else ()


def run_tests(name: str, written: Path, pytest_args: list[str]) -> int:
    """``pytest -m network``: the simulator serves ``profiles/<name>.toml``, every client
    takes ``written``."""
    env = _base_env()
    env.update(TOOLKIT_TEST_PROFILES=name, TOOLKIT_TEST_CLIENT_PROFILE=str(written))
    command = [sys.executable, "-m", "pytest", "-q", "-m", "network", *pytest_args]
    return subprocess.run(command, env=env, cwd=ROOT).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/stranger_ci.py", description=__doc__)
    parser.add_argument("--profile", default="stranger", help="name in profiles/ (stranger)")
    parser.add_argument("--out", type=Path, default=ROOT / "out", help="folder of the results")
    parser.add_argument("--doctor-only", action="store_true", help="stop after the doctor")
    parser.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    args = parser.parse_args(argv)
    served = ROOT / "profiles" / f"{args.profile}.toml"
    if not served.is_file():
        print(f"stranger: no profile {served}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    written = (args.out / f"{args.profile}-doctor.toml").resolve()
    table = args.out / f"{args.profile}-doctor.txt"
    started = time.monotonic()
    try:
        proc, base_url, ws_url = start_sim(served, args.out / f"{args.profile}-sim.log")
        try:
            counts = run_doctor(base_url, ws_url, written, table)
        finally:
            stop_sim(proc)
    except (StageError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"stranger: {exc}", file=sys.stderr)
        return 2
    doctor_s = time.monotonic() - started
    said = "match/differ/unknown " + "/".join(map(str, counts)) if counts else "no summary"
    print(f"stranger: doctor on {args.profile}: {said} in {doctor_s:.0f} s; wrote {written}")
    if args.doctor_only:
        return 0
    status = run_tests(args.profile, written, args.pytest_args)
    total = time.monotonic() - started
    print(f"stranger: {args.profile}: pytest -m network exited {status}; stage {total:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
