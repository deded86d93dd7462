"""Tests of ``toolkit record`` as a user runs it: a subprocess recording from the simulator,
stopped by --duration, by SIGTERM, or killed with SIGKILL and recovered on the next start."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _tick_recording import T0, write_tick_files

from toolkit.cli import build_parser
from toolkit.profile import DEFAULT_PROFILE
from toolkit.recording._read import read_recording
from toolkit.recording._writer import RecordingWriter
from toolkit.sim import Simulator
from toolkit.store import OrderStore


@pytest.fixture(scope="module")
def busy_sim() -> Iterator[Simulator]:
    with Simulator(
        seed=9, engine=True, tick_interval_s=0.01, order_interval_s=0.2, history_orders=30
    ) as s:
        yield s


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLKIT_")}
    env["TOOLKIT_API_SECRET"] = "demo-secret"
    return env


def _record(sim: Simulator, out: Path, *extra: str) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-m",
        "toolkit.cli",
        "record",
        "--out",
        str(out),
        "--base-url",
        sim.base_url,
        "--api-key",
        "demo",
        *extra,
    ]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    )


def test_help_lists_the_options() -> None:
    parser = build_parser()
    args = parser.parse_args(["record", "--out", "x", "--channel", "watchOrders"])
    assert args.channels == ["watchOrders"] and args.flush_interval == 1.0


@pytest.mark.parametrize("flag", ["--flush-interval", "--rotate-interval", "--duration"])
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_bad_seconds_are_refused_when_the_arguments_are_read(
    flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["record", "--out", str(tmp_path / "r"), flag, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: expected seconds (a finite number > 0), got '{value}'" in err
    assert "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_record_for_a_duration(busy_sim: Simulator, tmp_path: Path) -> None:
    proc = _record(
        busy_sim,
        tmp_path,
        "--channel",
        "watchOrders",
        "--channel",
        "watchTicker:BTC/BRL",
        "--duration",
        "1.5",
        "--flush-interval",
        "0.2",
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"into {tmp_path}" in out
    status = [line for line in err.splitlines() if line.startswith("messages")]
    assert status and "saved" in status[-1] and "gaps 0" in status[-1]
    assert "demo-secret" not in out + err
    df = read_recording(tmp_path)
    assert {"_session", "watchticker"} <= set(df["channel"])
    assert int(out.split()[1].replace(",", "")) == (df["channel"] != "_session").sum()


def test_no_compact_leaves_the_closed_days_as_they_are(busy_sim: Simulator, tmp_path: Path) -> None:
    # a previous run's 60 s files of a day long over
    write_tick_files(tmp_path, T0, 10, 5, 12 * 10**9)
    days = sorted(tmp_path.glob("channel=watchticker/date=2026-11-22/*.parquet"))
    proc = _record(
        busy_sim, tmp_path, "--channel", "watchOrders", "--duration", "1", "--no-compact"
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "compacted" not in out
    assert sorted(tmp_path.glob("channel=watchticker/date=2026-11-22/*.parquet")) == days
    assert build_parser().parse_args(["record", "--out", "x"]).no_compact is False


def test_record_says_when_every_channel_is_subscribed(
    fresh_sim: Simulator, service_profile_file: Path, tmp_path: Path
) -> None:
    """The line comes once the service confirmed every channel (the converter process
    starts beside the recording, not before it): an order placed after it is recorded."""
    proc = _record(
        fresh_sim,
        tmp_path,
        "--channel",
        "watchOrders",
        "--flush-interval",
        "0.1",
        "--profile",
        str(service_profile_file),
        "--duration",
        "60",  # a bound: it is stopped long before
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("subscribed to"):
            break
    assert line.strip() == f"subscribed to watchOrders; recording into {tmp_path}"
    order = fresh_sim.control.market_order(symbol="BTC/BRL", side="buy", amount="0.001")
    for line in proc.stderr:  # until its three notifications (no engine: only they come)
        if line.startswith("messages") and int(line.split()[1].replace(",", "")) >= 3:
            break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err  # stopped by SIGTERM, everything received written
    assert order["id"] in set(read_recording(tmp_path, "watchorders")["order_id"])


def test_record_under_payloads_that_do_not_match_says_so(
    busy_sim: Simulator, tmp_path: Path
) -> None:
    wrong = DEFAULT_PROFILE.replace(
        {"name": "wrong", "payloads.ticker_symbol": "mkt", "payloads.ticker_bid": "px.b"}
    ).dump(tmp_path / "wrong.toml")
    root = tmp_path / "rec"
    proc = _record(
        busy_sim,
        root,
        "--channel",
        "watchTicker:BTC/BRL",
        "--duration",
        "1.5",
        "--profile",
        str(wrong),
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    ticks = read_recording(root, "watchticker")
    n = len(ticks)
    assert n > 0 and ticks["symbol"].isna().all()
    # the summary, the last status line and one warning per setting name the settings
    assert f"missing fields: payloads.ticker_bid {n:,}, payloads.ticker_symbol {n:,})" in out
    status = [line for line in err.splitlines() if line.startswith("messages")]
    assert "missing fields: payloads.ticker_bid" in status[-1]
    warned = [line for line in err.splitlines() if "(profile payloads.ticker_symbol" in line]
    assert len(warned) == 1 and "have no 'mkt'" in warned[0]
    assert "read_recording(..., profile=)" in warned[0]
    session = read_recording(root, "_session")
    details = " ".join(session.loc[session["kind"] == "mismatch", "detail"])
    for setting in ("payloads.ticker_symbol", "payloads.ticker_bid"):
        assert f"(profile {setting} of 'wrong')" in details


def test_record_feeds_an_order_store(busy_sim: Simulator, tmp_path: Path) -> None:
    store_root = tmp_path / "store"
    proc = _record(
        busy_sim,
        tmp_path / "rec",
        "--channel",
        "watchOrders",
        "--duration",
        "1.5",
        "--store",
        str(store_root),
        "--quiet",
    )
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    recorded = set(read_recording(tmp_path / "rec", "watchorders")["order_id"])
    assert recorded
    store = OrderStore(store_root)
    with busy_sim.client() as client:
        result = store.sync(client, listing=False)  # no --from-recording: followed
    orders = store.frames().orders.set_index("id")
    assert recorded <= set(orders.index)
    assert set(orders.loc[sorted(recorded), "_source"]) == {"recording"}
    assert result.recorded_ids == len(recorded)


@pytest.mark.parametrize(
    ("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"]
)
def test_a_stop_signal_stops_cleanly_with_everything_written(
    busy_sim: Simulator, tmp_path: Path, sig: signal.Signals, status: int
) -> None:
    proc = _record(busy_sim, tmp_path, "--channel", "watchTickers", "--flush-interval", "0.1")
    assert proc.stderr is not None
    for line in proc.stderr:  # wait until something is saved
        if line.startswith("messages") and " saved 0 " not in line:
            break
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == status, err
    # besides the live status lines, one line: the signal and that everything is written
    said = [line for line in err.splitlines() if not line.startswith("messages")]
    assert said == [
        f"toolkit record: interrupted by {sig.name}; the recorder stopped with every message "
        f"received written ({out.split()[1]} messages)"
    ], err
    assert "Task was destroyed" not in err and "Traceback" not in err
    assert list((tmp_path / "_wal").glob("*.wal")) == []
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    n = int(out.split()[1].replace(",", ""))
    # watchTickers reads back one row per pair; every message is one (connection, seq)
    rows = read_recording(tmp_path, "watchtickers")
    assert n > 0 and len(rows[["connection_id", "seq"]].drop_duplicates()) == n


def test_sigkill_loses_at_most_the_last_flush_and_is_recovered(
    busy_sim: Simulator, tmp_path: Path
) -> None:
    rng = random.Random(7)
    for trial in range(3):
        root = tmp_path / f"run{trial}"
        proc = _record(busy_sim, root, "--channel", "watchTickers", "--flush-interval", "0.1")
        assert proc.stderr is not None
        saved = 0
        wanted = rng.randint(2, 5)
        updates = 0
        for line in proc.stderr:
            if line.startswith("messages"):
                saved = int(line.split("saved ")[1].split()[0].replace(",", ""))
                updates += 1
                if updates >= wanted:
                    break
        time.sleep(rng.uniform(0, 0.1))  # a random moment within the next flush interval
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        for path in root.rglob("*.parquet"):
            pq.read_table(path)  # every file on disk is complete
        assert any((root / "_wal").glob("*.wal")), "the dead recorder left its log"
        with RecordingWriter(root) as writer:
            assert writer.stats.recovered >= 1
        df = read_recording(root)
        assert len(df) >= saved > 0


def test_bad_channel_and_busy_root_fail_with_a_message(busy_sim: Simulator, tmp_path: Path) -> None:
    proc = _record(busy_sim, tmp_path, "--channel", "watchTicker:BTC-BRL", "--duration", "1")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and "invalid symbol" in err
    with RecordingWriter(tmp_path):
        proc = _record(busy_sim, tmp_path, "--channel", "watchOrders", "--duration", "1")
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and "another recorder" in err
