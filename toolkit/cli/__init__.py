"""The ``toolkit`` command line: the dispatcher and one module per command (``demo``,
``sim``, ``load``, ``record``, ``report``). The top layer: it may import every subpackage."""

from __future__ import annotations

from toolkit.cli._main import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "build_parser", "main"]
