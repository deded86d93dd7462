"""Benchmark of the recorder: its message rate against a bare ``websockets`` receive loop on
the same stream (target >= 90 % with 0 dropped in every round), typed events of the
StreamSession (target >= 2.5x their rate before), and the resident memory of the recorder
and its converter process over millions of messages (flat, <= 300 MiB). The exit status is
1 when any message was dropped.

The stream comes from a tiny WebSocket server of this bench in its own process, which
answers subscribes like the simulator and then writes pre-built frames of simulator-shaped
messages as fast as the receiver takes them, so the receiver is always the bottleneck.
The REST sign-in the client needs is served by an embedded ``toolkit.sim.Simulator``.

    python bench/bench_record.py [--messages 2000000] [--order-share 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import multiprocessing as mp
import os
import random
import shutil
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


# ------------------------------------------------------------------- the stream source


def _frame(payload: bytes, opcode: int = 0x1) -> bytes:
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


def _messages(count: int, order_share: float, seed: int = 1) -> list[bytes]:
    """Distinct messages shaped like the simulator's watchticker / watchorders data."""
    rng = random.Random(seed)
    out = []
    price = 350_000.0
    for i in range(count):
        price *= 1 + rng.uniform(-0.0005, 0.0005)
        if rng.random() < order_share:
            status = rng.choice(["pending", "executed", "closed"])
            message: dict[str, Any] = {
                "id": f"m-{i:06d}-{rng.getrandbits(16):04x}",
                "exchange": "toolkit-sim",
                "executedExchange": rng.choice(["venue-a", "venue-b", "venue-c"]),
                "symbol": "BTC/BRL",
                "side": rng.choice(["buy", "sell"]),
                "type": "market",
                "status": status,
                "errorMessage": "",
                "amount": f"{rng.uniform(0.001, 0.1):.8f}",
                "quoteAmount": f"{price * 0.01:.2f}",
                "quoteAmountOriginal": f"{price * 0.01:.2f}",
                "remainingQuoteAmount": "0.00",
                "average": f"{price:.2f}",
                "createdAt": 1_795_305_600_000 + i,
                "updatedAt": 1_795_305_600_000 + i + 5,
                "channel": "api",
                "rule": "best_price",
                "operationalFees": "0.10",
                "evaluatedTickers": [
                    {"exchange": v, "price": f"{price + d:.2f}", "quotedAt": 1_795_305_600_000 + i}
                    for v, d in (("venue-a", 0), ("venue-b", 12.5), ("venue-c", -7.25))
                ],
            }
            data = {"channel": "watchorders", "message": message}
        else:
            spread = price * 0.0002
            data = {
                "channel": "watchticker",
                "message": {
                    "symbol": "BTC/BRL",
                    "bid": f"{price - spread:.2f}",
                    "ask": f"{price + spread:.2f}",
                    "last": f"{price:.2f}",
                    "timestamp": 1_795_305_600_000 + i,
                },
            }
        out.append(json.dumps(data, separators=(",", ":")).encode())
    return out


async def _read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    b0, b1 = await reader.readexactly(2)
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    mask = await reader.readexactly(4) if b1 & 0x80 else b"\0\0\0\0"
    data = bytearray(await reader.readexactly(n))
    for i in range(n):
        data[i] ^= mask[i % 4]
    return b0 & 0x0F, bytes(data)


