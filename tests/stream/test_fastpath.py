"""Tests of the raw path of the stream session and of the recorder that uses it: the text
the server sent reaches the recording byte for byte, ``queue_size=0`` counts no drops,
typed events are only built for a typed consumer, raw batches survive a crash."""

from __future__ import annotations

import asyncio
import json
from array import array
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

import toolkit.stream._connection as stream_module
from toolkit.recording._read import read_recording
from toolkit.recording._recorder import Recorder
from toolkit.recording._rows import row_from_message
from toolkit.recording._writer import RecordingWriter
from toolkit.sim import Simulator

T0 = 1_795_305_600 * 10**9

#: what a server may send: extra whitespace, its own key order, non-ASCII, pretty-printed,
#: a decimal that is a JSON number, an order whose fields come before the channel
SENT = [
    '{"channel":"watchticker", "message": {"last":"350001.5","symbol":"BTC/BRL",'
    '"bid":"350000.25","ask":"350002.75","timestamp":1795305600123}}',
    '{"channel":"watchorders","message":{"id":"m-1","symbol":"ETH/BRL","status":"closed",'
    '"updatedAt":1795305600456,"note":"caf\u00e9 \\u00e9"}}',
    '{\n  "message": {"status": "OPEN", "id": "l-2", "symbol": "SOL/BRL",\n'
    '    "updatedAt": 1795305600}, "channel": "watchOrders"\n}',
    '{"channel":"watchticker","message":{"symbol":"ETH/BRL","bid":20000.5,"ask":"",'
    '"last":"20001","timestamp":1795305600789}}',
    '{"channel":"watchtickers","message":{"tickers":[{"symbol":"BTC/BRL","timestamp":5},'
    '{"symbol":"ETH/BRL","timestamp":1795305600999}]}}',
]


