"""Tests of toolkit.errors: the tree, redaction of URLs and scrubbing of secrets."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolkit import errors as ex


def test_the_tree_matches_its_docstring() -> None:
    service: list[type[ex.ToolkitError]] = [
        ex.InvalidResponse, ex.BadRequest, ex.AuthenticationError, ex.PermissionDenied,
        ex.OrderNotFound, ex.RouteNotActive, ex.Conflict, ex.RateLimited,
        ex.ServiceUnavailable,
    ]  # fmt: skip
    for cls in service:
        assert issubclass(cls, ex.ServiceError)
    for base in (ex.TransportError, ex.ServiceError, ex.InvalidRequest, ex.PaginationLoop):
        assert issubclass(base, ex.ToolkitError)
    assert issubclass(ex.InvalidRequest, ValueError)
    doc = ex.__doc__ or ""
    classes = [
        obj
        for _, obj in inspect.getmembers(ex, inspect.isclass)
        if issubclass(obj, ex.ToolkitError)
    ]
    for cls in classes:
        assert cls.__name__ in doc


def test_error_carries_the_exchange_with_a_redacted_url() -> None:
    err = ex.ServiceUnavailable(
        "down",
        method="GET",
        url="ws://u:pw@host/?token=abc.def&limit=5",
        status=503,
        body="x" * 5000,
    )
    assert err.method == "GET" and err.status == 503
    assert err.url == "ws://host/?token=***&limit=5"
    assert err.body is not None and len(err.body) == 2000
    assert "abc.def" not in str(err) and "pw" not in str(err)
    assert str(err) == "down (GET ws://host/?token=***&limit=5 -> 503)"
    assert "abc.def" not in repr(err)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h/p?apiSecret=s&x=1", "http://h/p?apiSecret=***&x=1"),
        ("http://h/p?paginationToken=a%2Bb", "http://h/p?paginationToken=a%2Bb"),
        ("http://h/p", "http://h/p"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert ex.redact_url(url) == expected


def test_scrub_removes_known_secrets_and_bearer_values() -> None:
    text = 'echo {"apiSecret":"hunter22"} Authorization: Bearer eyJabc.def'
    cleaned = ex.scrub(text, ["hunter22", None, ""])
    assert "hunter22" not in cleaned and "eyJabc.def" not in cleaned
    assert "Bearer ***" in cleaned


def _damaged_export(root: Path) -> Path:
    from toolkit.frames import build_frames

    build_frames([]).to_parquet(root)
    (root / "_manifest.json").unlink()  # no manifest: an export of an older version
    (root / "fills.parquet").write_bytes(b"PAR1 cut short")
    return root


#: bad input to the public API, each refused with InvalidRequest (so `except tk.ToolkitError`
#: catches it, docs/src/api/errors.md), as (what, call taking a scratch folder)
BAD_INPUT: dict[str, Callable[[Path], object]] = {
    "a simulator knob out of range": lambda tmp: _simulator(latency_ms=-5),
    "an unknown simulator knob": lambda tmp: _simulator(bogus_knob=1),
    "recording columns not a list": lambda tmp: _read(tmp, columns="bogus"),
    "an unknown recording column": lambda tmp: _read(tmp, columns=["nope"]),
    "read_parquet of no folder": lambda tmp: _read_parquet(tmp / "nonexistent"),
    "read_parquet of an empty path": lambda tmp: _read_parquet(""),
    "read_parquet of a folder without an export": lambda tmp: _read_parquet(tmp),
    "read_parquet of a damaged file": lambda tmp: _read_parquet(_damaged_export(tmp / "e")),
    "build_frames of null": lambda tmp: _build([b"null"]),
    "build_frames of an int": lambda tmp: _build([1]),
    "build_frames of one order": lambda tmp: _build(b"{}"),
    "build_frames of a set in a mapping": lambda tmp: _build([{"id": {1}}]),
    "a backoff below 0": lambda tmp: _backoff(healthy_after=-1),
    "a NaN backoff": lambda tmp: _backoff(initial=float("nan")),
    "a report compare of one period": lambda tmp: _report(compare=((None, None),)),
    "a report of no tables": lambda tmp: _report_of({}),
}


def _simulator(**knobs: Any) -> object:
    from toolkit.sim import Simulator

    return Simulator(**knobs)


def _read(tmp: Path, **options: Any) -> object:
    from toolkit.recording import read_recording

    (tmp / "_wal").mkdir()
    return read_recording(tmp, channel="watchticker", **options)


def _read_parquet(path: Path | str) -> object:
    from toolkit.frames import OrderFrames

    # the damaged export below has no manifest (deleted on purpose): read it anyway
    return OrderFrames.read_parquet(path, require_manifest=False)


def _build(raw: Any) -> object:
    from toolkit.frames import build_frames

    return build_frames(raw)


def _report(**options: Any) -> object:
    from toolkit.frames import OrderFrames
    from toolkit.report import execution_report

    return execution_report(OrderFrames.empty(), **options)


def _report_of(tables: dict[str, Any]) -> object:
    from toolkit.report import ExecutionReport

    return ExecutionReport(tables)


def _backoff(**options: Any) -> object:
    from toolkit.stream._channels import Backoff

    return Backoff(**options)


@pytest.mark.parametrize("call", list(BAD_INPUT.values()), ids=list(BAD_INPUT))
def test_bad_input_is_an_invalid_request(call: Callable[[Path], object], tmp_path: Path) -> None:
    with pytest.raises(ex.InvalidRequest):
        call(tmp_path)


def test_a_missing_or_damaged_export_is_named(tmp_path: Path) -> None:
    with pytest.raises(ex.InvalidRequest) as info:
        _read_parquet(tmp_path / "nonexistent")
    assert f"no export at {tmp_path / 'nonexistent'}" in str(info.value)
    root = _damaged_export(tmp_path / "e")
    with pytest.raises(ex.InvalidRequest, match=r"fills\.parquet is damaged"):
        _read_parquet(root)