async def _serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, chunk: bytes, per_chunk: int
) -> None:
    request = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    path = request.split(" ", 2)[1]
    total = int(path.split("/")[1].removeprefix("n"))
    key = next(
        line.split(":", 1)[1].strip()
        for line in request.split("\r\n")
        if line.lower().startswith("sec-websocket-key:")
    )
    accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()
    writer.write(
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept}\r\n\r\n"
        ).encode()
    )
    subscribed = asyncio.Event()

    async def blast() -> None:
        await subscribed.wait()
        sent = 0
        while sent + per_chunk <= total:
            writer.write(chunk)
            await writer.drain()
            sent += per_chunk
        if sent < total:
            # the remainder: whole frames from the start of the chunk
            offset, left = 0, total - sent
            while left:
                n = chunk[offset + 1] & 0x7F
                head = 2 + (2 if n == 126 else 8 if n == 127 else 0)
                if n == 126:
                    (n,) = struct.unpack_from("!H", chunk, offset + 2)
                elif n == 127:
                    (n,) = struct.unpack_from("!Q", chunk, offset + 2)
                offset += head + n
                left -= 1
            writer.write(chunk[:offset])
            await writer.drain()

    blaster = asyncio.ensure_future(blast())
    try:
        while True:
            opcode, payload = await _read_frame(reader)
            if opcode == 0x8:  # close
                writer.write(_frame(payload[:2], 0x8))
                break
            if opcode == 0x9:  # ping -> pong
                writer.write(_frame(payload, 0xA))
                continue
            if opcode != 0x1:
                continue
            msg = json.loads(payload)
            if msg.get("action") == "ping":
                reply = {"success": True, "message": "pong", "subscriptions": []}
            else:
                channel = str(msg.get("channel", "")).lower()
                symbol = (msg.get("data") or {}).get("symbol")
                key = f"{channel}#{symbol.replace('/', '').lower()}" if symbol else channel
                verb = "subscribed to" if msg.get("action") == "subscribe" else "unsubscribed from"
                reply = {"success": True, "message": f"Successfully {verb} channel: {key}"}
            writer.write(_frame(json.dumps(reply).encode()))
            subscribed.set()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        blaster.cancel()
        writer.close()


