"""The event builders generated per profile (``TypedDecoder.fast``) and the reader's fast
path that uses them: on many messages, under the default and the alt profile, each time
unit and deeper payload paths, the fast event equals the one ``event_from_message`` builds
from the decoded dict, or the message is left to that general path; times follow
``_epoch_ms`` exactly; the reader's inlined dispatch keeps every rule of
``StreamSession._dispatch``. No network: the reader runs on a fake connection."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import random
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, load_profile
from toolkit.stream._decode import NOT_TAKEN, LazyMessage, TypedDecoder, decoder_for
from toolkit.stream._events import (
    _SECONDS_BELOW,
    Event,
    OrderEvent,
    RawEvent,
    TickerEvent,
    _epoch_ms,
    event_from_message,
)
from toolkit.stream._keepalive import Connection
from toolkit.stream._queues import items_of
from toolkit.stream._session import StreamSession

ALT = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "alt.toml")
#: nested deeper than alt, the symbol nested too, and two leaves sharing a parent twice
DEEP = ALT.replace(
    {
        "payloads.ticker_symbol": "meta.pair.code",
        "payloads.ticker_bid": "book.top.bid",
        "payloads.ticker_ask": "book.top.ask",
        "payloads.ticker_last": "book.last",
        "payloads.ticker_time": "meta.ts",
    }
)
PROFILES = {
    "default": DEFAULT_PROFILE,
    "alt": ALT,
    "deep": DEEP,
    **{
        f"{name}-{unit}": base.replace({"orders.timestamp_unit": unit})
        for name, base in (("default", DEFAULT_PROFILE), ("alt", ALT))
        for unit in ("auto", "s", "ms")
    },
}
MS = 1_795_305_600_123
B = _SECONDS_BELOW
#: times around every boundary of the units (ints: the generated code's own case)
INT_TIMES = [0, 1, -1, MS, MS // 1000, B - 1, B, B + 1, -B + 1, -B, -B - 1, 2**53 + 1, 2**63 - 1]
#: what is not an int: decoded to one by msgspec, or left to the general path
OTHER_TIMES: list[Any] = [1.5e12, 1795305600.0, "1795305600", "", None, True, "x", 2.5, [1]]
_MISSING: Any = object()


def _put(body: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for step in parents:
        body = body.setdefault(step, {})
    if value is not _MISSING:
        body[leaf] = value


def _ticker(profile: ServiceProfile, **values: Any) -> dict[str, Any]:
    p = profile.payloads
    fields = {
        "symbol": "BTC/BRL",
        "bid": "349802.05",
        "ask": 349942.0,
        "last": "349872",
        "time": MS,
        **values,
    }
    body: dict[str, Any] = {"extra": {"kept": [1, 2]}}
    for name, path in (
        ("symbol", p.ticker_symbol),
        ("bid", p.ticker_bid),
        ("ask", p.ticker_ask),
        ("last", p.ticker_last),
        ("time", p.ticker_time),
    ):
        _put(body, path, fields[name])
    return body


def _messages(profile: ServiceProfile, rng: random.Random) -> list[dict[str, Any]]:
    """Usual messages, every edge of a field, and random ones."""
    out: list[dict[str, Any]] = []
    for channel in ("watchticker", "watchTicker"):
        out.append({"channel": channel, "message": _ticker(profile)})
    for stamp in INT_TIMES + OTHER_TIMES + [_MISSING]:
        out.append({"channel": "watchticker", "message": _ticker(profile, time=stamp)})
    for name in ("symbol", "bid", "ask", "last"):
        for value in ("", None, _MISSING, 7, "abc", True, {"a": 1}, "10", 10, -0.5, "1e3"):
            out.append({"channel": "watchticker", "message": _ticker(profile, **{name: value})})
    out += [
        {"channel": "watchticker", "message": "not an object"},
        {"channel": "watchticker", "message": None},
        {"channel": "watchticker"},
        {"channel": "watchticker", "message": {}},
    ]
    order = {"id": "o-1", "symbol": "BTC/BRL", "status": "closed", "updatedAt": MS}
    for changes in (
        {},
        {"status": "EXECUTED "},
        {"status": None},
        {"status": 3},
        {"id": 17},
        {"id": None, "orderId": "x-9"},
        {"id": None},
        {"id": True},
        *({"updatedAt": t} for t in INT_TIMES + OTHER_TIMES),
        {"updatedAt": _MISSING},
        {"nested": {"list": [{"a": 1}, None]}, "channel": "api"},
    ):
        body = {**order, **changes}
        out.append(
            {
                "channel": "watchorders",
                "message": {k: v for k, v in body.items() if v is not _MISSING},
            }
        )
    out += [
        {"channel": "watchOrders", "message": order},
        {"channel": "watchorders", "message": [1, 2]},
        {"channel": "watchorders", "message": "text"},
        {"channel": "watchbalance", "message": {"balances": [], "timestamp": MS}},
        {"channel": "somethingnew", "message": {"a": 1}},
    ]
    for _ in range(300):
        price = rng.uniform(0.0001, 1e7)
        out.append(
            {
                "channel": rng.choice(["watchticker", "watchTicker"]),
                "message": _ticker(
                    profile,
                    bid=rng.choice([f"{price:.2f}", price, round(price), ""]),
                    ask=f"{price * 1.001:.8f}",
                    last=rng.choice([f"{price:.2f}", price]),
                    time=rng.choice(
                        [rng.randrange(-2 * B, 2 * B), rng.randrange(0, 10**13), MS // 1000]
                    ),
                    symbol=rng.choice(["BTC/BRL", "ETH/BRL", "", "é/BRL"]),
                ),
            }
        )
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(b, Mapping):  # ``raw``: a LazyMessage of the fast path, a dict here
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _assert_same_event(got: Event, want: Event, context: Any, skip: str = "") -> None:
    assert type(got) is type(want), context
    for name in type(want).__struct_fields__:
        if name == skip:
            continue
        assert _same(getattr(got, name), getattr(want, name)), (context, name)


def _general(text: str, profile: ServiceProfile, seq: int = 3) -> Event | Exception:
    """The general path's event (what the reader delivers), or what it refuses."""
    try:
        return event_from_message(
            json.loads(text), received_at_ns=5, connection_id="c1", seq=seq, profile=profile
        )
    except (ValueError, TypeError) as exc:
        return exc


