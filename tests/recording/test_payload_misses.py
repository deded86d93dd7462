"""A recording whose ``payloads.*`` settings do not match the service: the messages that
lack a mapped field are counted per setting as segments are converted (on the Arrow
extraction, the per-row fallback and rows of typed events alike), surfaced in
``RecorderStats``, one warning per setting and ``mismatch`` rows of ``_session``; and
``read_recording(..., profile=)`` extracts the ticker and balance columns again from the
raw JSON."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolkit.profile import DEFAULT_PROFILE
from toolkit.recording import _raw, _writer
from toolkit.recording._read import read_recording
from toolkit.recording._recorder import Recorder
from toolkit.recording._rows import SESSION_CHANNEL
from toolkit.recording._writer import RecordingWriter
from toolkit.sim import Simulator
from toolkit.stream._events import event_from_message

MS = 1_763_000_000_000  # the service's stamps, in milliseconds
T0 = MS * 1_000_000 + 17  # received times (ns)

#: what the recorder was told, while the service sends the default shapes
WRONG = DEFAULT_PROFILE.replace(
    {
        "name": "wrong",
        "payloads.ticker_symbol": "mkt",
        "payloads.ticker_bid": "book.b",
        "payloads.ticker_ask": "book.a",
        "payloads.ticker_last": "trade.p",
        "payloads.ticker_time": "book.t",
        "payloads.tickers_list": "data",
        "payloads.balance_time": "updated",
    }
)
EXPECTED = {
    "payloads.ticker_symbol": 3,
    "payloads.ticker_bid": 3,
    "payloads.ticker_ask": 3,
    "payloads.ticker_last": 3,
    "payloads.ticker_time": 3,
    "payloads.tickers_list": 2,
    "payloads.balance_time": 1,
}


def _ticker(symbol: str, bid: Any, stamp: int) -> dict[str, Any]:
    return {"symbol": symbol, "bid": bid, "ask": "11", "last": "10.5", "timestamp": stamp}


def messages() -> list[dict[str, Any]]:
    """Messages of the default shapes: 3 tickers, 2 watchTickers, 1 balance, 1 order."""
    pairs = [_ticker("BTC/BRL", "10", MS), _ticker("ETH/BRL", "3", MS + 1)]
    return [
        {"channel": "watchticker", "message": _ticker("BTC/BRL", "10", MS + 1)},
        {"channel": "watchtickers", "message": {"tickers": pairs}},
        {"channel": "watchticker", "message": _ticker("BTC/BRL", "10.1", MS + 2)},
        {
            "channel": "watchbalance",
            "message": {"balances": [{"asset": "BRL", "free": "1"}], "timestamp": MS + 3},
        },
        {"channel": "watchorders", "message": {"id": "o-1", "status": "OPEN", "updatedAt": MS}},
        {"channel": "watchtickers", "message": {"tickers": pairs}},
        {"channel": "watchticker", "message": _ticker("ETH/BRL", "3.1", MS + 4)},
    ]


def _per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every conversion on the per-row Python fallback."""

    def refuse(*_: Any, **__: Any) -> Any:
        raise _raw._Fallback

    monkeypatch.setattr(_raw, "_extract", refuse)
    monkeypatch.setattr(_writer, "warm_up", lambda *_: None)


