"""The offline end-to-end demo behind ``toolkit demo`` and ``make demo``: simulator,
activity through the toolkit itself, a recording, an order store, exports and the report."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: what the recorder captures during the demo
DEMO_CHANNELS = ("watchOrders", "watchTicker:BTC/BRL", "watchTickers", "watchBalance")
#: seconds the recorder may take to have every channel subscribed (well under 1 s, even
#: on a busy machine: it subscribes first, its converter starts beside it)
SUBSCRIBE_TIMEOUT = 60.0
#: the file that marks a folder as a demo's output, so a later run may clear it
MARKER = ".toolkit-demo"


def prepare_out(out: str | Path) -> tuple[Path, str]:
    """The folder this run writes to, clean, and a sentence saying which it is: ``out``
    itself when it is new, empty or a previous demo's output (cleared); otherwise (a
    folder holding other files, which the demo never deletes) a timestamped subfolder."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} is a file")
    if not out.exists() or not any(out.iterdir()):
        out.mkdir(parents=True, exist_ok=True)
        note = f"output folder {out} (new, empty)"
    elif (out / MARKER).is_file():
        for child in out.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        note = f"output folder {out} (the previous demo run there was cleared)"
    else:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        target = out / f"demo-{stamp}"
        target.mkdir()
        note = (
            f"output folder {target} ({out} holds other files, left untouched: this run "
            "went to a new timestamped folder)"
        )
        out = target
    (out / MARKER).write_text("written by toolkit demo; the next run may clear this folder\n")
    return out, note


@dataclass
class DemoResult:
    """Where the demo put everything, and what it did."""

    out: Path
    recording: Path
    parquet: dict[str, Path]
    csv: dict[str, Path]
    report_html: Path
    report_tables: Path
    orders: int
    fills: int
    recorded_messages: int
    store: Path | None = None
    out_note: str = ""
    #: orders by where the store found them (listing, recording, ids)
    sources: dict[str, int] = field(default_factory=dict)
    coverage_warnings: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    cancel_outcomes: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> str:
        found = ", ".join(f"{n} from {s}" for s, n in self.sources.items() if n)
        lines = [
            f"demo finished in {self.seconds:.1f} s; everything is under {self.out}",
            f"  {self.out_note}" if self.out_note else "",
            f"  orders in the store {self.orders} ({found}; {self.fills} fills)",
            f"  order store         {self.store}",
            f"  limit orders made   {len(self.created)}; cancels: "
            + ", ".join(f"{oid}={outcome}" for oid, outcome in self.cancel_outcomes.items()),
            f"  recording           {self.recording} ({self.recorded_messages} messages)",
            f"  exports (Parquet)   {self.parquet['fills'].parent}",
            f"  exports (CSV)       {self.csv['fills'].parent}",
            f"  report              {self.report_html}",
            f"  report tables       {self.report_tables}",
            *(f"  note: {w}" for w in self.coverage_warnings),
        ]
        return "\n".join(line for line in lines if line)


async def _live_prices(client: Any) -> dict[str, float]:
    """The last price of every pair, from the first watchTickers message."""
    from toolkit.stream._events import TickersEvent

    async with client.stream() as session:
        await session.subscribe("watchTickers")
        async for event in session:
            if isinstance(event, TickersEvent):
                return {t.symbol: t.last for t in event.tickers}
    raise RuntimeError("the ticker stream ended before the first prices")