@pytest.mark.parametrize("name", list(PROFILES))
def test_generated_events_equal_the_general_ones(name: str) -> None:
    profile = PROFILES[name]
    decoder = TypedDecoder(profile)
    taken = {"watchticker": 0, "watchorders": 0}
    for msg in _messages(profile, random.Random(name)):
        text = json.dumps(msg, separators=(",", ":"), ensure_ascii=False)
        want = _general(text, profile)
        try:
            got = decoder.fast(text, 5, "c1", 3)
        except (ValueError, TypeError) as exc:
            # only where the general path refuses the message the same way
            assert type(want) is type(exc), (msg, exc)
            with pytest.raises(type(exc)):
                decoder.event(decoder.decode(text), text, 5, "c1", 3)
            continue
        if got is NOT_TAKEN:
            assert decoder.decode(text) is None, msg
            continue
        # the two halves run the same generated lines
        halves = decoder.event(decoder.decode(text), text, 5, "c1", 3)
        if got is None:
            assert halves is None
            # left to the general path: a payload it reports (the empty symbol; an order
            # without an id, a status or a time)
            assert isinstance(want, RawEvent), msg
            named = "ticker_symbol" if want.channel == "watchticker" else "notification has no"
            assert named in want.error, msg
            continue
        assert not isinstance(want, Exception), msg
        _assert_same_event(got, want, msg)
        assert halves is not None
        _assert_same_event(halves, want, msg)
        assert isinstance(got.raw, LazyMessage) and got.raw.text == text
        assert got.raw == json.loads(text)
        taken[got.channel] += 1
    # the usual shapes took the fast path, not only the general one
    assert taken["watchticker"] >= 150 and taken["watchorders"] >= 15, taken


@pytest.mark.parametrize("unit", ["auto", "s", "ms"])
@pytest.mark.parametrize("base", [DEFAULT_PROFILE, ALT, DEEP], ids=["default", "alt", "deep"])
def test_generated_times_follow_epoch_ms_exactly(base: ServiceProfile, unit: str) -> None:
    profile = base.replace({"orders.timestamp_unit": unit})
    decoder = TypedDecoder(profile)
    rng = random.Random(unit)
    stamps = (
        INT_TIMES + [-t for t in INT_TIMES] + [rng.randrange(-4 * B, 4 * B) for _ in range(200)]
    )
    for stamp in stamps:
        for msg in (
            {"channel": "watchticker", "message": _ticker(profile, time=stamp)},
            {"channel": "watchorders", "message": {"id": "o", "status": "x", "updatedAt": stamp}},
        ):
            event = decoder.fast(json.dumps(msg), 1, "c", 1)
            if msg["channel"] == "watchorders" and _epoch_ms(stamp, unit) == 0:
                assert event is None  # 0 is no time of an order: the general path says so
                continue
            assert isinstance(event, TickerEvent | OrderEvent), msg
            got = event.timestamp if isinstance(event, TickerEvent) else event.updated_at_ms
            assert got == _epoch_ms(stamp, unit) and got.__class__ is int, (stamp, unit)


