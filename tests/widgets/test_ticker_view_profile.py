"""TickerView under another profile: it consumes typed events only, so events built under
profiles/alt.toml (live or replayed from a recording made under it) show the same."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from toolkit.profile import load_profile
from toolkit.recording._writer import RecordingWriter
from toolkit.stream._events import event_from_message
from toolkit.widgets import TickerView

ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")
SEC = 1_763_000_000


def alt_tick(symbol: str, last: str, ts: int) -> dict[str, Any]:
    return {"s": symbol, "quote": {"bid": "1", "ask": "3", "last": last}, "ts": ts}


def messages() -> list[dict[str, Any]]:
    return [
        {"channel": "watchticker", "message": alt_tick("BTC/BRL", "2", SEC)},
        {
            "channel": "watchtickers",
            "message": {
                "data": [alt_tick("BTC/BRL", "2.5", SEC + 1), alt_tick("ETH/BRL", "7", SEC + 2)]
            },
        },
    ]


def test_events_built_under_alt_fill_the_rows(clock: Any) -> None:
    view = TickerView([], max_hz=10, clock=clock, autostart=False)
    for seq, msg in enumerate(messages(), 1):
        event = event_from_message(msg, received_at_ns=seq, connection_id="c", seq=seq, profile=ALT)
        assert view.apply(event)
    btc, eth = view.rows["BTC/BRL"], view.rows["ETH/BRL"]
    assert (btc.bid, btc.ask, btc.last, btc.timestamp) == (1.0, 3.0, 2.5, (SEC + 1) * 1000)
    assert (eth.last, eth.timestamp) == (7.0, (SEC + 2) * 1000)
    assert view.repaint()
    shown = view._row_widgets["ETH/BRL"].value
    assert "2025-11-13 02:13" in shown  # the tick's date and time, not 1970's
    assert "nan" not in shown.lower()


def test_a_recording_made_under_alt_replays_into_the_view(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path, profile=ALT) as writer:
        for seq, msg in enumerate(messages(), 1):
            writer.add_raw(json.dumps(msg), SEC * 10**9 + seq, "c1", seq)

    async def main() -> TickerView:
        view = TickerView(str(tmp_path), max_hz=10)
        assert view.task is not None
        await asyncio.wait_for(view.task, 10)
        return view

    view = asyncio.run(main())
    assert view.state == "replay finished"
    assert set(view.rows) == {"BTC/BRL", "ETH/BRL"}
    assert view.rows["BTC/BRL"].last == 2.5 and view.rows["ETH/BRL"].bid == 1.0
    view.stop()