@pytest.fixture(params=["arrow", "per-row", "events"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """How the messages reach Parquet: raw texts on the Arrow extraction, raw texts on
    the per-row Python fallback, or typed events (rows given whole)."""
    if request.param == "per-row":
        _per_row(monkeypatch)
    yield request.param


def _record(root: Path, profile: Any, msgs: list[dict[str, Any]], way: str = "arrow") -> Any:
    with RecordingWriter(root, profile=profile) as writer:
        for seq, msg in enumerate(msgs, 1):
            if way == "events":
                event = event_from_message(
                    msg, received_at_ns=T0 + seq, connection_id="c1", seq=seq, profile=profile
                )
                writer.add_event(event)
            else:
                writer.add_raw(json.dumps(msg), T0 + seq, "c1", seq)
    return writer.stats


def test_misses_are_counted_per_setting_warned_once_and_recorded(
    tmp_path: Path, way: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "toolkit.recording"):
        stats = _record(tmp_path, WRONG, messages(), way)
    assert stats.misses == EXPECTED
    warnings = [r.getMessage() for r in caplog.records if r.name == "toolkit.recording"]
    assert len(warnings) == len(EXPECTED)  # one per setting
    for setting in EXPECTED:
        (said,) = [w for w in warnings if f"(profile {setting} of 'wrong')" in w]
        assert "read_recording(..., profile=)" in said
    assert "3 watchticker messages have no 'mkt' (profile payloads.ticker_symbol" in "".join(
        warnings
    )
    line = stats.line()
    assert "missing fields: payloads.balance_time 1, payloads.ticker_ask 3" in line

    session = read_recording(tmp_path, SESSION_CHANNEL)
    mismatch = session[session["kind"] == "mismatch"]
    assert len(mismatch) == len(EXPECTED)
    for setting, count in EXPECTED.items():
        (detail,) = [d for d in mismatch["detail"] if f"(profile {setting} " in d]
        assert detail.startswith(f"{count} ")
    # the columns are null, as the mapping says; the raw JSON holds the data
    ticks = read_recording(tmp_path, "watchticker")
    assert ticks["symbol"].isna().all() and ticks["bid"].isna().all()


def test_a_matching_profile_counts_nothing(tmp_path: Path, way: str) -> None:
    stats = _record(tmp_path, DEFAULT_PROFILE, messages(), way)
    assert stats.misses == {}
    assert "missing" not in stats.line()
    assert read_recording(tmp_path, SESSION_CHANNEL).empty


@pytest.mark.parametrize("path_kind", ["arrow", "per-row"])
def test_a_price_sent_as_null_is_no_miss_an_absent_one_is(
    tmp_path: Path, path_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path_kind == "per-row":
        _per_row(monkeypatch)
    no_price = {"symbol": "BTC/BRL", "bid": None, "ask": "", "last": None, "timestamp": MS}
    no_ask = {"symbol": "BTC/BRL", "bid": "1", "last": "1", "timestamp": MS}
    stats = _record(
        tmp_path,
        DEFAULT_PROFILE,
        [
            {"channel": "watchticker", "message": no_price},
            {"channel": "watchticker", "message": no_ask},
            {"channel": "watchticker", "message": {**no_ask, "ask": "2", "symbol": ""}},
        ],
    )
    assert stats.misses == {"payloads.ticker_ask": 1, "payloads.ticker_symbol": 1}


def test_a_bare_list_balance_has_no_time_to_miss_when_the_profile_says_so(
    tmp_path: Path,
) -> None:
    bare = {"channel": "watchbalance", "message": [{"asset": "BRL", "free": "1"}]}
    listed = DEFAULT_PROFILE.replace({"payloads.balance_list": ""})
    assert _record(tmp_path / "a", listed, [bare]).misses == {}
    # the default profile expects an object with its time: the bare list lacks it
    assert _record(tmp_path / "b", DEFAULT_PROFILE, [bare]).misses == {"payloads.balance_time": 1}


def test_read_under_the_right_profile_extracts_every_channel_again(tmp_path: Path) -> None:
    _record(tmp_path, WRONG, messages())
    ticks = read_recording(tmp_path, "watchticker", profile=DEFAULT_PROFILE)
    assert list(ticks["symbol"]) == ["BTC/BRL", "BTC/BRL", "ETH/BRL"]
    assert list(ticks["bid"]) == [10.0, 10.1, 3.1]
    assert list(ticks["ask"]) == [11.0] * 3 and list(ticks["last"]) == [10.5] * 3
    assert [t.value // 1_000_000 for t in ticks["updated_at"]] == [MS + 1, MS + 2, MS + 4]
    balance = read_recording(tmp_path, "watchbalance", profile=DEFAULT_PROFILE)
    assert balance["updated_at"].iloc[0].value // 1_000_000 == MS + 3
    pairs = read_recording(tmp_path, "watchtickers", profile=DEFAULT_PROFILE)
    assert list(pairs["symbol"]) == ["BTC/BRL", "ETH/BRL"] * 2
    # a symbol filter takes the symbols read again, not the null ones recorded
    eth = read_recording(tmp_path, "watchticker", symbols=["eth/brl"], profile=DEFAULT_PROFILE)
    assert list(eth["bid"]) == [3.1]
    # every message as one row: the watchTickers time too
    everything = read_recording(tmp_path, profile=DEFAULT_PROFILE)
    data = everything[everything["channel"] != SESSION_CHANNEL]
    assert data["updated_at"].notna().all()
    assert data.loc[data["channel"] == "watchticker", "symbol"].notna().all()


def test_read_under_a_profile_that_misses_too_warns_naming_the_setting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _record(tmp_path, DEFAULT_PROFILE, messages())
    with caplog.at_level(logging.WARNING, "toolkit.recording"):
        ticks = read_recording(tmp_path, "watchticker", profile=WRONG)
    assert ticks["symbol"].isna().all()
    assert "3 watchticker messages have no 'mkt' (profile payloads.ticker_symbol" in caplog.text


@pytest.fixture(scope="module")
def ticking_sim() -> Iterator[Simulator]:
    with Simulator(
        seed=3, engine=True, tick_interval_s=0.02, order_interval_s=0.5, history_orders=10
    ) as sim:
        yield sim


@pytest.mark.parametrize("converter", ["process", "thread"])
def test_a_live_recording_under_the_wrong_payloads_says_so(
    ticking_sim: Simulator, tmp_path: Path, converter: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = ticking_sim.client(profile=WRONG)
    rec = Recorder(
        client,
        tmp_path,
        channels=["watchTicker:BTC/BRL", "watchBalance"],
        flush_interval=0.1,
        converter=converter,
    )

    async def main() -> None:
        rec.start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while rec.stats.messages < 10 and loop.time() < deadline:
            await asyncio.sleep(0.05)
        await rec.stop()

    with caplog.at_level(logging.WARNING, "toolkit.recording"):
        asyncio.run(main())
    client.close()
    stats = rec.stats
    ticks = read_recording(tmp_path, "watchticker")
    assert len(ticks) > 0 and ticks["symbol"].isna().all()
    assert stats.misses["payloads.ticker_symbol"] == len(ticks)
    assert stats.misses["payloads.ticker_time"] == len(ticks)
    said = [r.getMessage() for r in caplog.records if "payloads.ticker_symbol" in r.getMessage()]
    assert len(said) == 1 and "no 'mkt'" in said[0]
    # the rows noted by the last conversions are in the recording too
    session = read_recording(tmp_path, SESSION_CHANNEL)
    details = session.loc[session["kind"] == "mismatch", "detail"]
    recorded = sum(
        int(d.split()[0].replace(",", "")) for d in details if "payloads.ticker_symbol" in d
    )
    assert recorded == len(ticks)
    # the raw JSON is whole: read under the service's mapping, every column is back
    again = read_recording(tmp_path, "watchticker", profile=DEFAULT_PROFILE)
    assert (again["symbol"] == "BTC/BRL").all() and again["bid"].notna().all()
    assert again["updated_at"].notna().all()
