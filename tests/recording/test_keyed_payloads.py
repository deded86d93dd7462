"""A recording of a service whose tickers are keyed by pair, whose balance is keyed by
asset and whose payload times are ISO-8601 text: the columns come through (on the Arrow
extraction's path and on the per-row one), no payload setting is counted as missed, and
replay gives the events the live stream gives."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _recordings import path_kind  # noqa: F401 (the fixture the tests mark)

from toolkit.profile import DEFAULT_PROFILE
from toolkit.recording._read import read_recording
from toolkit.recording._replay import replay
from toolkit.recording._writer import RecordingWriter
from toolkit.stream._events import BalanceEvent, TickersEvent

KEYED = dataclasses.replace(
    DEFAULT_PROFILE,
    name="keyed",
    payloads=dataclasses.replace(
        DEFAULT_PROFILE.payloads,
        ticker_symbol="market",
        ticker_time="at",
        tickers_list="data.*",
        balance_list="wallet.*",
        balance_asset="*",
        balance_free="available",
        balance_locked="onHold",
        balance_time="at",
    ),
)
T0 = 1_795_771_420 * 10**9
ISO = "2026-11-27T09:23:4{}.000Z"


def at(second: int) -> pd.Timestamp:
    return pd.Timestamp(f"2026-11-27T09:23:4{second}", tz="UTC")


def messages() -> list[dict[str, Any]]:
    def tick(bid: str, second: int, symbol: str | None = None) -> dict[str, Any]:
        out = {"bid": bid, "ask": "11", "last": "10.5", "at": ISO.format(second)}
        return out if symbol is None else {"market": symbol, **out}

    return [
        {"channel": "watchticker", "message": tick("10", 1, "BTC-BRL")},
        {
            "channel": "watchtickers",
            "message": {"data": {"BTC-BRL": tick("10", 2), "ETH-BRL": tick("3", 3)}},
        },
        {
            "channel": "watchbalance",
            "message": {
                "wallet": {"BRL": {"available": "1", "onHold": "0", "total": "1"}},
                "at": ISO.format(4),
            },
        },
    ]


def _record(root: Path) -> None:
    with RecordingWriter(root, profile=KEYED) as writer:
        for seq, msg in enumerate(messages(), 1):
            writer.add_raw(json.dumps(msg), T0 + seq, "c1", seq)
    assert writer.stats.misses == {}  # every mapped field was found


@pytest.mark.usefixtures("path_kind")
def test_keyed_pairs_and_iso_times_read_back(tmp_path: Path) -> None:
    _record(tmp_path)
    ticks = read_recording(tmp_path, "watchticker")
    assert list(ticks["symbol"]) == ["BTC-BRL"]
    assert ticks["updated_at"].iloc[0] == at(1)
    pairs = read_recording(tmp_path, "watchtickers")
    assert list(pairs["symbol"]) == ["BTC-BRL", "ETH-BRL"]  # the keys
    assert list(pairs["bid"]) == [10.0, 3.0]
    assert list(pairs["updated_at"]) == [at(2), at(3)]
    balance = read_recording(tmp_path, "watchbalance")
    assert balance["updated_at"].iloc[0] == at(4)


def test_replay_gives_keyed_events(tmp_path: Path) -> None:
    _record(tmp_path)
    events = list(replay(tmp_path))
    tickers = next(e for e in events if isinstance(e, TickersEvent))
    assert [t.symbol for t in tickers.tickers] == ["BTC-BRL", "ETH-BRL"]
    balance = next(e for e in events if isinstance(e, BalanceEvent))
    assert balance.balances[0]["asset"] == "BRL"
    assert balance.timestamp == int(at(4).timestamp() * 1000)
