"""The disk's refusals (full, quota, file too large, read-only, no permission) on any file
the toolkit writes are one ``WriteError`` naming the file meant (never its temporary
name) and what to do, whatever raised them: ``os``, a file object, pyarrow (whose
``OSError`` may carry the errno only in its text)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from toolkit._atomic import atomic_write_text, disk_errors, refusal_errno, write_error
from toolkit.errors import ToolkitError, WriteError
from toolkit.frames._frames import build_frames

BODY = b'{"id": "o-%d", "symbol": "BTC/BRL", "status": "closed", "type": "market"}'
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        (errno.ENOSPC, "the disk is full (ENOSPC): free space or choose another folder"),
        (errno.EDQUOT, "the disk quota is exhausted"),
        (errno.EFBIG, "the file is too large for this filesystem (EFBIG)"),
        (errno.EROFS, "the filesystem is read-only (EROFS): choose another folder"),
        (errno.EACCES, "no permission to write in /data/out: choose another folder"),
        (errno.EPERM, "no permission to write in /data/out"),
    ],
)
def test_each_refusal_names_the_file_and_what_to_do(code: int, hint: str) -> None:
    error = write_error(OSError(code, os.strerror(code), "/data/out/.x.tmp"), "/data/out/x")
    assert error is not None and isinstance(error, OSError) and isinstance(error, ToolkitError)
    assert str(error) == f"cannot write /data/out/x: {hint}" or hint in str(error)
    assert str(error).startswith("cannot write /data/out/x: ")
    assert (error.errno, error.filename) == (code, "/data/out/x")


def test_pyarrows_errno_in_its_text_is_read() -> None:
    # what pyarrow raises on a write that failed: an OSError whose errno may be unset
    exc = OSError("Error writing bytes to file. Detail: [errno 27] File too large")
    assert exc.errno is None and refusal_errno(exc) == errno.EFBIG
    error = write_error(exc, "/o/trades.parquet")
    assert error is not None and "EFBIG" in str(error) and "/o/trades.parquet" in str(error)


@pytest.mark.parametrize(
    "exc",
    [
        OSError(errno.ENOENT, "No such file or directory"),
        OSError("Error writing bytes to file. Detail: [errno 5] Input/output error"),
        ValueError("not a disk error"),
    ],
)
def test_other_errors_pass_as_they_are(exc: BaseException) -> None:
    assert write_error(exc, "/o/x") is None
    with pytest.raises(type(exc)) as caught, disk_errors("/o/x"):
        raise exc
    assert caught.value is exc


def test_a_translated_error_is_not_translated_again() -> None:
    with pytest.raises(WriteError) as caught, disk_errors("/outer"), disk_errors("/inner/x"):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert caught.value.filename == "/inner/x"
    assert isinstance(caught.value.__cause__, OSError)


def test_a_full_disk_in_the_file_object_names_the_file_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")

    def full(self: Path, *args: Any, **kwargs: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(WriteError, match=f"cannot write {target}: the disk is full"):
        atomic_write_text(target, "new")
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    assert target.read_text() == "old"


def test_a_file_too_large_for_the_filesystem_for_real(tmp_path: Path) -> None:
    """A real EFBIG: the file-size limit (ulimit -f) of a child process, which applies to
    root too; the export is refused naming its file, and no file is left."""
    script = textwrap.dedent(
        f"""
        import resource, signal
        from toolkit.errors import WriteError
        from toolkit.frames._frames import build_frames
        frames = build_frames([{BODY!r} % i for i in range(3000)])
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
        try:
            frames.to_parquet({str(tmp_path / "out")!r})
        except WriteError as exc:
            print(exc)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert done.stdout.startswith(f"cannot write {out}/orders.parquet: the file is too large")
    assert "(EFBIG)" in done.stdout
    assert list(out.iterdir()) == []


@pytest.mark.skipif(ROOT, reason="root writes in a read-only folder: the injected case covers it")
def test_a_read_only_folder_for_real(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o555)
    try:
        with pytest.raises(WriteError, match=f"no permission to write in {out}"):
            build_frames([BODY % 1]).to_parquet(out)
    finally:
        out.chmod(0o755)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize(
    ("code", "hint"),
    [(errno.EACCES, "no permission to write in"), (errno.EROFS, "the filesystem is read-only")],
)
def test_a_folder_that_refuses_new_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, hint: str
) -> None:
    import tempfile

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise OSError(code, os.strerror(code), str(tmp_path / ".orders.parquet.x.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    with pytest.raises(WriteError, match=f"cannot write {tmp_path}/orders.parquet: {hint}"):
        build_frames([BODY % 1]).to_parquet(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_pyarrow_failing_mid_export_names_the_member(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pq.write_table

    def write_table(table: Any, where: Any, **kwargs: Any) -> None:
        if ".trades.parquet." in str(where):
            raise OSError("Error writing bytes to file. Detail: [errno 28] No space left")
        real(table, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", write_table)
    with pytest.raises(WriteError, match=f"cannot write {tmp_path}/trades.parquet: the disk"):
        build_frames([BODY % 1]).to_parquet(tmp_path)
    assert list(tmp_path.iterdir()) == []
