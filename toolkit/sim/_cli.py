"""``toolkit sim`` (and ``python -m toolkit.sim``): serve the simulator in the foreground on
a fixed port until Ctrl-C or SIGTERM, printing one line with its addresses when ready."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from types import FrameType
from typing import Any

from toolkit.sim._knobs import Knobs, check_knob


def parse_knob(text: str) -> tuple[str, Any]:
    """``name=value``; the value is read as JSON when it parses (``50``, ``false``,
    ``null``), else kept as a string (``limit_events=outcome_only``)."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    if name not in Knobs.__dataclass_fields__:
        raise argparse.ArgumentTypeError(f"unknown simulator knob: {name}")
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    try:
        return name, check_knob(name, value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def port_arg(text: str) -> int:
    """A TCP port, 0-65535 (0 = any free one), refused at parse time otherwise."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535 (0 = any free port), not {port}")
    return port


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    parser.add_argument("--port", type=port_arg, default=8765, help="port (0 = any free port)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the history and prices")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        default=None,
        help="serve the service profile in this TOML file (default: the built-in default)",
    )
    parser.add_argument(
        "--knob",
        action="append",
        type=parse_knob,
        default=[],
        metavar="NAME=VALUE",
        help="set a simulator knob, e.g. --knob latency_ms=50 (repeatable)",
    )
    parser.set_defaults(func=run)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sim",
        help="run the local simulator of the service",
        description="Serve the simulated service (REST and WebSocket on one port) until "
        "Ctrl-C or SIGTERM.",
    )
    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from toolkit.errors import InvalidRequest
    from toolkit.profile import DEFAULT_PROFILE, load_profile
    from toolkit.sim import Simulator

    profile = DEFAULT_PROFILE
    if getattr(args, "profile", None):
        try:
            profile = load_profile(args.profile)
        except (InvalidRequest, ValueError, OSError) as exc:
            print(f"toolkit sim: {exc}", file=sys.stderr)
            return 1
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    try:  # the knobs of the profile's [simulator] table are checked here
        sim = Simulator(
            seed=args.seed, host=args.host, port=args.port, profile=profile, **dict(args.knob)
        )
    except InvalidRequest as exc:
        print(f"toolkit sim: {exc}", file=sys.stderr)
        return 1
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with sim:
            shown = "" if profile is DEFAULT_PROFILE else f"; profile {profile.name}"
            print(
                f"toolkit sim: REST {sim.base_url}  WebSocket {sim.ws_url}/?token=TOKEN "
                f"(token from POST {sim.base_url}{profile.signin.path}; seed {args.seed}"
                f"{shown}; Ctrl-C stops)",
                flush=True,
            )
            # wait() with a timeout so signals are noticed promptly on every platform
            while not stop.wait(0.5):
                if not sim.running:
                    print("toolkit sim: the server stopped unexpectedly", file=sys.stderr)
                    return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.sim", description=run.__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run(args)
