"""A damaged or foreign file in a recording (zero bytes, half a copied part file, another
dataset's Parquet file, a file that is no Parquet at all, each named ``part-*.parquet``):
every reader of recordings refuses it with an InvalidRequest naming the file and what is
wrong, and ``on_bad_file="skip"`` reads the rest, warns once and counts what it left out."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _bad_files import DAMAGES, SAYS, folder_of, write_recording, zero_bytes

import toolkit as tk
from toolkit.errors import InvalidRequest
from toolkit.recording._badfiles import file_problem
from toolkit.recording._read import order_ids_in_recording, read_recording
from toolkit.sim import Simulator
from toolkit.store import OrderStore


def _replay_all(root: Path, **kw: Any) -> list[Any]:
    return list(tk.replay(root, **kw))


#: each reader: (the channel its bad file goes in, the call)
READERS: dict[str, tuple[str, Callable[..., Any]]] = {
    "read_recording": ("watchticker", lambda root, **kw: read_recording(root, **kw)),
    "read_recording channel": (
        "watchorders",
        lambda root, **kw: read_recording(root, "watchorders", **kw),
    ),
    "replay": ("watchorders", _replay_all),
    "replay channels": (
        "watchticker",
        lambda root, **kw: _replay_all(root, channels="watchticker", **kw),
    ),
    "execution_report(market=)": (
        "watchticker",
        lambda root: tk.execution_report(tk.OrderFrames.empty(), root),
    ),
    "order_ids_in_recording": ("watchorders", order_ids_in_recording),
}


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clean") / "rec"
    write_recording(root)
    return root


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("reader", list(READERS))
def test_a_bad_file_is_an_invalid_request_naming_it(
    clean: Path, tmp_path: Path, reader: str, damage: str
) -> None:
    root = tmp_path / "rec"
    shutil.copytree(clean, root)
    channel, read = READERS[reader]
    bad = DAMAGES[damage](root, channel)
    with pytest.raises(InvalidRequest) as info:
        read(root)
    text = str(info.value)
    assert str(bad) in text and SAYS[damage] in text, text
    assert "move it out of" in text and "on_bad_file='skip'" in text
    assert "\n" not in text


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_skip_reads_the_rest_warns_once_and_counts(
    clean: Path, tmp_path: Path, damage: str
) -> None:
    root = tmp_path / "rec"
    shutil.copytree(clean, root)
    bad = [DAMAGES[damage](root, "watchticker"), DAMAGES[damage](root, "watchorders")]
    want = read_recording(clean)
    with pytest.warns(RuntimeWarning) as caught:
        got = read_recording(root, on_bad_file="skip")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "2 damaged or foreign file(s) skipped" in message and str(min(bad)) in message
    assert caught[0].filename == __file__  # the caller's line, not the library's
    assert got.drop(columns=[]).equals(want)
    assert [s["path"] for s in got.attrs["skipped_files"]] == sorted(map(str, bad))
    assert all(SAYS[damage] in s["problem"] for s in got.attrs["skipped_files"])

    with pytest.warns(RuntimeWarning, match="1 damaged or foreign file") as caught:
        replay = tk.replay(root, channels="watchorders", on_bad_file="skip")
        events = list(replay)
    assert len(caught) == 1 and caught[0].filename == __file__
    assert len(events) == len(list(tk.replay(clean, channels="watchorders")))
    assert [b.path for b in replay.skipped_files] == [str(bad[1])]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a read that takes no bad file warns of nothing
        clean_read = read_recording(clean, on_bad_file="skip")
    assert clean_read.attrs["skipped_files"] == []


def test_only_the_files_a_read_takes_are_checked(clean: Path, tmp_path: Path) -> None:
    root = tmp_path / "rec"
    shutil.copytree(clean, root)
    zero_bytes(root, "watchticker")
    # the orders alone read as before: the bad ticker file is not theirs
    assert order_ids_in_recording(root) == [f"o-{i}" for i in range(6)]
    assert len(read_recording(root, "watchorders")) == 6
    with pytest.raises(InvalidRequest, match="part-0-empty"):
        read_recording(root)
    # nor a day the window leaves out
    assert read_recording(root, "watchticker", end="2026-11-21").empty


def test_bad_arguments_and_a_clean_recording(clean: Path) -> None:
    with pytest.raises(InvalidRequest, match="on_bad_file"):
        read_recording(clean, on_bad_file="ignore")
    with pytest.raises(InvalidRequest, match="on_bad_file"):
        tk.replay(clean, on_bad_file=True)
    assert all(file_problem(str(p)) is None for p in clean.rglob("part-*.parquet"))


def test_a_file_whose_data_does_not_read_is_named(clean: Path, tmp_path: Path) -> None:
    """A whole footer over damaged pages: the scan fails, and the file is found."""
    root = tmp_path / "rec"
    shutil.copytree(clean, root)
    folder = folder_of(root, "watchorders")
    real = sorted(folder.glob("part-*.parquet"))[0]
    data = bytearray(real.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little") + 8
    for i in range(4, len(data) - footer):  # every byte of the pages, not the footer
        data[i] = 0xFF
    bad = folder / "part-0-pages.parquet"
    bad.write_bytes(bytes(data))
    assert file_problem(str(bad)) is None  # its footer reads
    with pytest.raises(InvalidRequest) as info:
        read_recording(root, "watchorders")
    assert str(bad) in str(info.value) and "its data does not read" in str(info.value)
    with pytest.warns(RuntimeWarning, match="1 damaged"):
        got = read_recording(root, "watchorders", on_bad_file="skip")
    assert len(got) == 6 and got.attrs["skipped_files"][0]["path"] == str(bad)


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_store_sync_from_a_recording_with_a_bad_file_names_it_before_any_fetch(
    sim: Simulator, clean: Path, tmp_path: Path, damage: str
) -> None:
    root = tmp_path / "rec"
    shutil.copytree(clean, root)
    bad = DAMAGES[damage](root, "watchorders")
    fetched: list[str] = []

    async def hook(request: Any) -> None:
        if request.url.path == sim.profile.rest.fetch_order_path:
            fetched.append(str(request.url))

    with (
        sim.client(event_hooks={"request": [hook]}) as client,
        pytest.raises(InvalidRequest) as info,
    ):
        OrderStore(tmp_path / "store").sync(client, recordings=[root], listing=False)
    assert str(bad) in str(info.value) and SAYS[damage] in str(info.value)
    assert fetched == []
