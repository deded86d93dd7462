"""``toolkit sim`` and ``python -m toolkit.sim``: one ready line with both addresses, real
requests served, and a clean exit 0 on SIGTERM and on Ctrl-C (SIGINT)."""

from __future__ import annotations

import argparse
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from toolkit.sim._cli import parse_knob

LINE = re.compile(r"REST (http://127\.0\.0\.1:(\d+))\s+WebSocket (ws://127\.0\.0\.1:\d+)/\?token=")


def read_line(proc: subprocess.Popen[str], timeout: float = 30) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            proc.kill()
            pytest.fail("the simulator printed nothing in time")
    return proc.stdout.readline()


@pytest.mark.parametrize(
    ("argv", "stop_with"),
    [
        (["-m", "toolkit.sim"], signal.SIGTERM),
        (["-m", "toolkit.cli", "sim"], signal.SIGINT),
    ],
)
def test_serves_prints_one_line_and_stops_cleanly(argv: list[str], stop_with: int) -> None:
    cmd = [
        sys.executable,
        *argv,
        "--port",
        "0",
        "--seed",
        "5",
        "--knob",
        "history_orders=20",
        "--knob",
        "engine=false",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = read_line(proc)
        match = LINE.search(line)
        assert match, line
        base_url = match.group(1)
        assert match.group(3) == base_url.replace("http://", "ws://")
        knobs = httpx.get(f"{base_url}/_sim/knobs").json()
        assert knobs["seed"] == 5 and knobs["history_orders"] == 20 and knobs["engine"] is False
        signin = httpx.post(
            f"{base_url}/auth/signin", json={"apiKey": "demo", "apiSecret": "demo-secret"}
        )
        assert signin.status_code == 200
        proc.send_signal(stop_with)
        started = time.monotonic()
        assert proc.wait(timeout=20) == 0
        assert time.monotonic() - started < 20
        assert proc.stdout is not None and proc.stdout.read() == ""
        assert proc.stderr is not None
        assert signin.json()["token"] not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_parse_knob() -> None:
    assert parse_knob("latency_ms=50") == ("latency_ms", 50)
    assert parse_knob("limit_routes_active=false") == ("limit_routes_active", False)
    assert parse_knob("rate_limit_per_s=null") == ("rate_limit_per_s", None)
    assert parse_knob("limit_events=outcome_only") == ("limit_events", "outcome_only")
    for bad in ("nonsense", "=1", "no_such_knob=1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_knob(bad)


@pytest.mark.parametrize("port", ["-5", "70000", "http"])
def test_a_port_out_of_range_is_refused_when_the_arguments_are_read(
    capsys: pytest.CaptureFixture[str], port: str
) -> None:
    from toolkit.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["sim", "--port", port])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err and "--port" in err


def test_a_busy_port_is_one_line_naming_the_address(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from toolkit.cli import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["sim", "--port", str(port)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and err.count("\n") == 1
    assert f"127.0.0.1:{port}" in err and "choose another --port" in err
