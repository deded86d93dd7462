"""The ``toolkit`` command line: every subcommand of PRODUCT.md is registered."""

from __future__ import annotations

import pytest

from toolkit.cli import COMMANDS, build_parser, main


def test_every_subcommand_is_registered(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for name in ("demo", "sim", "load", "record", "report"):
        assert name in text
    assert [name for name, _ in COMMANDS] == ["demo", "sim", "load", "record", "report", "doctor"]


def test_a_command_is_required() -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([])
    assert exc.value.code == 2
