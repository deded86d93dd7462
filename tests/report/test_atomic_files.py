"""Every file the report writes (the HTML page, the Parquet tables, the figure PNGs) appears
whole or not at all: written under a temporary name beside it, fsynced, renamed over it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _report_frames import closed_order, make_frames

from toolkit._atomic import MANIFEST, read_manifest
from toolkit.report import ExecutionReport, execution_report


@pytest.fixture(scope="module")
def report() -> ExecutionReport:
    return execution_report(make_frames([closed_order("a", "buy", 100.0)]))


class Spy:
    """Records the fsyncs and renames while delegating to the real calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[tuple[str, Any]] = []
        real_replace, real_fsync = os.replace, os.fsync

        def replace(src: Any, dst: Any) -> None:
            self.events.append(("replace", (Path(src), Path(dst))))
            real_replace(src, dst)

        def fsync(fd: int) -> None:
            self.events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
            real_fsync(fd)

        monkeypatch.setattr(os, "replace", replace)
        monkeypatch.setattr(os, "fsync", fsync)

    def replaced(self) -> list[tuple[Path, Path]]:
        return [e[1] for e in self.events if e[0] == "replace"]

    def fsynced_before(self, tmp: Path) -> bool:
        """The temporary file was fsynced before it was renamed."""
        i = next(i for i, e in enumerate(self.events) if e[0] == "replace" and e[1][0] == tmp)
        return ("fsync", str(tmp)) in self.events[:i]


def test_html_is_renamed_into_place_after_an_fsync(
    report: ExecutionReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    target = tmp_path / "report.html"
    page = report.to_html(target, figures=False)
    [(src, dst)] = spy.replaced()
    assert dst == target and src.parent == target.parent and src != target
    assert spy.fsynced_before(src)
    assert target.read_text(encoding="utf-8") == page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_a_failed_html_write_leaves_the_old_page(
    report: ExecutionReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.html"
    target.write_text("old page", encoding="utf-8")

    def refuse(src: Any, dst: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        report.to_html(target, figures=False)
    assert target.read_text(encoding="utf-8") == "old page"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary left


def test_parquet_tables_are_one_set_with_a_manifest_last(
    report: ExecutionReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    out = report.to_parquet(tmp_path / "tables")
    replaced = spy.replaced()
    names = [dst.name for _, dst in replaced]
    assert names[-1] == MANIFEST
    assert sorted(names[:-1]) == sorted(f"{n}.parquet" for n in report.tables)
    for src, dst in replaced:
        assert src.parent == dst.parent and src.name != dst.name
        assert spy.fsynced_before(src)
    assert set(read_manifest(out) or {}) == {f"{n}.parquet" for n in report.tables}
    back = ExecutionReport.read_parquet(out)
    pd.testing.assert_frame_equal(back["summary"], report["summary"])


def test_a_failed_table_leaves_the_previous_set(
    report: ExecutionReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the previous set: another report, so a half-overwritten set would differ from it
    earlier = execution_report(make_frames([closed_order("z", "sell", 99.0)]))
    out = earlier.to_parquet(tmp_path / "tables")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = pd.DataFrame.to_parquet
    calls = {"n": 0}

    def fail_third(self: pd.DataFrame, path: Any, *a: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        return real(self, path, *a, **kw)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", fail_third)
    with pytest.raises(OSError, match="disk full"):
        report.to_parquet(out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_figures_are_written_as_one_set(
    report: ExecutionReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    out = report.save_figures(tmp_path / "figs", dpi=40)
    names = sorted(dst.name for _, dst in spy.replaced())
    assert names == sorted([MANIFEST, *(f"{n}.png" for n in report.figures)])
    for name in report.figures:
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_html_write_never_sets_the_umask_to_zero(
    report: ExecutionReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # os.umask(0), even for an instant, makes every file another thread creates then
    # world-writable: the page's permissions come from toolkit._atomic instead
    real_umask = os.umask
    masks: list[int] = []

    def umask(mask: int) -> int:
        masks.append(mask)
        return real_umask(mask)

    monkeypatch.setattr(os, "umask", umask)
    target = tmp_path / "report.html"
    previous = real_umask(0o027)
    try:
        report.to_html(target, figures=False)
        mode = target.stat().st_mode & 0o777
    finally:
        real_umask(previous)
    assert 0 not in masks
    assert mode == 0o640  # what a plain open() gives under that umask
