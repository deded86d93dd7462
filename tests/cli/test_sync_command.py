"""Tests of ``toolkit sync``: the store filled from the listing, a recording and an ids file,
a summary that says where the orders came from and what is partial, and clean errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from _recordings import write_order_recording

from toolkit.cli import main
from toolkit.cli._errors import ERROR_STATUS
from toolkit.sim import Simulator
from toolkit.store import OrderStore
from toolkit.store._files import StoreFiles


@pytest.fixture
def env(
    fresh_sim: Simulator, service_profile_file: Path, monkeypatch: pytest.MonkeyPatch
) -> Simulator:
    for name in ("TOOLKIT_ENV", "TOOLKIT_WS_URL", "TOOLKIT_PROFILE_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLKIT_PROFILE", str(service_profile_file))
    monkeypatch.setenv("TOOLKIT_BASE_URL", fresh_sim.base_url)
    monkeypatch.setenv("TOOLKIT_API_KEY", "demo")
    monkeypatch.setenv("TOOLKIT_API_SECRET", "demo-secret")
    return fresh_sim


def record_orders(sim: Simulator, root: Path, ids: list[str]) -> None:
    """A recording whose watchOrders messages name ``ids`` (as a Recorder writes it)."""
    write_order_recording(root, ids, sim.profile)


def test_sync_from_listing_recording_and_ids(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    market = sorted(env.control.order_ids(type="market"))
    recorded, given = market[:5], market[5:8]
    rec = tmp_path / "rec"
    record_orders(env, rec, recorded)
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("# mine\n" + "\n".join(given) + "\n")
    store = tmp_path / "store"

    code = main(
        ["sync", "--store", str(store), "--from-recording", str(rec), "--ids", str(ids_file)]
    )
    out = capsys.readouterr().out
    assert code == 0
    limit = set(env.control.order_ids(type="limit"))
    assert f"{len(limit)} from listing" in out and "5 from recording" in out
    assert "3 from ids" in out
    # honest coverage: market orders only from recordings, said with the date
    assert "5 market orders known from recordings since" in out
    assert "(3 more added by order id)" in out  # not "none of the others is here"
    assert "not listed by the service" in out and "are not in this store" not in out
    assert "every order" not in out
    frames = OrderStore(store).frames()
    sources = frames.orders.set_index("id")["_source"]
    assert set(sources[recorded]) == {"recording"} and set(sources[given]) == {"ids"}

    code = main(["sync", "--store", str(store), "--from-recording", str(rec)])
    out = capsys.readouterr().out
    assert code == 0 and "(0 new;" in out and "answered 429" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ids", "nope.txt"], "--ids: no file"),
        (["--from-recording", "no-such-recording"], "--from-recording: no recording at"),
        (["--from-recording", "."], "is not a recording: it has no channel=*/ folders"),
    ],
)
def test_user_mistakes_are_one_line_errors(
    env: Simulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    code = main(["sync", "--store", str(tmp_path / "store"), *args])
    captured = capsys.readouterr()
    assert code == ERROR_STATUS and message in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert "Traceback" not in captured.err + captured.out


@pytest.mark.parametrize(
    "args",
    [
        ["--concurrency", "0"],
        ["--store", ""],
        ["--overlap", "nan"],
        ["--overlap", "inf"],
        ["--overlap", "-1"],
    ],
)
def test_bad_flags_are_refused_by_the_parser(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["sync", "--store", str(tmp_path / "store"), *args])
    assert info.value.code == 2 and "Traceback" not in capsys.readouterr().err
    assert not (tmp_path / "store").exists()  # refused before the store is made


def test_a_second_writer_is_told_clearly(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    with StoreFiles(store).lock():
        code = main(["sync", "--store", str(store)])
    err = capsys.readouterr().err
    assert code == ERROR_STATUS and "being written by another sync" in err
    assert "Traceback" not in err


def test_store_that_is_a_file_is_refused(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    assert main(["sync", "--store", str(path)]) == ERROR_STATUS
    assert "is a file, not a folder" in capsys.readouterr().err


def test_a_store_of_another_account_is_one_line_and_nothing_is_fetched(
    env: Simulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = tmp_path / "store"
    assert main(["sync", "--store", str(store), "--no-listing"]) == 0
    before = (store / "_store.json").read_text()
    capsys.readouterr()
    monkeypatch.setenv("TOOLKIT_API_KEY", "other")
    monkeypatch.setenv("TOOLKIT_API_SECRET", "other-secret")
    assert main(["sync", "--store", str(store)]) == ERROR_STATUS
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"holds the orders of {env.base_url}" in err and "--store" in err
    assert "secret" not in err
    assert (store / "_store.json").read_text() == before


def test_a_damaged_part_file_is_one_line_and_kept(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    assert main(["sync", "--store", str(store)]) == 0
    part = sorted(store.glob("month=*/part-*.parquet"))[-1]
    part.write_bytes(part.read_bytes()[:100])  # a copy cut short
    capsys.readouterr()
    assert main(["sync", "--store", str(store)]) == ERROR_STATUS
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert str(part) in err and "not a readable part of this store" in err
    assert part.exists()


def test_a_profile_with_the_wrong_timestamp_unit_is_one_line(
    env: Simulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # wrong for what the service sends (the client's profile may say "auto")
    wrong = "ms" if env.served.orders.timestamp_unit == "s" else "s"
    profile = env.profile.replace({"orders.timestamp_unit": wrong})
    monkeypatch.setenv("TOOLKIT_PROFILE", str(profile.dump(tmp_path / "wrong.toml")))
    code = main(["sync", "--store", str(tmp_path / "store")])
    err = capsys.readouterr().err
    assert code == ERROR_STATUS and len(err.strip().splitlines()) == 1
    assert "createdAt" in err and f"orders.timestamp_unit in the profile (now {wrong!r}" in err
    assert "Traceback" not in err and not list((tmp_path / "store").glob("month=*/*.parquet"))


def test_an_ids_file_is_read_as_utf8_and_a_bad_line_is_named(
    env: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    market = sorted(env.control.order_ids(type="market"))[:2]
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"\xef\xbb\xbf" + "\n".join(market).encode())  # saved with a BOM
    store = str(tmp_path / "store")
    assert main(["sync", "--store", store, "--no-listing", "--ids", str(ids)]) == 0
    assert "2 from ids" in capsys.readouterr().out
    for content, message in (
        (f"# mine\n{market[0]}\n\nbad/id\n".encode(), f"--ids {ids}:4: order id must not"),
        (b"m-\xff\n", f"--ids {ids}: not UTF-8 text (byte 2)"),
    ):
        ids.write_bytes(content)
        code = main(["sync", "--store", str(tmp_path / "new"), "--ids", str(ids)])
        err = capsys.readouterr().err
        assert code == ERROR_STATUS and message in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "new").exists()
