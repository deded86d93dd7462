"""The simulator's live market: a seeded random walk of prices per venue, and the engine loop
that ticks it, publishes tickers and keeps market and limit orders happening."""

from __future__ import annotations

import asyncio
import contextlib
import random
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from toolkit.sim._orders import PRICE_DP, REFERENCE_PRICES, VENUES, price_str, q

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.sim._state import SimState

#: half of a venue's bid/ask spread, and how far a venue's mid strays from the symbol's;
#: the stray is below the half spread, so the best bid never crosses the best ask
HALF_SPREAD = Decimal("0.0010")
MAX_STRAY = 6  # in 1/10000


class Market:
    """Prices of every symbol at every venue (sans-I/O: the engine calls ``step``)."""

    def __init__(self, seed: int, symbols: tuple[str, ...]) -> None:
        self._rng = random.Random(seed * 7919 + 13)
        self.symbols = symbols
        self.center: dict[str, Decimal] = {
            s: REFERENCE_PRICES.get(s, Decimal(100)) for s in symbols
        }
        self.stray: dict[tuple[str, str], Decimal] = {}
        self.last: dict[str, Decimal] = dict(self.center)
        for sym in symbols:
            self._restray(sym)

    def _restray(self, symbol: str) -> None:
        for venue in VENUES:
            self.stray[(symbol, venue)] = Decimal(self._rng.randint(-MAX_STRAY, MAX_STRAY)) / 10000

    def step(self) -> None:
        """One tick of the walk: each symbol moves a few basis points, venues jitter."""
        for sym in self.symbols:
            move = Decimal(round(self._rng.gauss(0, 8))) / 10000
            self.center[sym] = q(self.center[sym] * (1 + move), PRICE_DP.get(sym, 2) + 2)
            for venue in VENUES:
                old = self.stray[(sym, venue)]
                nudge = Decimal(self._rng.randint(-2, 2)) / 10000
                bound = Decimal(MAX_STRAY) / 10000
                self.stray[(sym, venue)] = max(-bound, min(bound, old + nudge))
            self.last[sym] = self.venue_mid(sym, self._rng.choice(VENUES))

    def move(self, symbol: str, price: Decimal) -> None:
        """Every venue of ``symbol`` jumps to around ``price`` (control API)."""
        self.center[symbol] = price
        self._restray(symbol)
        self.last[symbol] = price

    def venue_mid(self, symbol: str, venue: str) -> Decimal:
        return self.center[symbol] * (1 + self.stray[(symbol, venue)])

    def venue_price(self, symbol: str, venue: str, side: str) -> Decimal:
        """What ``venue`` charges a buyer (its ask) or pays a seller (its bid)."""
        mid = self.venue_mid(symbol, venue)
        px = mid * (1 + HALF_SPREAD) if side == "buy" else mid * (1 - HALF_SPREAD)
        return q(px, PRICE_DP.get(symbol, 2))

    def best(self, symbol: str) -> tuple[Decimal, str, Decimal, str]:
        """(best bid, its venue, best ask, its venue) across venues."""
        bids = [(self.venue_price(symbol, v, "sell"), v) for v in VENUES]
        asks = [(self.venue_price(symbol, v, "buy"), v) for v in VENUES]
        bid, bid_venue = max(bids)
        ask, ask_venue = min(asks)
        return bid, bid_venue, ask, ask_venue

    def ticker(self, symbol: str, now_ms: int) -> dict[str, Any]:
        bid, _, ask, _ = self.best(symbol)
        return {
            "symbol": symbol,
            "bid": format(bid, "f"),
            "ask": format(ask, "f"),
            "last": price_str(symbol, self.last[symbol]),
            "timestamp": now_ms,
        }


class Engine:
    """The background activity of ``knobs.engine``: ticks, random orders, triggers."""

    def __init__(self, state: SimState) -> None:
        self._state = state
        self._rng = random.Random(state.knobs.seed * 31 + 5)
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="sim-engine")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        state = self._state
        while True:
            interval = max(float(state.knobs.tick_interval_s), 0.01)
            await asyncio.sleep(interval)
            self.tick(interval)

    def tick(self, interval: float) -> None:
        """One engine step; separate from the loop so it can be driven directly."""
        state = self._state
        state.market.step()
        state.publish_tickers()
        for sym in state.symbols:
            state.check_triggers(sym, may_fail=True)
        mean = float(state.knobs.order_interval_s)
        if mean > 0 and self._rng.random() < interval / mean:
            self._random_market_order()
        if mean > 0 and self._rng.random() < interval / (mean * 3):
            self._random_limit_order()

    def _random_market_order(self) -> None:
        state = self._state
        sym = self._rng.choice(state.symbols)
        side = self._rng.choice(("buy", "sell"))
        value = Decimal(self._rng.choice((100, 250, 500, 1000, 2000)))
        outcome = "rejected" if self._rng.random() < 0.05 else "closed"
        state.market_order("A1", sym, side, None, value, outcome)

    def _random_limit_order(self) -> None:
        state = self._state
        sym = self._rng.choice(state.symbols)
        side = self._rng.choice(("buy", "sell"))
        bid, _, ask, _ = state.market.best(sym)
        # close enough to the market that the walk crosses some of them
        off = Decimal(self._rng.randint(2, 30)) / 10000
        limit = ask * (1 - off) if side == "buy" else bid * (1 + off)
        limit = q(limit, PRICE_DP.get(sym, 2))
        value = Decimal(self._rng.choice((100, 500, 1000)))
        expires = state.now_ms() + self._rng.randint(20, 600) * 1000
        state.create_limit("A1", "P1", sym, side, None, value, limit, expires, None)