def test_a_missing_or_mistyped_field_falls_back_and_names_the_setting() -> None:
    for profile, setting in ((DEFAULT_PROFILE, "bid"), (ALT, "bid"), (DEEP, "ask")):
        decoder = decoder_for(profile)
        for value in (_MISSING, "abc", {"x": 1}):
            body = _ticker(profile, **{setting: value})
            text = json.dumps({"channel": "watchticker", "message": body})
            assert decoder.fast(text, 1, "c", 1) is NOT_TAKEN
            if value is _MISSING:
                want = _general(text, profile)
                assert isinstance(want, RawEvent) and f"payloads.ticker_{setting}" in want.error
        # the empty symbol: decoded, but its event is the general path's
        text = json.dumps({"channel": "watchticker", "message": _ticker(profile, symbol="")})
        assert decoder.fast(text, 1, "c", 1) is None
        assert decoder_for(profile) is decoder  # cached per profile


def test_paths_no_struct_can_hold_leave_tickers_to_the_general_path() -> None:
    # one path is the parent of another: no struct can hold both, tickers go the general way
    profile = DEFAULT_PROFILE.replace({"payloads.ticker_bid": "q", "payloads.ticker_ask": "q.ask"})
    decoder = TypedDecoder(profile)
    text = json.dumps({"channel": "watchticker", "message": {"symbol": "A", "q": {"ask": 1}}})
    assert decoder.fast(text, 1, "c", 1) is NOT_TAKEN
    body = {"id": 5, "status": "open", "updatedAt": MS}
    order = json.dumps({"channel": "watchorders", "message": body})
    event = decoder.fast(order, 1, "c", 1)
    assert isinstance(event, OrderEvent) and (event.order_id, event.status) == ("5", "OPEN")
    # an empty path (the payload itself) neither: orders alone take the fast path
    decoder = TypedDecoder(DEFAULT_PROFILE.replace({"payloads.ticker_time": ""}))
    text = json.dumps({"channel": "watchticker", "message": _ticker(DEFAULT_PROFILE)})
    assert decoder.fast(text, 1, "c", 1) is NOT_TAKEN
    assert isinstance(decoder.fast(order, 1, "c", 1), OrderEvent)


# -------------------------------------------------------------------- the reader, no I/O


class _FakeWS:
    def __init__(self, texts: Iterable[str | bytes]) -> None:
        self.texts = iter(texts)

    async def recv(self) -> str | bytes:
        for text in self.texts:
            return text
        raise ConnectionClosed(None, None)


class _Client:
    class settings:  # what the session reads of a client
        ws_url = "ws://fake"

    profile = None


def _read(session: StreamSession, texts: Iterable[str | bytes]) -> Connection:
    conn = Connection(_FakeWS(texts), "c1", 0.0)  # type: ignore[arg-type]

    async def run() -> None:
        with pytest.raises(ConnectionClosed):
            await session._read(conn)

    asyncio.run(run())
    return conn


def _session(profile: ServiceProfile, queue_size: int = 0) -> StreamSession:
    client: Any = _Client()
    return StreamSession(client, queue_size=queue_size, ping_interval=None, profile=profile)


