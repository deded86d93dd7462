"""The dispatcher of the command line: one subcommand per capability, each registered by the
module that holds it (``demo``, ``sim``, ``load``, ``record``, ``report``)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

# (subcommand, module that defines ``register(subparsers)``)
COMMANDS: tuple[tuple[str, str], ...] = (
    ("demo", "toolkit.cli._demo"),
    ("sim", "toolkit.sim._cli"),
    ("load", "toolkit.cli._load"),
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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for _name, module_name in COMMANDS:
        importlib.import_module(module_name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int | None = args.func(args)
    return int(result or 0)