async def arun_demo(
    out: str | Path,
    *,
    seed: int = 7,
    record_seconds: float = 8.0,
    history_orders: int = 2000,
    log: Callable[[str], None] = print,
) -> DemoResult:
    """Run the whole demo into ``out``; see the module docstring."""
    from toolkit.recording._recorder import Recorder
    from toolkit.report import execution_report
    from toolkit.sim import Simulator
    from toolkit.store import OrderStore

    started = time.monotonic()
    out, out_note = prepare_out(out)
    log(out_note)
    recording = out / "recording"
    sim = Simulator(
        seed=seed,
        history_orders=history_orders,
        engine=True,
        tick_interval_s=0.25,
        order_interval_s=0.8,
    )
    await asyncio.to_thread(sim.start)
    try:
        log(f"simulator: REST {sim.base_url}  WebSocket {sim.ws_url}")
        control = sim.control
        async with sim.client() as client:
            rec = Recorder(client, recording, channels=DEMO_CHANNELS, flush_interval=0.5)
            rec.start()
            # every channel subscribed before any activity: every notification is recorded
            await rec.wait_subscribed(timeout=SUBSCRIBE_TIMEOUT)
            log(f"recording {', '.join(DEMO_CHANNELS)} to {recording}")

            # activity through the toolkit itself: limit orders around the live prices
            prices = await _live_prices(client)
            btc, eth, sol = prices["BTC/BRL"], prices["ETH/BRL"], prices["SOL/BRL"]
            plan: list[tuple[str, str, float, str]] = [
                ("BTC/BRL", "buy", btc * 0.995, "0.002"),  # triggers when the price dips
                ("BTC/BRL", "sell", btc * 1.005, "0.002"),  # triggers when the price rises
                ("BTC/BRL", "buy", btc * 0.8, "0.001"),  # far away: cancelled below
                ("ETH/BRL", "buy", eth * 0.7, "0.05"),  # far away: cancelled in a batch
                ("SOL/BRL", "sell", sol * 1.5, "1"),  # far away: cancelled in a batch
                ("BTC/BRL", "buy", btc * 0.7, "0.001"),  # stays OPEN
            ]
            created: list[str] = []
            for symbol, side, price, amount in plan:
                order = await client.acreate_limit_order(
                    symbol, side, f"{price:.2f}", amount=amount
                )
                created.append(order["id"])
            log(f"created {len(created)} limit orders: {', '.join(created)}")

            outcomes: dict[str, str] = {}
            single = await client.acancel_limit_order(created[2], reason="demo: too far")
            outcomes[single.order_id] = single.outcome.value
            for result in await client.acancel_limit_orders(created[3:5], reason="demo batch"):
                outcomes[result.order_id] = result.outcome.value
            log("cancels: " + ", ".join(f"{k} {v}" for k, v in outcomes.items()))

            for symbol, side, amount in (
                ("BTC/BRL", "buy", "0.01"),
                ("ETH/BRL", "sell", "0.5"),
                ("SOL/BRL", "buy", "3"),
                ("USDT/BRL", "buy", "500"),
            ):
                await asyncio.to_thread(
                    control.market_order, symbol=symbol, side=side, amount=amount
                )
            await asyncio.to_thread(control.move_price, "BTC/BRL", round(btc * 0.99, 2))
            await asyncio.to_thread(control.move_price, "BTC/BRL", round(btc * 1.01, 2))
            log(f"placed market orders and moved prices; recording for {record_seconds:.0f} s")
            stats = await rec.stop(after=record_seconds)  # it records until then
            log(f"recorded {stats.messages} messages in {stats.files} files")

            # the store: the listing (limit orders), the recording's watchOrders ids, and
            # the simulator's own list of the account standing in for the user's records
            # of older market orders (the real service lists no market orders)
            ids = await asyncio.to_thread(control.order_ids, "A1")
            store = OrderStore(out / "store")
            synced = await store.async_sync(client, recordings=[recording], ids=ids)
            log(synced.summary())
        frames = store.frames()
        coverage = frames.attrs["coverage"]
        log(f"the store holds {len(frames.orders)} orders, {len(frames.fills)} fills")

        parquet = frames.to_parquet(out / "exports" / "parquet")
        csv = frames.to_csv(out / "exports" / "csv")
        # the root: the report reads watchticker and watchtickers (one row per pair) and
        # the _session rows that say where the recording has gaps
        report = execution_report(frames, recording)
        report_html = out / "report.html"
        report.to_html(report_html)
        report_tables = out / "report_tables"
        report.to_parquet(report_tables)
    finally:
        await asyncio.to_thread(sim.stop)

    return DemoResult(
        out=out,
        recording=recording,
        parquet={k: Path(v) for k, v in parquet.items()},
        csv={k: Path(v) for k, v in csv.items()},
        report_html=report_html,
        report_tables=report_tables,
        orders=len(frames.orders),
        fills=len(frames.fills),
        recorded_messages=stats.messages,
        store=store.root,
        out_note=out_note,
        sources=dict(coverage["by_source"]),
        coverage_warnings=list(coverage["warnings"]),
        created=created,
        cancel_outcomes=outcomes,
        seconds=time.monotonic() - started,
    )


def run_demo(out: str | Path, **options: Any) -> DemoResult:
    """Synchronous :func:`arun_demo` for scripts and the command line."""
    return asyncio.run(arun_demo(out, **options))