@pytest.mark.parametrize("name", ["default", "alt", "deep", "alt-ms", "default-s"])
def test_the_reader_delivers_the_general_events_in_order(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    profile = PROFILES[name]
    texts = [
        json.dumps(m, separators=(",", ":")) for m in _messages(profile, random.Random(1))[:120]
    ]
    texts += ['{"channel":"watchticker","message":{', "[1, 2]", "not json"]
    texts += [json.dumps({"channel": "watchticker", "message": _ticker(profile, time="x")})]
    session = _session(profile)
    events: list[Event] = []
    session.add_callback(events.append)
    with caplog.at_level(logging.WARNING, "toolkit.stream"):
        conn = _read(session, texts)
    want: list[Event] = []
    refused: list[str] = []
    seq = 0
    for text in texts:
        try:
            msg = json.loads(text)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        seq += 1
        event = _general(text, profile, seq)
        if isinstance(event, Exception):
            refused.append(str(event))
        else:
            want.append(event)
    assert len(events) == len(want) and conn.seq == seq == session.stats.received
    for got, expected in zip(events, want, strict=True):
        _assert_same_event(got, expected, got, skip="received_at_ns")
        assert got.received_at_ns > expected.received_at_ns  # the clock's, not 5
    assert sum(isinstance(e.raw, LazyMessage) for e in events) >= 60  # the fast path ran
    # each message the general path refuses is reported once, as it says (beside them:
    # the once-per-setting reports of payloads that do not match the profile)
    said = [r.getMessage() for r in caplog.records]
    assert [m for m in said if "reported once" not in m] == [
        *(f"ignored a malformed data message on c1: {why}" for why in refused[:-1]),
        "ignored a message that is not JSON on c1",
        "ignored a JSON list that is not an object on c1",
        "ignored a message that is not JSON on c1",
        f"ignored a malformed data message on c1: {refused[-1]}",
    ]
    assert "'x'" in refused[-1]
    assert session.stats.malformed == len(refused) + 3  # each one logged is counted


def _ticks(n: int, channel: str = "watchticker") -> list[str]:
    return [
        json.dumps({"channel": channel, "message": _ticker(DEFAULT_PROFILE, time=MS + i)})
        for i in range(n)
    ]


def test_the_inlined_dispatch_counts_drops_of_the_main_queue_and_named_queues() -> None:
    session = _session(DEFAULT_PROFILE, queue_size=2)
    named = session.queue("watchTicker", maxsize=1)
    orders = session.queue("watchorders")
    _read(session, _ticks(5))
    main = session._main
    assert main is not None and main.qsize() == 2 and named.qsize() == 1
    # 3 beyond the main queue, 4 beyond the named one
    assert session.stats.dropped == 3 + 4 and orders.qsize() == 0
    first = main.get_nowait()
    assert isinstance(first, TickerEvent) and first.seq == 1 and named.get_nowait() == first


def test_the_inlined_dispatch_filters_guards_and_snapshots_callbacks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    session = _session(DEFAULT_PROFILE)
    seen: dict[str, list[int]] = {"orders": [], "all": [], "late": [], "once": []}
    session.add_callback(lambda e: seen["orders"].append(e.seq), channels=["watchOrders"])

    def boom(event: Event) -> None:
        raise RuntimeError("callback bug")

    session.add_callback(boom)
    remove_once: list[Any] = []

    def once(event: Event) -> None:
        seen["once"].append(event.seq)
        remove_once[0]()  # removed while dispatching: this event still reached it
        session.add_callback(lambda e: seen["late"].append(e.seq))  # from the next event on

    remove_once.append(session.add_callback(once))
    session.add_callback(lambda e: seen["all"].append(e.seq))
    body = {"id": "o", "status": "open", "updatedAt": MS}
    order = json.dumps({"channel": "watchorders", "message": body})
    with caplog.at_level(logging.ERROR, "toolkit.stream"):
        _read(session, [*_ticks(2), order])
    assert seen == {"orders": [3], "all": [1, 2, 3], "late": [2, 3], "once": [1]}
    # the same failure three times: one traceback, three counted
    failures = [r for r in caplog.records if "a stream callback failed" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info
    assert session.stats.callback_errors == 3


def test_only_channels_with_a_typed_consumer_are_delivered() -> None:
    session = _session(DEFAULT_PROFILE)
    got: list[Event] = []
    raw: list[int] = []
    session.add_callback(got.append, channels=["watchorders"])
    session.add_raw_callback(lambda text, ns, conn, seq: raw.append(seq))
    body = {"id": "o", "status": "open", "updatedAt": MS}
    order = json.dumps({"channel": "watchorders", "message": body})
    _read(session, [*_ticks(3), order, *_ticks(1, "watchTicker")])
    assert [e.seq for e in got] == [4] and isinstance(got[0], OrderEvent)
    assert raw == [1, 2, 3, 4, 5] and session.stats.received == 5 and session.stats.dropped == 0


@pytest.mark.parametrize("private", [True, False])
def test_the_readers_main_queue_length_follows_qsize(private: bool) -> None:
    """What the reader reads instead of ``full()``: the deque asyncio.Queue keeps its items
    in, or, where a Python keeps them otherwise, ``qsize()`` (both checked)."""

    class Elsewhere(asyncio.Queue):  # type: ignore[type-arg]
        def _init(self, maxsize: int) -> None:
            self._items: list[Any] = []

        def _put(self, item: Any) -> None:
            self._items.append(item)

        def _get(self) -> Any:
            return self._items.pop(0)

        def qsize(self) -> int:
            return len(self._items)

        def empty(self) -> bool:
            return not self._items

    async def check() -> None:
        main: asyncio.Queue[Any] = asyncio.Queue(3) if private else Elsewhere(3)
        items = items_of(main)
        assert isinstance(items, deque) is private
        for i in itertools.count():
            assert len(items) == main.qsize() and (len(items) >= main.maxsize) == main.full()
            if main.full():
                break
            main.put_nowait(i)
        main.get_nowait()
        assert len(items) == main.qsize() == 2 and not main.full()
        assert _session(DEFAULT_PROFILE)._main is None  # queue_size=0: none, nothing read

    asyncio.run(check())
