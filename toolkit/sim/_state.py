"""Everything the running simulator knows: order stores per account, the lagging listing
replica and its pagination tokens, balances, and the lifecycle commands that publish events."""

from __future__ import annotations

import asyncio
import heapq
import random
import secrets
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Literal

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.sim._accounts import PROFILES, TokenStore
from toolkit.sim._bus import Bus
from toolkit.sim._engine import Engine, Market
from toolkit.sim._history import generate_history
from toolkit.sim._ids import WireIdsMixin
from toolkit.sim._knobs import Knobs
from toolkit.sim._listing import ListingMixin, RateLimiter, _Index
from toolkit.sim._listing import retry_after_header as retry_after_header
from toolkit.sim._orders import (
    ACTIVE,
    EXECUTING,
    LIMIT_FINAL,
    MARKET_FINAL,
    Order,
    format_order,
    list_item,
    make_fill,
    make_quotes,
    q,
)
from toolkit.sim._shape import Shape
from toolkit.sim._wallet import INITIAL_BALANCES, WalletMixin

SYMBOLS: tuple[str, ...] = ("BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL")
PRIORITY_SYMBOLS: tuple[str, ...] = ("BTC/BRL", "ETH/BRL")
#: outcome-only mode (spec 6, cancel route's reading): limit orders publish just these
OUTCOME_STATUSES = frozenset({"PROCESSING", "EXECUTED", "CLOSED"})
LIMIT_CHAIN = ("OPEN", "TRIGGERED", "PROCESSING", "EXECUTED", "CLOSED")
MARKET_CHAIN = ("PENDING", "EXECUTED", "CLOSED")

CancelOutcome = Literal["accepted", "executing", "cancelling", "final", "not_found"]


class InvalidCommand(ValueError):
    """A control or REST command that the order's state does not allow."""


