"""``symbols=`` of ``read_recording`` and ``replay`` matches pairs whatever their case: the
service may send a pair in mixed case (``stETH/BRL``), which upper-casing only the pairs
asked for never matched (an empty frame, without a word)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.profile import DEFAULT_PROFILE
from toolkit.recording._files import write_rows
from toolkit.recording._read import read_recording
from toolkit.recording._replay import replay
from toolkit.recording._rows import row_from_message, session_row
from toolkit.stream._events import OrderEvent, TickerEvent

T0 = 1_795_305_600 * 10**9  # 2026-11-22T00:00:00Z
MIXED = ["stETH/BRL", "USDC.e/BRL"]


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    ms = T0 // 10**6
    prices = {"bid": "1", "ask": "2", "last": "1.5", "timestamp": ms}
    messages: list[dict[str, object]] = [
        *(
            {"channel": "watchticker", "message": {"symbol": s, **prices}}
            for s in [*MIXED, "BTC/BRL"]
        ),
        {
            "channel": "watchorders",
            "message": {"id": "o-1", "symbol": "stETH/BRL", "status": "OPEN", "updatedAt": ms},
        },
        {
            "channel": "watchtickers",
            "message": {"tickers": [{"symbol": s, **prices} for s in [*MIXED, "BTC/BRL"]]},
        },
    ]
    rows = [session_row("connected", received_at_ns=T0, connection_id="c1", seq=0)]
    rows += [
        row_from_message(m, received_at_ns=T0 + i + 1, connection_id="c1", seq=i + 1)
        for i, m in enumerate(messages)
    ]
    write_rows(tmp_path, rows, "case")
    return tmp_path


@pytest.mark.parametrize("asked", [["stETH/BRL"], ["steth/brl"], ["STETH/BRL"]])
@pytest.mark.parametrize("profile", [None, DEFAULT_PROFILE], ids=["own", "profile="])
def test_a_mixed_case_pair_is_matched_whatever_the_case_asked(
    recording: Path, asked: list[str], profile: object
) -> None:
    df = read_recording(recording, symbols=asked, profile=profile)  # type: ignore[arg-type]
    got = sorted(zip(df["channel"], df["symbol"].fillna(""), strict=True))
    # the ticker, the order, and the session row (kept: it says where data may be missing)
    assert ("watchticker", "stETH/BRL") in got and ("watchorders", "stETH/BRL") in got
    assert ("_session", "") in got
    assert all(symbol.upper() == "STETH/BRL" for _, symbol in got if symbol)


def test_per_pair_and_replay_match_mixed_case_pairs(recording: Path) -> None:
    pairs = read_recording(recording, channel="watchtickers", symbols=["usdc.E/brl"])
    assert pairs["symbol"].tolist() == ["USDC.e/BRL"]
    events = list(replay(recording, symbols=["steth/BRL"]))
    ticks = [e for e in events if isinstance(e, TickerEvent)]
    orders = [e for e in events if isinstance(e, OrderEvent)]
    assert [t.symbol for t in ticks] == ["stETH/BRL"] and len(orders) == 1


def test_upper_case_pairs_read_as_before(recording: Path) -> None:
    df = read_recording(recording, channel="watchticker", symbols=["btc/brl"])
    assert df["symbol"].tolist() == ["BTC/BRL"]
