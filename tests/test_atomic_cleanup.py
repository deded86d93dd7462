"""Temporary files never outlive a run: a write interrupted by Ctrl-C or SIGTERM (raised in
the writing thread: ``toolkit.cli._signals``) removes its temporary file, and the first
write of a later run in a folder sweeps what a killed run left there (SIGKILL), only files
named like ours and older than the run, never another's nor one being written now."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from toolkit import _atomic
from toolkit._atomic import TEMP_NAME, atomic_files, atomic_write_bytes, sweep_stale
from toolkit.cli._signals import Terminated
from toolkit.frames._frames import build_frames


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, Terminated])
def test_an_interrupted_export_removes_its_temporaries(
    tmp_path: Path, interrupt: type[BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    unlinked: list[str] = []
    real_unlink = Path.unlink

    def spy_unlink(self: Path, missing_ok: bool = False) -> None:
        unlinked.append(self.name)
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", spy_unlink)
    with pytest.raises(interrupt), atomic_files(tmp_path) as files:
        files.path("orders.csv").write_text("id\n")
        files.path("trades.csv").write_text("id\n")
        raise interrupt()
    assert sorted(n.split(".")[1] for n in unlinked) == ["orders", "trades"]
    assert all(TEMP_NAME.match(n) for n in unlinked)
    assert list(tmp_path.iterdir()) == []


def _left(folder: Path, name: str, age_s: float) -> Path:
    path = folder / name
    path.write_text("partial")
    old = time.time() - age_s
    os.utime(path, (old, old))
    return path


def test_a_later_run_sweeps_only_our_stale_temporaries(tmp_path: Path) -> None:
    stale = _left(tmp_path, ".orders.csv.k3j_9xq1.tmp", age_s=3600)
    fresh = _left(tmp_path, ".orders.csv.ab12cd34.tmp", age_s=-5)  # being written now
    others = [
        _left(tmp_path, name, age_s=3600)
        for name in (
            ".orders.csv.tmp",  # not our pattern (no random part)
            "orders.csv.k3j_9xq1.tmp",  # not hidden
            ".part-1.parquet.tmp",  # the recorder's own
            ".profile.toml.tmp-123",
            "orders.csv",
        )
    ]
    assert sweep_stale(tmp_path, before=time.time()) == 1
    assert not stale.exists() and fresh.exists()
    assert all(p.exists() for p in others)


def test_the_first_write_in_a_folder_sweeps_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []
    real_sweep = _atomic.sweep_stale

    def spy(directory: Path, before: float | None = None) -> int:
        calls.append(Path(directory))
        return real_sweep(directory, before)

    monkeypatch.setattr(_atomic, "sweep_stale", spy)
    monkeypatch.setattr(_atomic, "RUN_STARTED", time.time())
    stale = _left(tmp_path, ".fills.parquet.q1w2e3r4.tmp", age_s=60)
    build_frames([b'{"id": "o-1", "status": "closed"}']).to_csv(tmp_path)
    atomic_write_bytes(tmp_path / "x.bin", b"1")
    assert calls == [tmp_path.resolve()]  # once per folder and run
    assert not stale.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
