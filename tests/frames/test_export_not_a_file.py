"""An export whose folder holds a folder (or anything but a file) where one of the set's
files goes is refused before anything is written, naming that path; and a folder that
appears there while the set is written still leaves no half set."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from toolkit._atomic import MANIFEST, read_manifest
from toolkit.errors import InvalidRequest
from toolkit.frames._frames import OrderFrames, build_frames

BODY = b'{"id": "o-%d", "symbol": "BTC/BRL", "status": "closed", "type": "market"}'


def _frames(n: int) -> OrderFrames:
    return build_frames([BODY % i for i in range(n)])


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {p.name: p.read_bytes() if p.is_file() else None for p in folder.iterdir()}


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("member", ["trades", "fills", "_manifest"])
def test_a_folder_where_a_file_goes_is_refused_before_anything_is_written(
    tmp_path: Path, fmt: str, member: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    getattr(_frames(2), f"to_{fmt}")(tmp_path)
    name = MANIFEST if member == "_manifest" else f"{member}.{fmt}"
    (tmp_path / name).unlink()
    (tmp_path / name).mkdir()
    before = _snapshot(tmp_path)
    written: list[str] = []
    real = pq.write_table
    monkeypatch.setattr(
        pq, "write_table", lambda t, w, **k: (written.append(str(w)), real(t, w, **k))
    )
    with pytest.raises(InvalidRequest, match=f"cannot write {tmp_path / name}: it is a folder"):
        getattr(_frames(5), f"to_{fmt}")(tmp_path)
    assert written == []  # refused before the first file
    assert _snapshot(tmp_path) == before


def test_a_fifo_where_a_file_goes_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "orders.parquet")
    with pytest.raises(InvalidRequest, match=r"orders\.parquet: it is not a regular file"):
        _frames(1).to_parquet(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["orders.parquet"]


def test_a_link_to_a_file_is_replaced_as_before(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.parquet"
    elsewhere.write_bytes(b"kept")
    out = tmp_path / "out"
    out.mkdir()
    (out / "trades.parquet").symlink_to(elsewhere)
    _frames(1).to_parquet(out)
    assert elsewhere.read_bytes() == b"kept" and read_manifest(out) is not None


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_a_folder_that_appears_while_the_set_is_written_leaves_the_old_set_whole(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    getattr(_frames(2), f"to_{fmt}")(tmp_path)
    before = _snapshot(tmp_path)
    import toolkit.frames._frames as module

    real = module._to_arrow
    calls = [0]

    def to_arrow(df: Any) -> Any:
        calls[0] += 1
        if calls[0] == 5:  # while the last member is prepared: trades was checked already
            (tmp_path / f"trades.{fmt}").unlink()
            (tmp_path / f"trades.{fmt}").mkdir()
        return real(df)

    monkeypatch.setattr(module, "_to_arrow", to_arrow)
    with pytest.raises(InvalidRequest, match=f"trades.{fmt}: it is a folder"):
        getattr(_frames(5), f"to_{fmt}")(tmp_path)
    after = _snapshot(tmp_path)
    # every other file is the old one, the manifest included: nothing was renamed
    assert after == {**before, f"trades.{fmt}": None}


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("fails", ["third rename", "manifest"])
def test_a_commit_failing_part_way_puts_the_old_set_back(
    tmp_path: Path, fmt: str, fails: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from toolkit import _atomic

    getattr(_frames(2), f"to_{fmt}")(tmp_path)
    before = _snapshot(tmp_path)
    real_replace, real_write = os.replace, _atomic.atomic_write_text
    renames = [0]

    def replace(src: Any, dst: Any) -> None:
        renames[0] += 1
        if fails == "third rename" and renames[0] == 3:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst)

    def write_manifest(path: Any, text: str) -> Path:
        if fails == "manifest":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(path, text)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(_atomic, "atomic_write_text", write_manifest)
    with pytest.raises(OSError):
        getattr(_frames(5), f"to_{fmt}")(tmp_path)
    monkeypatch.undo()
    assert _snapshot(tmp_path) == before  # the old set, byte for byte, nothing beside it
    assert read_manifest(tmp_path) is not None
    if fmt == "parquet":
        assert len(OrderFrames.read_parquet(tmp_path).orders) == 2
