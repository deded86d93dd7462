"""Exports appear whole or not at all: each file goes through a temporary name, fsync and
rename; a failure mid-set (a full disk) leaves the previous set untouched and no
temporary file behind; the manifest written last tells a complete set; an empty path is
refused before anything is written."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from toolkit import _atomic
from toolkit._atomic import MANIFEST, read_manifest
from toolkit.errors import InvalidRequest, WriteError
from toolkit.frames._frames import OrderFrames, build_frames
from toolkit.frames._schema import FRAME_NAMES

BODY = b'{"id": "o-%d", "symbol": "BTC/BRL", "status": "closed", "type": "market"}'


def _frames(n: int) -> OrderFrames:
    return build_frames([BODY % i for i in range(n)])


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_every_file_is_fsynced_before_its_rename_and_the_manifest_comes_last(
    tmp_path: Path, fmt: str, spy_durability: Any
) -> None:
    events = spy_durability(_atomic)
    getattr(_frames(2), f"to_{fmt}")(tmp_path)
    renamed = [name for kind, name in events if kind == "replace"]
    assert renamed == [f"{n}.{fmt}" for n in FRAME_NAMES] + [MANIFEST]
    member_fsyncs = [
        i
        for i, (kind, name) in enumerate(events)
        if kind == "fsync" and name.startswith(".") and not name.startswith(f".{MANIFEST}")
    ]
    first_rename = events.index(("replace", f"{FRAME_NAMES[0]}.{fmt}"))
    # every member's temporary file was fsynced before the first rename
    assert len(member_fsyncs) == len(FRAME_NAMES) and max(member_fsyncs) < first_rename
    assert read_manifest(tmp_path) is not None


@pytest.mark.parametrize(("fmt", "writer"), [("parquet", pq), ("csv", pcsv)])
def test_a_full_disk_mid_export_leaves_the_previous_set_whole(
    tmp_path: Path, fmt: str, writer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _frames(3)
    getattr(old, f"to_{fmt}")(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    name = "write_table" if fmt == "parquet" else "write_csv"
    real = getattr(writer, name)
    calls = [0]

    def failing(*args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        if calls[0] == 3:  # the third file of five
            raise OSError(errno.ENOSPC, "No space left on device")
        real(*args, **kwargs)

    monkeypatch.setattr(writer, name, failing)
    third = tmp_path / f"{FRAME_NAMES[2]}.{fmt}"
    with pytest.raises(WriteError, match=f"cannot write {third}: the disk is full"):
        getattr(_frames(7), f"to_{fmt}")(tmp_path)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before  # the old set, byte for byte; no temporary file left
    assert read_manifest(tmp_path) is not None
    if fmt == "parquet":
        assert len(OrderFrames.read_parquet(tmp_path).orders) == 3


def test_read_parquet_refuses_a_set_whose_manifest_does_not_match(tmp_path: Path) -> None:
    _frames(2).to_parquet(tmp_path)
    (tmp_path / "orders.parquet").write_bytes(b"truncated")
    with pytest.raises(ValueError, match="incomplete export"):
        OrderFrames.read_parquet(tmp_path)


@pytest.mark.parametrize("path", ["", "   "])
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_an_empty_path_is_refused_before_anything_is_written(
    tmp_path: Path, path: str, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidRequest, match="folder path"):
        getattr(_frames(1), f"to_{fmt}")(path)
    assert list(tmp_path.iterdir()) == []


def test_a_file_in_place_of_the_folder_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.write_text("x")
    with pytest.raises(InvalidRequest, match="not a folder"):
        _frames(1).to_parquet(target)


def test_files_get_the_permissions_of_a_plain_open(tmp_path: Path) -> None:
    # mkstemp makes its file 0600 and the rename keeps it; others could not read exports
    mask = os.umask(0o022)
    try:
        paths = _frames(1).to_parquet(tmp_path)
        plain = tmp_path / "plain"
        plain.write_text("x")
    finally:
        os.umask(mask)
    for path in [*paths.values(), tmp_path / MANIFEST]:
        assert path.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777 == 0o644


def test_writing_never_changes_the_process_umask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # os.umask() changes the mask for every thread for an instant; a file another thread
    # created then would be world-writable
    def forbidden(mask: int) -> int:
        raise AssertionError("os.umask called while writing")

    monkeypatch.setattr(_atomic.os, "umask", forbidden)
    _frames(1).to_parquet(tmp_path)
