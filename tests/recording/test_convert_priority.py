"""The converter process's priority (``_convert.main``, sans-I/O): its one-off start-up
(imports, the warm-up) runs at the recorder's priority and only then does it lower its own,
so on a machine with both cores busy it is ready in seconds, not the 20-95 s it took when
it imported at the lowest priority (the segments closed meanwhile wait on disk)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from toolkit.profile import DEFAULT_PROFILE
from toolkit.recording import _convert, _raw


def _run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, refuse_nice: bool = False
) -> tuple[list[str], str]:
    steps: list[str] = []

    def nice(n: int) -> int:
        if refuse_nice:  # a container's seccomp, say
            raise PermissionError("nice refused")
        steps.append(f"nice {n}")
        return n

    monkeypatch.setattr(_convert, "_die_with_parent", lambda parent: steps.append("parent"))
    monkeypatch.setattr(_raw, "warm_up", lambda profile: steps.append("warm-up"))
    monkeypatch.setattr(_convert.os, "nice", nice)
    out = io.StringIO()
    monkeypatch.setattr(_convert.sys, "stdin", io.StringIO("exit\n"))
    monkeypatch.setattr(_convert.sys, "stdout", out)
    config = {
        "root": str(tmp_path),
        "compression": "zstd",
        "profile": DEFAULT_PROFILE.to_dict(),
        "parent": 1,
    }
    assert _convert.main([json.dumps(config)]) == 0
    return steps, out.getvalue()


def test_the_priority_drops_after_the_imports_and_before_ready(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    steps, out = _run(monkeypatch, tmp_path)
    assert steps == ["parent", "warm-up", f"nice {_convert.NICENESS}"]
    assert out.splitlines() == ["ready"]


def test_a_refused_niceness_still_gets_ready(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    steps, out = _run(monkeypatch, tmp_path, refuse_nice=True)
    assert steps == ["parent", "warm-up"]
    assert out.splitlines() == ["ready"]