class SimState(ListingMixin, WalletMixin, WireIdsMixin):
    """The simulator's state; also what the WebSocket handler reads (``app.state.sim``).

    Balances live in :class:`~toolkit.sim._wallet.WalletMixin`, the listing replica and
    its pagination tokens in :class:`~toolkit.sim._listing.ListingMixin`."""

    def __init__(
        self,
        knobs: Knobs,
        *,
        now_ms: int | None = None,
        profile: ServiceProfile = DEFAULT_PROFILE,
    ) -> None:
        self.knobs = knobs
        #: the service profile served; ``shape`` renders canonical data in its forms
        self.profile = profile
        self.shape = Shape(profile, knobs)
        self.tokens = TokenStore(knobs.token_ttl_s)
        self.bus = Bus()
        self.symbols = SYMBOLS
        self.priority_symbols = PRIORITY_SYMBOLS
        self.market = Market(knobs.seed, SYMBOLS)
        self.rate_limiter = RateLimiter()
        self.rng = random.Random(knobs.seed * 1_000_003 + 1)
        self._rng503 = random.Random(knobs.seed + 503)
        self._token_key = secrets.token_bytes(32)
        self.orders: dict[str, Order] = {}
        self.by_account: dict[str, list[str]] = {a: [] for a in PROFILES}
        self._index: dict[str, _Index] = {a: _Index() for a in PROFILES}
        self._client_ids: dict[str, set[str]] = {a: set() for a in PROFILES}
        self._open: dict[str, Order] = {}
        #: orders whose deferred cancel (``cancel_deferred``) came through the batch route:
        #: honoured without a CANCELLING event (spec 3.2)
        self._deferred_by_batch: set[str] = set()
        # OPEN limit orders by how soon a price move fires them: buys by highest limit,
        # sells by lowest; entries go stale when an order leaves OPEN and are skipped
        self._buys: dict[str, list[tuple[Decimal, str]]] = {s: [] for s in SYMBOLS}
        self._sells: dict[str, list[tuple[Decimal, str]]] = {s: [] for s in SYMBOLS}
        self.events: dict[str, list[str]] = {}
        self.balances: dict[str, dict[str, list[Decimal]]] = {
            a: {asset: [amt, Decimal(0)] for asset, amt in b.items()}
            for a, b in INITIAL_BALANCES.items()
        }
        now = self.now_ms() if now_ms is None else now_ms
        # the history is anchored on the hour so one seed gives one history for a while
        anchor = now // 3_600_000 * 3_600_000
        history, self._next_seq = generate_history(knobs.seed, knobs.history_orders, anchor)
        for order in history:
            self._add(order)
            if order.is_limit and order.status in ACTIVE:
                self._lock(order, force=True)
                if order.status == "OPEN":
                    self._watch(order)
        self.engine = Engine(self)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handles: set[asyncio.TimerHandle] = set()

    # ---------------------------------------------------------------- plumbing
    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Called on the server loop at startup: timers and the engine live there."""
        self._loop = loop
        for order in list(self._open.values()):
            self._schedule_expiry(order)
        if self.knobs.engine:
            self.engine.start()

    async def close(self) -> None:
        await self.engine.stop()
        for handle in self._handles:
            handle.cancel()
        self._handles.clear()

    async def set_engine(self, running: bool) -> None:
        self.knobs.engine = running
        if running:
            self.engine.start()
        else:
            await self.engine.stop()

    def _later(self, delay_s: float, fn: Callable[..., None], *args: Any) -> None:
        if self._loop is None:
            return
        handle: asyncio.TimerHandle | None = None

        def run() -> None:
            if handle is not None:
                self._handles.discard(handle)
            fn(*args)

        handle = self._loop.call_later(max(delay_s, 0.0), run)
        self._handles.add(handle)

    def _next_id(self, kind: str) -> str:
        seq = self._next_seq
        self._next_seq += 1
        return f"{kind}-{seq:06d}-{self.rng.getrandbits(16):04x}"

    def _add(self, order: Order) -> None:
        self.orders[order.id] = order
        self.by_account.setdefault(order.account, []).append(order.id)
        if order.is_limit:
            self._index.setdefault(order.account, _Index()).add(order)

    def _stamp(self, order: Order) -> int:
        step = self.knobs.updated_at_resolution_ms
        if step <= 1:
            # strictly increasing, so reconciliation by updatedAt never sees two states tie
            order.updated_at = max(self.now_ms(), order.updated_at + 1)
        else:
            # on the knob's grid and never backwards: states within one step tie
            order.updated_at = max(self.now_ms() // step, -(-order.updated_at // step)) * step
        return order.updated_at

    def _transition(self, order: Order, to: str, *, publish: bool = True) -> None:
        order.materialize()
        if order.is_limit and order.versions is None:
            # first change of a history order: the replica still knows its old state
            order.versions = [(0, list_item(order))]
        order.status = to
        now = self._stamp(order)
        if to in LIMIT_FINAL:
            self._deferred_by_batch.discard(order.id)  # a deferred cancel never honoured
        if order.is_limit:
            if to == "OPEN":
                self._watch(order)
            else:
                self._open.pop(order.id, None)
            assert order.versions is not None
            order.versions.append((now, list_item(order)))
        if publish:
            self._publish_order(order)

    def _watch(self, order: Order) -> None:
        self._open[order.id] = order
        assert order.limit_price is not None
        if order.side == "buy":
            heapq.heappush(self._buys.setdefault(order.symbol, []), (-order.limit_price, order.id))
        else:
            heapq.heappush(self._sells.setdefault(order.symbol, []), (order.limit_price, order.id))

    def _publish_order(self, order: Order) -> None:
        knobs = self.knobs
        outcome_only = knobs.limit_events == "outcome_only"
        if order.is_limit and outcome_only and order.status not in OUTCOME_STATUSES:
            return
        message = self.format(order)
        self.events.setdefault(order.id, []).append(message["status"])
        self.bus.publish(("watchorders", order.account), message, account=order.account)

    def format(self, order: Order) -> dict[str, Any]:
        """fetchOrder body == watchOrders message, in the profile's shape."""
        knobs, shape = self.knobs, self.shape
        body = format_order(order, knobs.status_case, knobs.service_name, shape.active)
        return shape.order(self.on_wire(order, body))

    # ---------------------------------------------------------------- tickers
    def publish_tickers(self, symbols: tuple[str, ...] | None = None) -> None:
        now, shape = self.now_ms(), self.shape
        tickers = [shape.ticker(self.market.ticker(sym, now)) for sym in self.symbols]
        for sym, ticker in zip(self.symbols, tickers, strict=True):
            if symbols is None or sym in symbols:
                self.bus.publish(("watchticker", sym), ticker)
        self.bus.publish(("watchtickers", None), shape.tickers(tickers, self.symbols))

    # ---------------------------------------------------------------- limit orders
    def create_limit(
        self,
        account: str,
        profile: str,
        symbol: str,
        side: str,
        amount: Decimal | None,
        quote_amount: Decimal | None,
        limit_price: Decimal,
        expires_at: int,
        client_order_id: str | None,
    ) -> Order:
        """A validated request becomes OPEN, or REJECTED for a duplicate clientOrderId or
        an insufficient balance; either way the order exists and is returned."""
        now = self.now_ms()
        if amount is None:
            assert quote_amount is not None
            amount = q(quote_amount / limit_price, 8)
            quote_original = q(quote_amount, 2)
        else:
            quote_original = q(amount * limit_price, 2)
        _, bid_venue, _, ask_venue = self.market.best(symbol)
        order = Order(
            id=self._next_id("l"),
            account=account,
            profile=profile,
            type="limit",
            symbol=symbol,
            side=side,
            status="OPEN",
            created_at=now,
            updated_at=now - 1,
            amount=amount,
            quote_amount_original=quote_original,
            channel="api",
            rule="best_price",
            service_managed=self.rng.random() < 0.5,
            exchange=ask_venue if side == "buy" else bid_venue,
            tier=self.rng.randrange(3),
            order_pool_id=f"pool-{self.rng.getrandbits(32):08x}",
            limit_price=limit_price,
            expires_at=expires_at,
            client_order_id=client_order_id,
        )
        order.versions = []
        duplicate = bool(client_order_id) and client_order_id in self._client_ids.get(
            account, set()
        )
        if client_order_id and not duplicate:
            self._client_ids.setdefault(account, set()).add(client_order_id)
        self._add(order)
        if duplicate:
            self._reject(order, "duplicate")
        elif not self._lock(order):
            self._reject(order, "insufficient balance")
        else:
            self._transition(order, "OPEN")
            self._schedule_expiry(order)
            self.publish_balance(account)
        return order

    def _reject(self, order: Order, reason: str) -> None:
        order.status_reason = reason
        order.error_message = reason
        locked = order.lock is not None
        self._unlock(order)
        self._transition(order, "REJECTED")
        if locked:
            self.publish_balance(order.account)

    def _schedule_expiry(self, order: Order) -> None:
        if order.expires_at is not None:
            self._later((order.expires_at - self.now_ms()) / 1000, self._expire, order.id)

    def _expire(self, order_id: str) -> None:
        order = self.orders.get(order_id)
        if order is None or order.status != "OPEN":
            return
        if order.expires_at is not None and order.expires_at > self.now_ms():
            self._schedule_expiry(order)  # timers may fire a hair early
            return
        self._unlock(order)
        order.status_reason = "expired"
        self._transition(order, "EXPIRED")
        self.publish_balance(order.account)

    def find(self, account: str, order_id: str, profile: str | None = None) -> Order | None:
        order = self.lookup(order_id)
        if order is None or order.account != account:
            return None
        if profile is not None and order.profile != profile:
            return None
        return order

    def cancel(
        self, account: str, profile: str, order_id: str, reason: str | None, *, batch: bool = False
    ) -> tuple[CancelOutcome, Order | None]:
        """Spec 3.2 / 4.3: only OPEN cancels at once; while executing the request is kept
        and honoured on a re-arm; CANCELLING and finalized orders are left alone."""
        order = self.find(account, order_id, profile)
        if order is None or not order.is_limit:
            return "not_found", None
        if order.status == "OPEN":
            order.cancel_requested_at = self.now_ms()
            order.cancel_reason = reason or "requested by user"
            self._start_cancel(order, publish=not batch)
            return "accepted", order
        if order.status in EXECUTING:
            if not order.cancel_deferred:
                # the first request is the one recorded: its reason and its route
                order.cancel_deferred = True
                order.cancel_reason = reason or "requested by user"
                if batch:
                    self._deferred_by_batch.add(order.id)
            return "executing", order
        if order.status == "CANCELLING":
            return "cancelling", order
        return "final", order

    def _start_cancel(self, order: Order, *, publish: bool = True) -> None:
        order.cancel_deferred = False
        self._deferred_by_batch.discard(order.id)
        self._transition(order, "CANCELLING", publish=publish)
        self._later(float(self.knobs.cancel_completion_s), self._complete_cancel, order.id)

    def _complete_cancel(self, order_id: str) -> None:
        order = self.orders.get(order_id)
        if order is None or order.status != "CANCELLING" or order.held:
            return
        self._unlock(order)
        order.status_reason = order.cancel_reason or "requested by user"
        self._transition(order, "CANCELLED")
        self.publish_balance(order.account)

    def check_triggers(self, symbol: str, *, may_fail: bool = False) -> list[str]:
        """Trigger every OPEN limit order the current prices cross: a buy when the best
        ask is at or below its limit, a sell when the best bid is at or above it."""
        bid, bid_venue, ask, ask_venue = self.market.best(symbol)
        fired: list[str] = []
        buys, sells = self._buys.get(symbol, []), self._sells.get(symbol, [])
        while buys and -buys[0][0] >= ask:
            _, order_id = heapq.heappop(buys)
            if self._fire(order_id, ask, ask_venue, may_fail):
                fired.append(order_id)
        while sells and sells[0][0] <= bid:
            _, order_id = heapq.heappop(sells)
            if self._fire(order_id, bid, bid_venue, may_fail):
                fired.append(order_id)
        return fired

    def _fire(self, order_id: str, price: Decimal, venue: str, may_fail: bool) -> bool:
        order = self.orders[order_id]
        if order.status != "OPEN" or order.held:
            return False  # a stale heap entry: the order left OPEN since it was pushed
        self._trigger(order, price, venue)
        self._later(float(self.knobs.execution_step_s), self._step, order.id, may_fail)
        return True

    def _trigger(self, order: Order, price: Decimal, venue: str) -> None:
        order.trigger = {
            "triggerPrice": format(price, "f"),
            "triggerExchange": venue,
            "triggeredAt": self.now_ms(),
        }
        self._transition(order, "TRIGGERED")

    def _quote(self, order: Order) -> tuple[str, Decimal]:
        order.materialize()
        bid, _, ask, _ = self.market.best(order.symbol)
        ref = ask if order.side == "buy" else bid
        if order.limit_price is not None:
            ref = (
                min(ref, order.limit_price) if order.side == "buy" else max(ref, order.limit_price)
            )
        quotes, venue, price = make_quotes(
            self.rng, order.symbol, order.side, ref, self.now_ms(), order.rule
        )
        order.quotes = quotes
        if not order.service_managed:
            order.exchange = venue
        return venue, price

    def _execute(self, order: Order) -> None:
        order.materialize()
        if not order.quotes:
            self._quote(order)
        assert order.quotes
        healthy = [t for t in order.quotes if "reason" not in t]
        pick = (
            min(healthy, key=lambda t: Decimal(t["price"]))
            if order.side == "buy"
            else max(healthy, key=lambda t: Decimal(t["price"]))
        )
        venue, price = pick["exchange"], Decimal(pick["price"])
        if not order.service_managed:
            order.exchange = venue
        now = self.now_ms()
        order.fill = make_fill(self.rng, order, venue, price, now, taker=not order.is_limit)
        order.executed_at = now

    def _step(self, order_id: str, may_fail: bool = False) -> None:
        """One beat of the execution cycle: TRIGGERED -> PROCESSING -> EXECUTED -> closed;
        a recoverable failure (engine only, knob ``rearm_rate``) re-arms to OPEN."""
        order = self.orders.get(order_id)
        if order is None or order.held:
            return
        if order.status == "TRIGGERED":
            if may_fail and self.rng.random() < float(self.knobs.rearm_rate):
                self._rearm(order)
                return
            self._quote(order)
            self._transition(order, "PROCESSING")
        elif order.status == "PROCESSING":
            self._execute(order)
            self._transition(order, "EXECUTED")
        elif order.status == "EXECUTED":
            self._transition(order, "CLOSED")
            self._settle(order)
            return
        else:
            return
        self._later(float(self.knobs.execution_step_s), self._step, order_id, may_fail)

    def _rearm(self, order: Order) -> None:
        order.held = False
        order.trigger = None
        order.quotes = None
        order.status_reason = "re-armed after a recoverable execution failure"
        self._transition(order, "OPEN")
        if order.cancel_deferred:
            order.cancel_requested_at = self.now_ms()
            self._start_cancel(order, publish=order.id not in self._deferred_by_batch)
        elif order.expires_at is not None and order.expires_at <= self.now_ms():
            self._expire(order.id)
        else:
            self._schedule_expiry(order)

    # ---------------------------------------------------------------- control
    def advance(self, order_id: str, to: str, reason: str | None = None) -> Order:
        """Put an order in state ``to`` (publishing each step a real run would) and hold
        it there: no automatic progress until another advance or a re-arm."""
        order = self.lookup(order_id)
        if order is None:
            raise KeyError(order_id)
        to = to.upper()
        if order.status == to:
            order.held = to not in ("OPEN",)
            return order
        chain = LIMIT_CHAIN if order.is_limit else MARKET_CHAIN
        final = LIMIT_FINAL if order.is_limit else MARKET_FINAL
        if order.status in final:
            raise InvalidCommand(f"order is already {order.status}")
        if to == "OPEN" and order.is_limit:
            if order.status not in EXECUTING:
                raise InvalidCommand(f"only an executing order re-arms, not {order.status}")
            self._rearm(order)
            return order
        if to == "REJECTED":
            if order.status == "CANCELLING":
                raise InvalidCommand("a cancelling order cannot be rejected")
            reason = reason or "unrecoverable failure"
            if order.is_limit:
                self._reject(order, reason)
            else:
                order.error_message = reason
                self._transition(order, "REJECTED")
            return order
        if to == "EXPIRED":
            if order.status != ("OPEN" if order.is_limit else "PENDING"):
                raise InvalidCommand(f"cannot expire from {order.status}")
            self._unlock(order)
            order.status_reason = reason or "expired"
            self._transition(order, "EXPIRED")
            if order.is_limit:
                self.publish_balance(order.account)
            return order
        if to == "CANCELLED" and order.status == "CANCELLING":
            order.held = False
            self._complete_cancel(order.id)
            return order
        if (
            to not in chain
            or order.status not in chain
            or chain.index(to) < chain.index(order.status)
        ):
            raise InvalidCommand(f"cannot go from {order.status} to {to}")
        order.held = True
        for step in chain[chain.index(order.status) + 1 : chain.index(to) + 1]:
            if step == "TRIGGERED":
                bid, bid_venue, ask, ask_venue = self.market.best(order.symbol)
                if order.side == "buy":
                    self._trigger(order, ask, ask_venue)
                else:
                    self._trigger(order, bid, bid_venue)
            elif step == "PROCESSING":
                self._quote(order)
                self._transition(order, "PROCESSING")
            elif step == "EXECUTED":
                self._execute(order)
                self._transition(order, "EXECUTED")
            elif step == "CLOSED":
                if order.fill is None:
                    self._execute(order)
                self._transition(order, "CLOSED")
                self._settle(order)
        return order

    def market_order(
        self,
        account: str,
        symbol: str,
        side: str,
        amount: Decimal | None,
        quote_amount: Decimal | None,
        outcome: str = "closed",
    ) -> Order:
        """A market order through its cycle at once: pending, then executed and closed,
        or rejected (also when the balance cannot pay), or left pending."""
        bid, _, ask, _ = self.market.best(symbol)
        ref = ask if side == "buy" else bid
        if amount is None:
            assert quote_amount is not None
            amount = q(quote_amount / ref, 8)
        quote = q(quote_amount if quote_amount is not None else amount * ref, 2)
        now = self.now_ms()
        rfq = outcome == "expired" or self.rng.random() < 0.1
        order = Order(
            id=self._next_id("m"),
            account=account,
            profile=PROFILES.get(account, ("P1",))[0],
            type="market",
            symbol=symbol,
            side=side,
            status="PENDING",
            created_at=now,
            updated_at=now - 1,
            amount=amount,
            quote_amount_original=quote,
            channel=self.rng.choice(("api", "web", "mobile")),
            rule="rfq" if rfq else self.rng.choice(("best_price", "lowest_fee", "liquidity")),
            service_managed=self.rng.random() < 0.6,
            tier=self.rng.randrange(3),
            operational_fees=Decimal(self.rng.choice(("0", "0.50", "1.00"))),
            order_pool_id=f"pool-{self.rng.getrandbits(32):08x}",
        )
        self._add(order)
        _, price = self._quote(order)
        if rfq:
            order.rfq = {
                "quoteId": f"q-{self.rng.getrandbits(40):010x}",
                "quotedPrice": format(price, "f"),
                "quotedAt": now,
                "validUntil": now + 10_000,
            }
        self._transition(order, "PENDING")
        if outcome in ("closed", "executed") and not self._can_afford(
            account, symbol, side, amount, quote
        ):
            order.error_message = "insufficient balance"
            self._transition(order, "REJECTED")
        elif outcome in ("closed", "executed"):
            self._execute(order)
            self._transition(order, "EXECUTED")
            if outcome == "closed":
                self._transition(order, "CLOSED")
                self._settle(order)
        elif outcome == "rejected":
            order.error_message = "venue rejected the order"
            self._transition(order, "REJECTED")
        elif outcome == "expired":
            self._transition(order, "EXPIRED")
        return order

    def move_price(self, symbol: str, price: Decimal) -> list[str]:
        self.market.move(symbol, price)
        self.publish_tickers((symbol,))
        return self.check_triggers(symbol)
