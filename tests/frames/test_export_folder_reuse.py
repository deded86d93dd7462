"""An export folder that was reused or interrupted is never read back as one complete export:
``OrderFrames.read_parquet`` and ``toolkit report`` need a manifest that lists the files they
read; the old manifest's removal is durable before the first member is replaced."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest
from _synthetic import closed_order

from toolkit import _atomic
from toolkit._atomic import MANIFEST
from toolkit.cli import main
from toolkit.errors import InvalidRequest
from toolkit.frames._frames import OrderFrames, build_frames
from toolkit.frames._schema import FRAME_NAMES


def _frames(symbol: str, *ids: int) -> OrderFrames:
    orders = []
    for i in ids:
        order: dict[str, Any] = closed_order(random.Random(i), i, trades=2, quotes=2)
        orders.append({**order, "symbol": symbol})
    return build_frames(orders)


def _interrupt_after_first_rename(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C right after the first member of the set is renamed into place."""
    real, renamed = os.replace, []

    def replace(src: Any, dst: Any) -> None:
        if renamed:
            raise KeyboardInterrupt
        real(src, dst)
        renamed.append(dst)

    monkeypatch.setattr(os, "replace", replace)


def _report(folder: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["report", "--orders", str(folder), "--out", str(out)])
    return code, capsys.readouterr().err


def test_an_export_interrupted_over_an_earlier_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _frames("OLD/BRL", 1, 2).to_parquet(tmp_path)
    with monkeypatch.context() as patch:
        _interrupt_after_first_rename(patch)
        with pytest.raises(KeyboardInterrupt):
            _frames("NEW/BRL", 3).to_parquet(tmp_path)
    # new orders beside old fills: all five files there, no manifest
    assert {f"{n}.parquet" for n in FRAME_NAMES} <= {p.name for p in tmp_path.iterdir()}
    with pytest.raises(InvalidRequest, match=f"has no {MANIFEST}.*export again"):
        OrderFrames.read_parquet(tmp_path)
    code, err = _report(tmp_path, tmp_path / "r.html", capsys)
    assert code == 1 and f"has no {MANIFEST}" in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


def test_a_csv_export_over_a_parquet_one_leaves_no_parquet_export_to_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _frames("OLD/BRL", 1, 2).to_parquet(tmp_path)
    _frames("NEW/BRL", 3).to_csv(tmp_path)
    for require_manifest in (True, False):  # a manifest present is always checked
        with pytest.raises(InvalidRequest, match="left from an earlier one") as info:
            OrderFrames.read_parquet(tmp_path, require_manifest=require_manifest)
        assert "orders.csv" in str(info.value) and "orders.parquet" in str(info.value)
    code, err = _report(tmp_path, tmp_path / "r.html", capsys)
    assert code == 1 and "left from an earlier one" in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


def test_a_folder_without_a_manifest_is_read_only_when_asked(tmp_path: Path) -> None:
    _frames("OLD/BRL", 1, 2).to_parquet(tmp_path)
    (tmp_path / MANIFEST).unlink()  # another tool's copy, or an older toolkit's export
    with pytest.raises(InvalidRequest, match="require_manifest=False"):
        OrderFrames.read_parquet(tmp_path)
    back = OrderFrames.read_parquet(tmp_path, require_manifest=False)
    assert back.orders["symbol"].tolist() == ["OLD/BRL", "OLD/BRL"]


def test_a_complete_export_over_another_reads_back_as_the_new_one(tmp_path: Path) -> None:
    _frames("OLD/BRL", 1, 2).to_parquet(tmp_path)
    _frames("NEW/BRL", 3).to_csv(tmp_path)
    _frames("NEW/BRL", 3).to_parquet(tmp_path)
    back = OrderFrames.read_parquet(tmp_path)
    assert back.orders["symbol"].tolist() == ["NEW/BRL"]
    assert set(back.fills["symbol"]) == {"NEW/BRL"}


def test_the_old_manifest_is_gone_for_good_before_a_member_is_replaced(
    tmp_path: Path, spy_durability: Any
) -> None:
    _frames("OLD/BRL", 1).to_parquet(tmp_path)
    events = spy_durability(_atomic)
    _frames("NEW/BRL", 2).to_parquet(tmp_path)
    folder = ("fsync", tmp_path.name)
    replaced = [i for i, (kind, _) in enumerate(events) if kind == "replace"]
    first, last_member, manifest = replaced[0], replaced[-2], replaced[-1]
    assert events[manifest] == ("replace", MANIFEST)
    # the removal of the old manifest is fsynced before the first member is renamed ...
    assert folder in events[:first]
    # ... and the members' renames before the manifest that vouches for them
    assert folder in events[last_member:manifest]
