"""build_frames on bodies that are not one JSON object: a clear ValueError naming the
order's position, never a crash of the process (pyarrow's JSON reader with an explicit
schema ends Python on a bare ``null``) and never a RecursionError."""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolkit.frames import build_frames

GOOD = b'{"id": "o-1", "symbol": "BTC/BRL", "status": "closed"}'


def test_a_null_body_does_not_kill_the_process() -> None:
    code = (
        "import toolkit as tk\n"
        "try:\n"
        "    tk.build_frames([b'null'])\n"
        "except ValueError as exc:\n"
        "    print('refused:', exc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "refused: order #0 is not a JSON object but null" in proc.stdout


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (b"null", "not a JSON object but null"),
        (b"", "order #1 is empty"),
        (b"   ", "order #1 is empty"),
        (b"[1, 2]", "not a JSON object but an array"),
        (b'"text"', "not a JSON object but a string"),
        (b"42", "not a JSON object but a number"),
        (b'{"id": "o-2", "sym', "order #1 is"),
        (b"<html></html>", "not valid JSON"),
        (b'{"id": "o-2"} null', "order #1"),
        (b'{"id": "o-2", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "nested deeper"),
        (b'{"id": "o-2", "x": ' + b"[" * 100 + b"]" * 100 + b"}", "nested deeper"),
    ],
)
def test_a_body_that_is_not_one_object_is_refused_by_position(body: bytes, what: str) -> None:
    with pytest.raises(ValueError, match="order #1") as info:
        build_frames([GOOD, body])
    assert what in str(info.value)


def test_ordinary_nesting_is_accepted() -> None:
    body = b'{"id": "o-2", "extra": {"a": [{"b": [1, 2]}]}}'
    frames = build_frames([GOOD, body])
    assert list(frames.orders["id"]) == ["o-1", "o-2"]
