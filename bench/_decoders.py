"""The candidates for decoding typed stream events, timed on the same texts (for
``bench_record.py``): the standard library, orjson with the toolkit's events or with plain
slots classes, and the msgspec structs the stream uses."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any


class _SlotsTicker:
    """The "orjson + slots classes" candidate: a plain class with slots, built by hand."""

    __slots__ = ("ask", "bid", "channel", "last", "raw", "seq", "symbol", "timestamp")

    def __init__(self, raw: dict[str, Any], seq: int) -> None:
        m = raw["message"]
        self.channel = raw["channel"]
        self.raw = raw
        self.seq = seq
        self.symbol = m["symbol"]
        self.bid = float(m["bid"])
        self.ask = float(m["ask"])
        self.last = float(m["last"])
        self.timestamp = m["timestamp"]


def decoders(messages: list[bytes], repeat: int = 5) -> list[tuple[str, float]]:
    """ns per message of each way to build typed events from ``messages`` (best of
    ``repeat``): what chose msgspec."""
    from toolkit.stream._decode import decoder_for
    from toolkit.stream._events import event_from_message

    texts = [m.decode() for m in messages]
    typed = decoder_for()

    def stdlib() -> None:
        for i, t in enumerate(texts):
            event_from_message(json.loads(t), received_at_ns=i, connection_id="c", seq=i)

    def msgspec_structs() -> None:
        # as the session's reader: decoded and built in one call (None: the general path)
        fast = typed.fast
        for i, t in enumerate(texts):
            fast(t, i, "c", i)

    ways: list[tuple[str, Callable[[], None]]] = [
        ("json.loads + event_from_message", stdlib),
        ("msgspec typed structs (chosen)", msgspec_structs),
    ]
    try:
        import orjson

        def orjson_events() -> None:
            loads = orjson.loads
            for i, t in enumerate(texts):
                event_from_message(loads(t), received_at_ns=i, connection_id="c", seq=i)

        def orjson_slots() -> None:
            loads = orjson.loads
            for i, t in enumerate(texts):
                raw = loads(t)
                if raw["channel"] == "watchticker":
                    _SlotsTicker(raw, i)
                else:
                    event_from_message(raw, received_at_ns=i, connection_id="c", seq=i)

        ways[1:1] = [
            ("orjson + event_from_message", orjson_events),
            ("orjson + slots classes", orjson_slots),
        ]
    except ImportError:  # pragma: no cover - orjson is not a dependency
        pass
    out = []
    for name, fn in ways:
        best = min(_timed(fn) for _ in range(repeat))
        out.append((name, best / len(texts) * 1e9))
    return out


def _timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
