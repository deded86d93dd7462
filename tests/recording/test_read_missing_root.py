"""A recording root that is empty, missing or no recording is an InvalidRequest naming it
(docs/src/guide/errors.md), never an empty result: ``read_recording``, ``replay``,
``recording_profile`` and ``execution_report(market=)`` alike. A root a recorder has only
begun (its ``_wal/``, no Parquet yet) reads as empty."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolkit as tk
from toolkit.errors import InvalidRequest
from toolkit.recording._read import read_recording, recording_profile
from toolkit.recording._replay import replay

READERS: dict[str, Callable[[Any], Any]] = {
    "read_recording": lambda root: read_recording(root),
    "read_recording(channel)": lambda root: read_recording(root, channel="watchticker"),
    "replay": lambda root: list(replay(root)),
    "recording_profile": lambda root: recording_profile(root),
    "execution_report(market=)": lambda root: tk.execution_report(tk.OrderFrames.empty(), root),
}


@pytest.mark.parametrize("reader", list(READERS.values()), ids=list(READERS))
def test_a_root_that_is_no_recording_is_refused_naming_it(
    reader: Callable[[Any], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # "" would be this folder
    (tmp_path / "channel=watchticker").mkdir()  # so "" and "." would read as a recording
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("not a recording")
    for root, named in (
        ("", "needs a folder path"),
        (tmp_path / "nonexistent" / "rec", "no recording at"),
        (empty, "is not a recording"),
    ):
        with pytest.raises(InvalidRequest) as info:
            reader(root)
        assert named in str(info.value) and str(root) in str(info.value)


def test_replay_refuses_at_once_not_when_iterated(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest):
        replay(tmp_path / "nonexistent")
    with pytest.raises(InvalidRequest, match="speed"):
        replay(tmp_path, speed=float("nan"))


def test_a_recording_only_begun_reads_as_empty(tmp_path: Path) -> None:
    (tmp_path / "_wal").mkdir()
    assert len(read_recording(tmp_path, channel="watchticker")) == 0
    assert list(replay(tmp_path)) == []


@pytest.mark.parametrize(
    "columns", ["bogus", ["nope"]], ids=["a string other than all", "an unknown name"]
)
def test_bad_columns_are_an_invalid_request(tmp_path: Path, columns: Any) -> None:
    (tmp_path / "_wal").mkdir()
    with pytest.raises(InvalidRequest):
        read_recording(tmp_path, channel="watchticker", columns=columns)


def test_a_bad_time_window_is_an_invalid_request(tmp_path: Path) -> None:
    (tmp_path / "_wal").mkdir()
    for bad in (True, "not a time"):
        with pytest.raises(InvalidRequest):
            read_recording(tmp_path, start=bad)
