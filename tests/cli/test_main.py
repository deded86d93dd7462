"""The ``toolkit`` command line: every subcommand of PRODUCT.md is registered."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from toolkit.cli import COMMANDS, build_parser, main
from toolkit.cli._errors import describe
from toolkit.errors import InvalidRequest


def test_every_subcommand_is_registered(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for name in ("demo", "sim", "load", "record", "report"):
        assert name in text
    names = [name for name, _ in COMMANDS]
    assert {"demo", "sim", "load", "record", "report", "doctor"} <= set(names)
    assert len(names) == len(set(names))


def test_a_command_is_required() -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([])
    assert exc.value.code == 2


def test_version() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0


def test_a_user_error_is_one_line_and_debug_shows_the_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nope"
    assert main(["report", "--orders", str(missing), "--out", str(tmp_path / "r.html")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "toolkit report: error:" in err
    with pytest.raises(InvalidRequest):
        main(["--debug", "report", "--orders", str(missing), "--out", str(tmp_path / "r.html")])


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        (errno.ENOSPC, "the disk is full"),
        (errno.EROFS, "read-only"),
        (errno.EACCES, "permission denied"),
        (errno.EADDRINUSE, "choose another --port"),
    ],
)
def test_environment_errors_say_what_where_and_what_to_do(code: int, hint: str) -> None:
    text = describe(OSError(code, os.strerror(code), "/data/rec"))
    assert "/data/rec" in text and hint in text


def test_record_on_a_full_disk_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.recording._recorder import Recorder

    async def full(self: Recorder, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "rec"))

    monkeypatch.setattr(Recorder, "run", full)
    monkeypatch.setenv("TOOLKIT_ENV", "local")
    code = main(["record", "--out", str(tmp_path / "rec"), "--duration", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert "No space left on device" in err and "the disk is full" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["load", "--out", ""],
        ["load", "--out", "x", "--concurrency", "0"],
        ["record", "--out", "  "],
        ["report", "--orders", "o", "--out", ""],
        ["sim", "--knob", "latency_ms=abc"],
        ["sim", "--knob", "listing_503_rate=7"],
        ["sim", "--knob", "latency_ms=-5"],
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--wait", "nan"],
        ["doctor", "--wait", "-1"],
        ["doctor", "--wait", "inf"],
        ["report", "--orders", "o", "--out", "r.html", "--max-quote-age", "-5"],
        ["report", "--orders", "o", "--out", "r.html", "--max-quote-age", "NaN"],
        ["report", "--orders", "o", "--market", "m", "--out", "r.html", "--max-quote-age", "inf"],
        ["report", "--orders", "o", "--market", "m", "--out", "r.html", "--max-quote-age", "nan"],
        ["demo", "--seconds", "nan"],
        ["demo", "--seconds", "-1"],
        ["demo", "--seconds", "infinity"],
        ["demo", "--history", "-1"],
        ["demo", "--out", ""],
    ],
)
def test_meaningless_values_are_refused_when_the_arguments_are_read(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Parsing alone refuses them: nothing runs, even without the service or the data."""
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"argument {argv[-2]}:" in err and "Traceback" not in err


def test_sensible_values_still_parse() -> None:
    parse = build_parser().parse_args
    assert parse(["doctor", "--wait", "0"]).wait == 0.0
    assert parse(["doctor"]).wait == 10.0
    report = ["report", "--orders", "o", "--out", "r.html"]
    assert parse([*report, "--max-quote-age", "2.5"]).max_quote_age == 2.5
    assert parse(report).max_quote_age == 60.0
    demo = parse(["demo", "--seconds", "0", "--history", "0", "--seed", "-3"])
    assert (demo.seconds, demo.history, demo.seed) == (0.0, 0, -3)
    assert str(parse(["demo"]).out) == "out/demo"
