"""The parts' temporary folders (toolkit/report/_scratch.py): held by a lock while their
report lives, swept by the next report once the process that held one is gone, however it
ended (SIGKILL here: no handler, no ``finally`` runs)."""

from __future__ import annotations

import fcntl
import gc
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _parts_cases import CASES, export

from toolkit.report import _scratch, execution_report
from toolkit.report._parts import order_parts, parts_from_frames
from toolkit.report._scratch import LOCK, PREFIX, make, remove, sweep

ROOT = Path(__file__).resolve().parents[2]


def _killed_report_folder(base: Path) -> Path:
    """A parts folder made by a process that is then killed with SIGKILL."""
    code = textwrap.dedent(
        f"""
        import sys
        from toolkit.report._scratch import make
        path, owner = make({str(base)!r})
        print(path, flush=True)
        sys.stdin.read()  # until killed
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        path = Path(child.stdout.readline().strip())
        assert (path / LOCK).exists()
        assert sweep(base) == []  # its process is alive: kept
        assert path.is_dir()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    (path / "per_order_0.parquet").write_bytes(b"x" * 1000)  # what it had written
    return path


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_a_killed_reports_folder_goes_and_a_running_ones_stays(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    alive, owner = make(tmp_path / "elsewhere")  # another place: untouched by this sweep
    mine, my_owner = make(tmp_path)
    dead = _killed_report_folder(tmp_path)
    being_made = tmp_path / f"{PREFIX}new"  # no lock file yet (or an older toolkit's)
    being_made.mkdir()
    other = tmp_path / "not-ours"
    other.mkdir()
    (other / LOCK).touch()
    try:
        assert sweep(tmp_path) == [dead]
        assert not dead.exists()
        assert mine.is_dir() and being_made.is_dir() and other.is_dir() and alive.is_dir()
        assert sorted(p.name for p in mine.iterdir()) == [LOCK]
        assert sweep(tmp_path) == []
    finally:
        remove(mine, my_owner)
        remove(alive, owner)
    assert not mine.exists() and my_owner.fd is None
    # released: the next sweep finds nothing of it
    assert sweep(tmp_path) == []


def test_the_next_report_sweeps_and_its_own_folder_is_held_until_closed(
    tmp_path: Path,
) -> None:
    dead = _killed_report_folder(tmp_path)
    parts = parts_from_frames(CASES[0].frames(), folder=tmp_path)
    try:
        assert not dead.exists()  # swept as the report started
        assert parts.folder is not None and parts.folder.parent == tmp_path
        assert parts.owner is not None and parts.owner.fd is not None
        fd = parts.owner.fd
        assert sweep(tmp_path) == []  # held: a second report beside it keeps it
        assert repr(parts.owner) == "Owner(held)"
    finally:
        parts.close()
    assert list(tmp_path.iterdir()) == [] and not _open(fd)
    parts.close()  # again: nothing


def test_a_report_dropped_without_close_lets_go_of_its_folder(tmp_path: Path) -> None:
    folder = export(CASES[0].frames(), tmp_path / "export")
    parts_base = tmp_path / "parts"
    parts_base.mkdir()
    report = execution_report(order_parts(folder, chunk_orders=2, folder=parts_base))
    parts = report._parts
    assert parts is not None and parts.owner is not None
    fd = parts.owner.fd
    assert fd is not None and _open(fd) and len(list(parts_base.iterdir())) == 1
    del report, parts
    gc.collect()
    assert list(parts_base.iterdir()) == [] and not _open(fd)


def test_the_lock_file_gets_its_name_only_once_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    rename = os.rename

    def spy(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        # at the rename, another open file of it cannot take the lock
        fd = os.open(src, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            seen.append(True)
        else:
            seen.append(False)
        finally:
            os.close(fd)
        assert Path(dst).name == LOCK and not Path(dst).exists()
        rename(src, dst)

    monkeypatch.setattr(_scratch.os, "rename", spy)
    path, owner = make(tmp_path)
    try:
        assert seen == [True]
        assert sorted(p.name for p in path.iterdir()) == [LOCK]
    finally:
        remove(path, owner)


def test_a_lock_that_fails_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(fd: int, how: int) -> None:
        raise OSError("no locks on this file system")

    monkeypatch.setattr(_scratch.fcntl, "flock", refuse)
    with pytest.raises(OSError, match="no locks"):
        make(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_base_sweeps_nothing(tmp_path: Path) -> None:
    assert sweep(tmp_path / "absent") == []