def _server_main(conn: Connection, order_share: float) -> None:
    messages = _messages(2_000, order_share)
    chunk = b"".join(_frame(m) for m in messages)

    async def main() -> None:
        server = await asyncio.start_server(
            lambda r, w: _serve_connection(r, w, chunk, len(messages)), "127.0.0.1", 0
        )
        conn.send(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# -------------------------------------------------------------------------- receivers

RECEIVERS = (
    "bare websockets loop",
    "StreamSession (typed events)",
    "StreamSession (raw callback)",
    "Recorder (WAL + Parquet)",
)


def _size_mib(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("*.parquet")) / 2**20


def _converter_cpu() -> float:
    """CPU seconds used so far by the recorder's converter process (0 without psutil)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover
        return 0.0
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "toolkit.recording._convert" in " ".join(child.cmdline()):
                times = child.cpu_times()
                total += times.user + times.system
    return total


def _cpu() -> tuple[float, float]:
    """CPU seconds so far of this process and of its reaped children (the converter
    processes of the recorders that stopped)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


def _rss() -> int:
    """Resident bytes of this process and of the recorder's converter process (not of the
    sending server's)."""
    try:
        import psutil

        me = psutil.Process()
        total = int(me.memory_info().rss)
        for child in me.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "toolkit.recording._convert" in " ".join(child.cmdline()):
                    total += int(child.memory_info().rss)
        return total
    except ImportError:  # pragma: no cover
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def bare_loop(url: str, n: int) -> float:
    """Seconds for a bare ``websockets`` loop to receive n data messages."""
    from websockets.asyncio.client import connect

    start = time.perf_counter()
    async with connect(f"{url}/?token=x", max_queue=64, proxy=None) as ws:
        await ws.send(
            json.dumps(
                {"action": "subscribe", "channel": "watchTicker", "data": {"symbol": "BTC/BRL"}}
            )
        )
        await ws.recv()  # the confirmation
        got = 0
        async for _ in ws:
            got += 1
            if got == n:
                break
    return time.perf_counter() - start


async def _poll(cond: Callable[[], bool], sample: Callable[[], None]) -> None:
    # a fine interval: the bare loop stops on its last message, a polled receiver up to
    # one interval later (50 ms was up to 3 % of a 300k-message run)
    while not cond():
        sample()
        await asyncio.sleep(0.002)


async def stream_only(client: Any, n: int) -> float:
    """Seconds for the toolkit's StreamSession (typed events, no recording) to deliver n."""
    count = 0

    def on_event(event: Any) -> None:
        nonlocal count
        if event.channel != "_session":
            count += 1

    start = time.perf_counter()
    session = client.stream(reconnect=False, queue_size=1, ping_interval=None)
    session.add_callback(on_event)
    async with session:
        await session.subscribe("watchTicker", symbol="BTC/BRL")
        await _poll(lambda: count >= n, lambda: None)
    return time.perf_counter() - start


async def stream_raw(client: Any, n: int) -> float:
    """Seconds for the StreamSession's raw path (text as sent, no typed events, no main
    queue) to deliver n."""
    count = 0

    def on_raw(text: str, received_at_ns: int, connection_id: str, seq: int) -> None:
        nonlocal count
        count += 1

    start = time.perf_counter()
    session = client.stream(reconnect=False, queue_size=0, ping_interval=None)
    session.add_raw_callback(on_raw)
    async with session:
        await session.subscribe("watchTicker", symbol="BTC/BRL")
        await _poll(lambda: count >= n, lambda: None)
    return time.perf_counter() - start


async def recorder_run(
    client: Any, root: Path, n: int, samples: list[tuple[int, int]], cpu: list[float] | None = None
) -> tuple[float, float, Any, int]:
    """(seconds to record n messages, seconds to stop, stats, peak RSS). The clock starts
    when the stream is connected (the recorder's ``connected`` session row): opening the
    root and starting the converter process are one-time costs, not a message rate.
    ``cpu`` gets the CPU seconds of this process and of the converter meanwhile."""
    cpu = [] if cpu is None else cpu
    from toolkit.recording._recorder import Recorder

    rec = Recorder(
        client,
        root,
        channels=["watchTicker:BTC/BRL"],
        flush_interval=1.0,
        stream_options={"reconnect": False, "ping_interval": None},
    )
    task = rec.start()
    last = [0.0]
    peak = [0]

    def sample() -> None:
        now = time.perf_counter()
        if now - last[0] >= 0.5:
            rss = _rss()
            peak[0] = max(peak[0], rss)
            samples.append((rec.stats.messages, rss))
            last[0] = now

    def check() -> None:
        if task.done():  # ended before n messages: say why instead of polling forever
            raise RuntimeError(
                f"the recorder stopped after {rec.stats.messages:,} of {n:,}: {task!r}"
            )

    def connected() -> bool:
        check()
        return rec.stats.session_rows > 0

    def done() -> bool:
        check()
        # a message dropped (backlog full) is counted there, not in messages
        return rec.stats.messages + rec.stats.dropped >= n

    await _poll(connected, lambda: None)
    start = time.perf_counter()
    cpu0, conv0 = time.process_time(), _converter_cpu()
    await _poll(done, sample)
    elapsed = time.perf_counter() - start
    cpu.extend([time.process_time() - cpu0, _converter_cpu() - conv0])
    rss = _rss()
    peak[0] = max(peak[0], rss)
    samples.append((rec.stats.messages, rss))
    t = time.perf_counter()
    stats = await rec.stop()
    return elapsed, time.perf_counter() - t, stats, peak[0]


#: typed events before issue 17: 82,230 msg/s, 33 % of the bare loop on the same machine
TYPED_BEFORE = 0.33


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument(
        "--baseline-messages",
        type=int,
        default=None,
        help="messages for the rate comparison (default: min(--messages, 300k))",
    )
    parser.add_argument(
        "--order-share",
        type=float,
        default=0.1,
        help="share of watchorders messages in the stream (rest: tickers)",
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="interleaved rounds of the rate comparison"
    )
    parser.add_argument("--keep", type=Path, help="keep the recording in this directory")
    args = parser.parse_args(argv)
    n_rate = args.baseline_messages or min(args.messages, 300_000)

    from toolkit.client._client import Client
    from toolkit.recording._read import read_recording_table
    from toolkit.sim import Simulator

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    server = ctx.Process(target=_server_main, args=(child, args.order_share), daemon=True)
    server.start()
    port = parent.recv()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-record-"))
    try:
        with Simulator(seed=1, engine=False, history_orders=10) as sim:

            def client(n: int) -> Any:
                return Client(
                    sim.base_url,
                    ws_url=f"ws://127.0.0.1:{port}/n{n}",
                    api_key="demo",
                    api_secret="demo-secret",
                )

            phases: list[tuple[str, int]] = [("start (server, simulator, imports)", _rss())]
            # rounds interleave the receivers, so a slow moment of the machine hits all of
            # them alike; each gets the same stream (same server, same frames, fresh
            # connection) and the medians are compared
            runs: dict[str, list[float]] = {name: [] for name in RECEIVERS}
            rate_drops: list[int] = []
            rate_rss: list[int] = []
            # an untimed warm-up of each receiver first: one-time costs (imports, the
            # writer's first open, which warms Arrow) are not a message rate
            warm = 20_000
            asyncio.run(bare_loop(f"ws://127.0.0.1:{port}/n{warm}", warm))
            for fn in (stream_raw, stream_only):
                c = client(warm)
                asyncio.run(fn(c, warm))
                c.close()
            c = client(warm)
            asyncio.run(recorder_run(c, root / "warm-up", warm, []))
            c.close()
            shutil.rmtree(root / "warm-up", ignore_errors=True)
            # CPU per message of each receiver (this process; the converter's apart): what
            # the load of the shared machine changes least
            cpu: dict[str, list[tuple[float, float]]] = {name: [] for name in RECEIVERS}

            def charge(name: str, before: tuple[float, float]) -> None:
                after = _cpu()
                cpu[name].append(((after[0] - before[0]) / n_rate, (after[1] - before[1]) / n_rate))

            for r in range(args.rounds):
                before = _cpu()
                runs["bare websockets loop"].append(
                    asyncio.run(bare_loop(f"ws://127.0.0.1:{port}/n{n_rate}", n_rate))
                )
                charge("bare websockets loop", before)
                for name, fn in (
                    ("StreamSession (typed events)", stream_only),
                    ("StreamSession (raw callback)", stream_raw),
                ):
                    c = client(n_rate)
                    before = _cpu()
                    runs[name].append(asyncio.run(fn(c, n_rate)))
                    charge(name, before)
                    c.close()
                c = client(n_rate)
                short = root / f"rate-{r}"
                before = _cpu()
                rec_s, _, rec_stats, peak = asyncio.run(recorder_run(c, short, n_rate, []))
                charge("Recorder (WAL + Parquet)", before)
                rate_drops.append(rec_stats.dropped)
                rate_rss.append(peak)
                c.close()
                runs["Recorder (WAL + Parquet)"].append(rec_s)
                shutil.rmtree(short, ignore_errors=True)
            phases.append(("after the rate comparison", _rss()))

            samples: list[tuple[int, int]] = []
            long_cpu: list[float] = []
            c = client(args.messages)
            long_s, stop_s, stats, long_peak = asyncio.run(
                recorder_run(c, root / "long", args.messages, samples, long_cpu)
            )
            c.close()
            phases.append(("after the long run (recorder stopped)", _rss()))
            table = read_recording_table(root / "long", "watchticker", columns=["seq"])
            orders = read_recording_table(root / "long", "watchorders", columns=["seq"])
            recorded = table.num_rows + orders.num_rows
    finally:
        server.terminate()
        server.join(5)

    cpus = os.cpu_count()
    print(
        f"\nRates vs a bare websockets receive loop ({n_rate:,} messages, "
        f"{args.order_share:.0%} orders, median of {args.rounds} interleaved rounds, "
        f"{cpus} CPUs shared with the sending server)"
    )
    bare_times = runs["bare websockets loop"]
    bare = statistics.median(bare_times)
    print(f"{'receiver':32} {'messages':>10} {'seconds':>8} {'msg/s':>10} {'vs bare':>8}  rounds")
    for name, times in runs.items():
        secs = statistics.median(times)
        each = " ".join(f"{n_rate / t:,.0f}" for t in times)
        rate = n_rate / secs
        print(f"{name:32} {n_rate:>10,} {secs:>8.2f} {rate:>10,.0f} {bare / secs:>8.0%}  {each}")

    print(
        "\nCPU per message (median over the rounds; the receiving process, and the "
        "converter process apart): the rate each would reach with a core of its own"
    )
    bare_cpu = statistics.median(c for c, _ in cpu["bare websockets loop"])
    print(f"{'receiver':32} {'us/msg':>7} {'+ converter':>12} {'vs bare':>8}")
    for name, values in cpu.items():
        own = statistics.median(c for c, _ in values)
        conv = statistics.median(k for _, k in values)
        print(f"{name:32} {own * 1e6:>7.2f} {conv * 1e6:>12.2f} {bare_cpu / own:>8.0%}")

    print("\nRecorder per round: msg/s, % of that round's bare loop, dropped, peak RSS")
    rec_times = runs["Recorder (WAL + Parquet)"]
    for i, (b, t) in enumerate(zip(bare_times, rec_times, strict=True)):
        print(
            f"  round {i + 1}: {n_rate / t:>9,.0f} msg/s  {b / t:>4.0%} of bare  "
            f"dropped {rate_drops[i]}  RSS {rate_rss[i] / 2**20:,.1f} MiB"
        )
    ratio = bare / statistics.median(rec_times)
    no_drops = not any(rate_drops) and stats.dropped == 0
    print(
        f"target recorder >= 90 % of bare with 0 dropped in every round: "
        f"{_verdict(ratio >= 0.9 and no_drops)} ({ratio:.0%}; dropped per round "
        f"{' '.join(map(str, rate_drops))}; long run {stats.dropped})"
    )
    typed = bare / statistics.median(runs["StreamSession (typed events)"])
    print(
        f"target typed StreamSession >= 2.5x the rate before (33 % of bare, so >= "
        f"{2.5 * TYPED_BEFORE:.0%}): {_verdict(typed >= 2.5 * TYPED_BEFORE)} ({typed:.0%} of "
        f"bare, {typed / TYPED_BEFORE:.1f}x)"
    )

    print(
        f"\nRecorder over {args.messages:,} messages: {long_s:.1f} s "
        f"({args.messages / long_s:,.0f} msg/s, {args.messages / long_s * bare / n_rate:.0%} "
        f"of bare), stop (last flush + Parquet) {stop_s:.2f} s"
    )
    if long_cpu:
        main_cpu, conv_cpu = long_cpu
        print(
            f"CPU while recording: bench process (receive loop, simulator, polling) "
            f"{main_cpu:.1f} s = {main_cpu / args.messages * 1e6:.2f} us/message; converter "
            f"process {conv_cpu:.1f} s = {conv_cpu / args.messages * 1e6:.2f} us/message "
            f"(the rest of its work runs during the stop)"
        )
    print(
        f"rows in Parquet: {recorded:,} (dropped {stats.dropped}), files {stats.files}, "
        f"size on disk {_size_mib(root / 'long'):,.1f} MiB"
    )
    print(f"{'messages so far':>16} {'RSS MiB (recorder + converter)':>31}")
    step = max(1, len(samples) // 12)
    shown = samples[::step]
    if shown[-1] is not samples[-1]:
        shown.append(samples[-1])
    for msgs, rss in shown:
        print(f"{msgs:>16,} {rss / 2**20:>31.1f}")
    warm_rss = [rss for msgs, rss in samples if msgs >= args.messages * 0.2]
    if warm_rss:
        low, high = min(warm_rss) / 2**20, max(warm_rss) / 2**20
        print(f"RSS after 20 %: min {low:.1f} MiB, max {high:.1f} MiB, growth {high - low:.1f} MiB")
    for label, rss in phases:
        print(f"RSS {label}: {rss / 2**20:.1f} MiB")
    print(
        f"target recorder RSS <= 300 MiB (recorder + converter, peak of the long run): "
        f"{_verdict(long_peak <= 300 * 2**20)} ({long_peak / 2**20:.1f} MiB)"
    )
    print(
        f"target 0 dropped over {args.messages:,} messages: {_verdict(stats.dropped == 0)} "
        f"({stats.dropped} dropped, {recorded:,} rows in Parquet)"
    )
    print(
        f"\nTyped event decoding, ns per message of the bench's stream "
        f"({args.order_share:.0%} orders, best of 5)"
    )
    from _decoders import decoders

    for name, ns in decoders(_messages(20_000, args.order_share)):
        print(f"  {name:34} {ns:>8,.0f}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    # a dropped message is a failure of the run, whatever the rates
    return 0 if no_drops and recorded == args.messages else 1


if __name__ == "__main__":
    sys.exit(main())