async def _handler(ws: ServerConnection) -> None:
    """Confirms subscribes like the service, then sends SENT once per subscribe."""
    async for text in ws:
        msg = json.loads(text)
        if msg.get("action") == "ping":
            await ws.send(json.dumps({"success": True, "message": "pong", "subscriptions": []}))
            continue
        channel = str(msg.get("channel", "")).lower()
        symbol = (msg.get("data") or {}).get("symbol")
        key = f"{channel}#{symbol.replace('/', '').lower()}" if symbol else channel
        await ws.send(
            json.dumps({"success": True, "message": f"Successfully subscribed to channel: {key}"})
        )
        for data in SENT:
            await ws.send(data)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def crafted_ws() -> AsyncIterator[str]:
    async with serve(_handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def signin_sim() -> Iterator[Simulator]:
    with Simulator(seed=3, engine=False, history_orders=5) as s:
        yield s


async def _until(cond: Any, timeout: float = 120.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.mark.anyio
async def test_recorded_raw_is_the_exact_text_the_server_sent(
    signin_sim: Simulator, crafted_ws: str, tmp_path: Path
) -> None:
    client = signin_sim.client()
    rec = Recorder(
        client,
        tmp_path,
        channels=["watchTicker:BTC/BRL"],
        flush_interval=0.05,
        stream_options={"ws_url": crafted_ws, "ping_interval": None},
    )
    rec.start()
    await _until(lambda: rec.stats.messages >= len(SENT))
    session = rec._session
    stats = await rec.stop()
    await client.aclose()
    # no main queue: nothing was counted as dropped anywhere
    assert session.stats.dropped == 0 and stats.dropped == 0
    df = read_recording(tmp_path)
    data = df[df["channel"] != "_session"].sort_values("seq")
    assert data["raw"].tolist() == SENT  # byte for byte, whitespace and key order kept
    assert [r.encode() for r in data["raw"]] == [s.encode() for s in SENT]
    rows = data.set_index("seq")
    first, order, pretty, numeric, tickers = (rows.iloc[i] for i in range(5))
    assert (first["channel"], first["symbol"]) == ("watchticker", "BTC/BRL")
    assert (first["bid"], first["ask"], first["last"]) == (350000.25, 350002.75, 350001.5)
    assert first["updated_at"].value == 1795305600123 * 10**6
    assert (order["order_id"], order["status"], order["symbol"]) == ("m-1", "closed", "ETH/BRL")
    assert (pretty["channel"], pretty["order_id"], pretty["status"]) == (
        "watchorders",
        "l-2",
        "OPEN",
    )
    assert pretty["updated_at"].value == 1795305600 * 10**9  # seconds detected
    assert numeric["bid"] == 20000.5 and numeric["ask"] != numeric["ask"]  # "" -> null
    assert tickers["updated_at"].value == 1795305600999 * 10**6
    kinds = df[df["channel"] == "_session"]["kind"].tolist()
    assert kinds[:2] == ["connected", "subscribed"] and kinds[-1] == "disconnected"


@pytest.mark.anyio
async def test_no_main_queue_refuses_async_for_and_counts_no_drops(
    signin_sim: Simulator, crafted_ws: str
) -> None:
    client = signin_sim.client()
    texts: list[str] = []
    try:
        async with client.stream(ws_url=crafted_ws, queue_size=0, ping_interval=None) as s:
            s.add_raw_callback(lambda text, ns, conn, seq: texts.append(text))
            with pytest.raises(RuntimeError, match="queue_size=0"):
                async for _ in s:
                    pass
            await s.subscribe("watchOrders")
            await _until(lambda: len(texts) >= len(SENT))
            assert texts == SENT
            assert s.stats.dropped == 0 and s.stats.received == len(SENT)
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_typed_events_are_built_only_for_a_typed_consumer(
    signin_sim: Simulator, crafted_ws: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    real = stream_module.event_from_message

    def counting(raw: dict[str, Any], **kw: Any) -> Any:
        built.append(str(raw["channel"]).lower())
        return real(raw, **kw)

    monkeypatch.setattr(stream_module, "event_from_message", counting)
    client = signin_sim.client()
    raw_seqs: list[int] = []
    typed: list[Any] = []
    sessions: list[Any] = []
    try:
        async with client.stream(ws_url=crafted_ws, queue_size=0, ping_interval=None) as s:
            s.add_raw_callback(lambda text, ns, conn, seq: raw_seqs.append(seq))
            s.add_callback(sessions.append, channels=["_session"])
            await s.subscribe("watchOrders")
            await _until(lambda: len(raw_seqs) >= len(SENT))
            assert built == []  # nobody reads typed data events: none was built
            s.add_callback(typed.append, channels=["watchOrders"])
            await s.subscribe("watchBalance")
            await _until(lambda: len(raw_seqs) >= 2 * len(SENT))
            # only the channel somebody reads is typed (every message is decoded to tell)
            assert {e.channel for e in typed} == {"watchorders"} and len(typed) == 2
            assert set(built) == {"watchorders"}
    finally:
        await client.aclose()
    # session events went to the filtered callback, seqs shared with data and increasing
    assert [e.kind for e in sessions] == ["subscribed", "subscribed", "disconnected"]
    assert raw_seqs == sorted(raw_seqs) and len(set(raw_seqs)) == len(raw_seqs)


def test_raw_batches_survive_a_crash_and_a_torn_record(tmp_path: Path) -> None:
    crashed = RecordingWriter(tmp_path)
    crashed.open()
    for i, text in enumerate(SENT, start=1):
        assert crashed.add_raw(text, T0 + i, "c1", i)
    crashed.flush()  # durable: one batch record
    segment = next((tmp_path / "_wal").glob("*.wal"))
    from toolkit.recording._chunk import encode_chunk

    with segment.open("ab") as f:  # the crash tore the next chunk record
        f.write(encode_chunk([SENT[0]], array("q", [T0 + 99]), array("q", [99]), "c1")[:40])
    crashed._unlock()

    writer = RecordingWriter(tmp_path)
    assert len(writer.open()) >= 1
    writer.close()
    df = read_recording(tmp_path).sort_values("seq")
    assert df["seq"].tolist() == list(range(1, len(SENT) + 1))
    assert df["raw"].tolist() == SENT


def test_raw_rows_equal_rows_of_their_messages_in_both_conversion_paths(tmp_path: Path) -> None:
    """The Arrow extraction and the per-row fallback agree with ``row_from_message``."""
    odd = '{"channel":"watchorders","message":{"id":7,"symbol":"BTC/BRL","status":"closed"}}'
    for name, texts in (("arrow", SENT), ("fallback", [*SENT, odd, "{not json"])):
        root = tmp_path / name
        with RecordingWriter(root) as writer:
            for i, text in enumerate(texts, start=1):
                writer.add_raw(text, T0 + i, "c1", i)
        got = read_recording(root).sort_values("seq").reset_index(drop=True)
        assert got["raw"].tolist() == texts
        for i, text in enumerate(texts):
            try:
                msg = json.loads(text)
            except ValueError:
                assert got.loc[i, "channel"] == "_unparsed" or got.loc[i, "raw"] == text
                continue
            want = row_from_message(
                msg, received_at_ns=T0 + i + 1, connection_id="c1", seq=i + 1, raw_text=text
            )
            row = got.loc[i]
            assert row["channel"] == want.channel
            for col, attr in (("symbol", "symbol"), ("order_id", "order_id"), ("status", "status")):
                value = row[col]
                assert (value if isinstance(value, str) else None) == getattr(want, attr), col
            for col in ("bid", "ask", "last"):
                value = row[col]
                expected = getattr(want, col)
                assert (None if value != value else value) == expected, col
            updated = row["updated_at"]
            assert (None if updated is None or updated != updated else updated.value // 10**6) == (
                want.updated_at_ms
            )
