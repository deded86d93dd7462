"""The dispatcher of the command line: one subcommand per capability, each registered by the
module that holds it (``demo``, ``sim``, ``load``, ``record``, ``report``)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from toolkit.cli._errors import ERROR_STATUS, describe, is_user_error
from toolkit.cli._signals import exit_status, interrupted_line, signal_of, stop_signals

# (subcommand, module that defines ``register(subparsers)``)
COMMANDS: tuple[tuple[str, str], ...] = (
    ("demo", "toolkit.cli._demo"),
    ("sim", "toolkit.sim._cli"),
    ("load", "toolkit.cli._load"),
    ("sync", "toolkit.cli._sync"),
    ("record", "toolkit.cli._record"),
    ("report", "toolkit.cli._report"),
    ("doctor", "toolkit.cli._doctor"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolkit",
        description="Notebook toolkit for the trading service: simulator, loaders, "
        "recorder, execution-quality report.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the full traceback of an error instead of one line",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for _name, module_name in COMMANDS:
        importlib.import_module(module_name).register(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolkit")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. A mistake of the user or the environment (a ``ToolkitError``, an
    ``OSError`` such as a full disk or a busy port) prints one line and exits 1; with
    ``--debug`` it raises with its traceback. Ctrl-C (SIGINT) and SIGTERM stop the
    command through its clean path and print one line saying what was kept; exit 130 and
    143 (``toolkit.cli._signals``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with stop_signals():
            result: int | None = args.func(args)
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or SIGTERM (Terminated)
        print(interrupted_line(args.command, interrupt), file=sys.stderr)
        return exit_status(signal_of(interrupt))
    except Exception as exc:
        if args.debug or not is_user_error(exc):
            raise
        print(f"toolkit {args.command}: error: {describe(exc)}", file=sys.stderr)
        return ERROR_STATUS
    return int(result or 0)
