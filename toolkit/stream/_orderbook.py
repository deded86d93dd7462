"""The reconciled state of the account's orders: fed by ``watchOrders`` notifications and
by REST, which is the source of truth (spec section 6), and re-read after every gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from toolkit.errors import InvalidRequest, ToolkitError, TransportError
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.stream._book_inbox import BookInbox
from toolkit.stream._book_reconcile import (
    Outage,
    ReconcilePlan,
    Reconciler,
    ReconcileStats,
    settle_delay,
)
from toolkit.stream._events import FINAL_STATUSES, OrderEvent, order_event
from toolkit.stream._own_orders import watch_own_orders
from toolkit.stream._ports import OrderSource

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from toolkit.stream._session import StreamSession

__all__ = ["OrderBook", "OrderState", "Transition"]

_log = logging.getLogger("toolkit.orderbook")

#: how far along its life cycle a status is; breaks ties between two states stamped with
#: the same ``updatedAt`` (a cycle can pass several statuses within one millisecond) when
#: arrival order cannot (not two notifications of one connection, in order)
_PROGRESS = {
    "PENDING": 0,
    "OPEN": 0,
    "TRIGGERED": 1,
    "PROCESSING": 2,
    "CANCELLING": 2,
    "EXECUTED": 3,
}
_FINAL_PROGRESS = 4
#: the re-arm of spec 3.2 ("order watches again"): back to OPEN from these
_REARM_FROM = frozenset({"TRIGGERED", "PROCESSING"})
#: reconcile period when the service publishes only execution outcomes on watchOrders
#: (profile ``stream.limit_events`` = ``outcome_only``) and none was given
OUTCOME_ONLY_RECONCILE_S = 5.0


def _check_int(name: str, value: object, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidRequest(f"{name} must be an integer >= {least}, not {value!r}")


def _progress(status: str) -> int:
    return _FINAL_PROGRESS if status in FINAL_STATUSES else _PROGRESS.get(status, 1)


def _arrived_later(event: OrderEvent, current: OrderState) -> bool:
    """Whether ``event`` came after ``current`` on the same connection (a later ``seq``):
    the service's own order, which ``updatedAt`` in whole seconds cannot tell."""
    return bool(event.connection_id) and (
        event.connection_id == current.connection_id and event.seq > current.seq
    )


@dataclass(frozen=True, slots=True)
class Transition:
    """One accepted state of an order."""

    status: str
    status_raw: str
    updated_at_ms: int
    received_at_ns: int
    reconciled: bool


@dataclass(frozen=True, slots=True)
class OrderState:
    """The latest known state of one order. ``order`` is the last payload accepted (a
    notification or a fetchOrder response); ``history`` its accepted transitions;
    ``connection_id`` and ``seq`` where that notification arrived ("" and 0 for a REST
    read), to tell two states of one ``updatedAt`` apart by arrival order."""

    order_id: str
    status: str
    status_raw: str
    updated_at_ms: int
    order: dict[str, Any]
    history: tuple[Transition, ...]
    final: bool
    connection_id: str = ""
    seq: int = 0


class OrderBook:
    """The account's orders, reconciled.

    ``apply`` (sans-I/O) takes an OrderEvent or an order dict and keeps, per order, the
    state with the newest ``updatedAt``: stale and duplicate notifications are ignored,
    ``closed`` and ``CLOSED`` are one status. A REST read (``reconciled``) wins a tie with
    a notification. Between two notifications stamped alike (``updatedAt`` may be whole
    seconds), the one that arrived later on the same connection (higher ``seq``) wins,
    since a connection delivers in the service's order; otherwise (another connection,
    a replay, a notification after a REST read) the one further along the life cycle
    wins, except that a re-arm (TRIGGERED or PROCESSING back to OPEN) of a notification
    that names no connection is taken. A final state is only left for a known, strictly
    newer ``updatedAt``. A state without an order id or a status, or without an
    ``updatedAt`` over a state that has one, is refused. ``ignored`` counts the states
    not applied (stale, duplicate or refused), ``refused`` the refused ones; the first
    refusal of each kind, and the first state of another status ignored on a tie, are
    logged as a warning, the others at debug level.

    ``run`` subscribes ``watchOrders`` and reconciles at start and after every ``gap`` of
    the session (and every ``reconcile_interval`` seconds when set, which also covers a
    service that publishes only execution outcomes); ``reconcile`` lists the limit orders
    that can still change, which confirms those the book holds in the listed status and
    ``updatedAt``, and fetches by id only the rest (changed, missing from the listing,
    market orders, created meanwhile): its cost is what changed, and ``last_reconcile``
    says what it did; a pass begun within ``listing_slack_ms`` of a gap's end is followed
    by one more once the eventually consistent listing has caught up with the gap. A
    reconcile asked for while one runs is folded into the next one. A reconcile that
    fails on the network (TransportError) is tried again every quarter of
    ``unreachable_after`` seconds (by default twice the client's ``timeout``); once they
    have failed that long, ``run`` ends with one TransportError that says the service
    looks gone, the book keeping its state. Every change is emitted to listeners as an
    OrderEvent, ``reconciled=True`` when it came from REST. Notifications keep being applied while a
    reconcile waits on REST, except those of an order it re-reads, applied after its
    answer (as notifications after a REST read); at most ``inbox_size`` wait to be
    applied: one more is dropped, counted in ``dropped`` (the first drop logged as a
    warning) and followed by another reconcile, since REST is the source of truth.

    ``history_per_order`` transitions are kept per order; at most ``history_limit``
    finished orders are kept (the oldest finished are forgotten first).

    ``profile`` (by default the client's ``profile``) says where the listing's id and
    creation time are and their unit; ``updatedAt`` is read in milliseconds, seconds
    detected by magnitude. ``reconcile_interval="auto"`` (the default) is no periodic
    reconcile when the profile's ``stream.limit_events`` is ``all`` and
    ``OUTCOME_ONLY_RECONCILE_S`` when it is ``outcome_only`` (the service then sends no
    OPEN / CANCELLING / CANCELLED events, so REST must be read to see them); None never.
    """

    def __init__(
        self,
        client: OrderSource | None = None,
        *,
        history_limit: int = 10_000,
        history_per_order: int = 32,
        reconcile_interval: float | Literal["auto"] | None = "auto",
        listing_slack_ms: int = 5_000,
        profile: ServiceProfile | None = None,
        inbox_size: int = 10_000,
        unreachable_after: float | Literal["auto"] = "auto",
    ) -> None:
        _check_int("history_limit", history_limit, 0)
        _check_int("history_per_order", history_per_order, 1)
        _check_int("inbox_size", inbox_size, 1)
        if profile is None:
            found = getattr(client, "profile", None)
            profile = found if isinstance(found, ServiceProfile) else DEFAULT_PROFILE
        self.profile = profile
        #: "auto": the service's limit events may be learnt (toolkit.stream._own_orders)
        self._auto_interval = reconcile_interval == "auto"
        if reconcile_interval == "auto":
            outcome_only = profile.stream.limit_events == "outcome_only"
            reconcile_interval = OUTCOME_ONLY_RECONCILE_S if outcome_only else None
        self._client = client
        self._history_limit = history_limit
        self._history_per_order = history_per_order
        self._reconcile_interval: float | None = reconcile_interval
        self._inbox_size = inbox_size
        self._unreachable_after = Outage.limit_for(client, unreachable_after)
        #: False: every order not final is fetched by id (the strategy before the listing
        #: confirmed limit orders; kept selectable for bench/bench_book.py)
        self._trust_listing = True
        #: reconcile passes begun, and the last one ended: (its number, changes or error)
        self._passes = 0
        self._last_pass: tuple[int, list[OrderEvent] | BaseException] | None = None
        #: what the last reconcile did (fetchOrder calls, orders the listing confirmed)
        self.last_reconcile: ReconcileStats | None = None
        self._reconciler = Reconciler(profile, listing_slack_ms)
        self._orders: dict[str, OrderState] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._listeners: list[Callable[[OrderEvent], Any]] = []
        self._reconcile_lock = asyncio.Lock()
        #: the orders the running reconcile re-reads: their notifications wait for it
        self._reading: dict[str, None] | None = None
        #: the inboxes of the running ``run`` calls
        self._inboxes: list[BookInbox] = []
        #: completed reconciliations (tests and views wait on it)
        self.reconciles = 0
        self.ignored = 0
        self.refused = 0
        #: notifications dropped by ``run`` because ``inbox_size`` were waiting already
        self.dropped = 0
        #: kinds of refusal (and "tie", "drop") already logged as a warning
        self._refusals_said: set[str] = set()

    def __repr__(self) -> str:
        active = sum(1 for s in self._orders.values() if not s.final)
        return f"<OrderBook orders={len(self._orders)} active={active}>"

    def __len__(self) -> int:
        return len(self._orders)

    def __contains__(self, order_id: object) -> bool:
        return order_id in self._orders

    @property
    def orders(self) -> Mapping[str, OrderState]:
        """Order id -> latest state (a read-only view)."""
        return MappingProxyType(self._orders)

    def history(self, order_id: str) -> tuple[Transition, ...]:
        """The accepted transitions of ``order_id``, oldest first (empty when unknown)."""
        state = self._orders.get(order_id)
        return state.history if state else ()

    def add_listener(self, fn: Callable[[OrderEvent], Any]) -> Callable[[], None]:
        """Call ``fn(event)`` for every change of state; returns a remover."""
        self._listeners.append(fn)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(fn)

        return remove

    # -- sans-I/O ----------------------------------------------------------------------

    def apply(
        self, event: OrderEvent | Mapping[str, Any], *, reconciled: bool = True
    ) -> OrderEvent | None:
        """Fold one order state into the book; returns the event when the state changed,
        None when it was stale or a duplicate. A plain order dict (e.g. a fetchOrder or
        create response) is taken as a REST read (``reconciled``)."""
        if not isinstance(event, OrderEvent):
            event = order_event(
                event, received_at_ns=time.time_ns(), reconciled=reconciled, profile=self.profile
            )
        current = self._orders.get(event.order_id) if event.order_id else None
        verdict = self._judge(event, current)
        if verdict is not True:
            self.ignored += 1
            if verdict and verdict[0] == "tie":
                text = "OrderBook ignored a %s of order %r (%s): %s"
                self._say(
                    "tie", text + " (the first tie; all are counted in .ignored)", event, verdict[1]
                )
            elif verdict:
                self._refuse(event, *verdict)
            return None
        transition = Transition(
            event.status,
            event.status_raw,
            event.updated_at_ms,
            event.received_at_ns,
            event.reconciled,
        )
        history = (*current.history, transition) if current else (transition,)
        if len(history) > self._history_per_order:
            history = history[-self._history_per_order :]
        final = event.status in FINAL_STATUSES
        self._orders[event.order_id] = OrderState(
            order_id=event.order_id,
            status=event.status,
            status_raw=event.status_raw,
            updated_at_ms=event.updated_at_ms,
            order=event.order,
            history=history,
            final=final,
            connection_id="" if event.reconciled else event.connection_id,
            seq=0 if event.reconciled else event.seq,
        )
        if final:
            self._finished[event.order_id] = None
            self._finished.move_to_end(event.order_id)
            self._evict()
        else:
            self._finished.pop(event.order_id, None)
        for fn in list(self._listeners):
            try:
                fn(event)
            except Exception:
                _log.exception("an OrderBook listener failed")
        return event

    @staticmethod
    def _judge(event: OrderEvent, current: OrderState | None) -> bool | tuple[str, str]:
        """True: apply ``event``; False: stale or a duplicate; ``("tie", why)``: another
        status of the same ``updatedAt`` ranked older; else ``(kind, why)``: a state
        refused (it would put a guess over what the book knows)."""
        if not event.order_id:
            return "id", "it has no order id"
        if not event.status:
            return "status", "it has no status"
        if current is None:
            return True
        new, old = event.updated_at_ms, current.updated_at_ms
        if not new and old:
            return "time", f"it has no updatedAt; the book holds {current.status} of {old}"
        if current.final and not (new and old and new > old):
            if event.status == current.status or (new and new < old):
                return False  # a duplicate, or stale
            if not old:
                why = f"the book holds the final {current.status} without an updatedAt"
                return "final", f"{why}: {event.status} cannot be told newer"
            if event.reconciled:
                why = f"it has the updatedAt ({old}) of the final {current.status}"
                return "final", f"{why}; a final state is only left for a newer one"
            return False  # a step of the same millisecond, delivered late
        if new != old:
            return new > old
        if event.status == current.status:
            return False  # a duplicate (or the same state read twice)
        if event.reconciled:
            return True  # REST is the source of truth
        notified = not current.history[-1].reconciled
        if new and notified and _arrived_later(event, current):
            return True  # one connection delivers in the service's order
        if (
            new
            and notified
            and event.status == "OPEN"
            and current.status in _REARM_FROM
            and not (event.connection_id and current.connection_id)
        ):
            return True  # a re-arm (spec 3.2), when nothing tells the order of the two
        if _progress(event.status) > _progress(current.status):
            return True
        if not notified:
            where = "a REST read"
        elif not (event.connection_id and current.connection_id):
            where = "a notification of no known connection"
        elif event.connection_id == current.connection_id:
            where = "a notification of the same connection that came no earlier"
        else:
            where = "another connection"
        why = (
            f"it has the updatedAt ({new}) of the {current.status} the book holds (from "
            f"{where}), which is further along the life cycle; a reconcile reads the truth"
        )
        return "tie", why

    def _refuse(self, event: OrderEvent, kind: str, why: str) -> None:
        self.refused += 1
        text = "OrderBook refused a %s of order %r (%s): %s"
        self._say(kind, text + " (the first of its kind; all are counted in .refused)", event, why)

    def _say(self, kind: str, text: str, event: OrderEvent, why: str) -> None:
        """Log a state not applied: the first of ``kind`` as a warning, others at debug."""
        source = "REST read" if event.reconciled else "notification"
        args = (source, event.order_id, event.status_raw or "no status", why)
        if kind in self._refusals_said:
            _log.debug(text, *args)
            return
        self._refusals_said.add(kind)
        _log.warning(text, *args)

    def _drop(self, event: OrderEvent) -> None:
        self.dropped += 1
        text = (
            "OrderBook dropped a %s of order %r (%s): %s notifications wait to be applied "
            "already (inbox_size); a reconcile follows (the first drop; all are counted in "
            ".dropped)"
        )
        self._say("drop", text, event, str(self._inbox_size))

    def _evict(self) -> None:
        while len(self._finished) > self._history_limit:
            order_id, _ = self._finished.popitem(last=False)
            self._orders.pop(order_id, None)

    # -- I/O ---------------------------------------------------------------------------

    def _require_client(self) -> OrderSource:
        if self._client is None:
            raise ToolkitError("this OrderBook has no client: pass one to read REST")
        return self._client

    async def reconcile(self) -> list[OrderEvent]:
        """Confirm over REST the orders the book holds that are not final, and find the
        limit orders created meanwhile; apply what changed.

        The listing of the limit orders that can still change (spec 4.2) confirms the ones
        it shows with the status and ``updatedAt`` the book holds (spec 4.4: ``orderId`` +
        ``status`` + ``updatedAt``): those are not fetched. Fetched by id (fetchOrder):
        limit orders it shows otherwise, or that it does not show (finished meanwhile, or
        too new for the eventually consistent listing), or that an item shows without a
        status, ``updatedAt`` or string id the book can trust; the orders no listing shows
        (market orders); and every limit order created since the previous reconcile (see
        ``_list_recent``) that the book does not hold as listed. A reconcile thus costs
        what changed, not what is open; ``last_reconcile`` says what it did.

        A reconcile asked for while one runs is folded into the next one: every caller
        that asked meanwhile gets that next one's result (or error), so at most one waits.

        Returns the changes (OrderEvents with ``reconciled=True``). An order that is gone
        (404) is left as it was; a listing that fails (a route not active yet, a 5xx) is
        logged and every order it would have confirmed is fetched, and a fetchOrder that
        fails is logged; a listing that fails on the network ends the pass at once. Under
        ``run``, the notifications of an order being re-read wait until the answers are
        applied, then are applied as notifications after a REST read; the others are
        applied meanwhile.

        Raises
        ------
        InvalidResponse
            An answer that does not match the profile or the contract (e.g. a listing item
            without the id ``listing.id_field`` names): no later pass could read it either,
            so it is raised, not logged, once the other orders read are applied.
        TransportError
            A listing or a fetchOrder failed on the network: raised once what was read is
            applied (at once for a listing), and the pass is not counted in ``reconciles``
            (``run`` tries again, and ends when the service stays unreachable).
        """
        client = self._require_client()
        asked = self._passes + 1  # the first pass to begin from now on answers this call
        async with self._reconcile_lock:
            last = self._last_pass
            if last is not None and last[0] >= asked:
                if isinstance(last[1], BaseException):
                    raise last[1]
                return list(last[1])
            self._passes += 1
            number = self._passes
            plan = ReconcilePlan(self._orders, trust_listing=self._trust_listing)
            self._reading = plan.reading  # filled further by the listings
            try:
                changes = await self._read(client, plan)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                self._last_pass = (number, exc)
                raise
            finally:
                self._reading = None
                for inbox in self._inboxes:
                    inbox.release(self.apply)
            self._last_pass = (number, changes)
            return list(changes)

    async def _read(self, client: OrderSource, plan: ReconcilePlan) -> list[OrderEvent]:
        """One pass of ``reconcile``: list, fetch what the plan leaves and apply it."""
        started = time.perf_counter()
        try:
            changes = await self._reconciler.read(client, plan, self.apply)
        finally:
            self.last_reconcile = ReconcileStats(
                fetched=plan.fetched,
                confirmed=plan.confirmed,
                changed=plan.changed,
                seconds=time.perf_counter() - started,
            )
        self.reconciles += 1
        return changes

    async def run(self, session: StreamSession | None = None) -> None:
        """Follow the account's orders until cancelled (or the session ends).

        With no ``session``, opens ``client.stream()`` and closes it on exit. Subscribes
        ``watchOrders`` when the session has not, reconciles once at start and after every
        gap. A reconcile runs beside the notifications, which keep being applied while it
        waits on REST (those of the orders it re-reads once their answers are applied); a
        reconcile asked for meanwhile (a gap, the timer, a notification dropped because
        ``inbox_size`` were waiting) runs once it is done. An error that
        ended the session is raised, and so is the ``InvalidResponse`` of a reconcile
        (REST answers that do not match the profile: the book would stay empty or wrong;
        a view built on it shows the error). Cancelling also cancels a running reconcile.
        """
        if session is None:
            async with self._require_client().stream() as own:
                await self._follow(own)
        else:
            await self._follow(session)

    async def _follow(self, session: StreamSession) -> None:
        inbox = BookInbox(self._inbox_size, self._drop)
        loop = asyncio.get_running_loop()
        outage = Outage(self._unreachable_after)
        running: asyncio.Task[list[OrderEvent]] | None = None
        started = began = 0.0
        timer: asyncio.TimerHandle | None = None
        remove = session.add_callback(inbox.take)
        self._inboxes.append(inbox)
        stop_watch = watch_own_orders(self, session, inbox, loop, OUTCOME_ONLY_RECONCILE_S)
        try:
            if "watchorders" not in session.subscriptions:
                await session.subscribe("watchOrders")
            inbox.reconcile_wanted = True  # the start's
            while True:
                inbox.wake.clear()
                inbox.drain(self.apply, self._reading)
                if inbox.lost:  # a dropped connection: REST says what we may miss
                    inbox.lost = False
                    inbox.reconcile_wanted = inbox.reconcile_wanted or not session.closed
                if running is not None and running.done():
                    task, running = running, None
                    try:
                        task.result()  # its InvalidResponse ends the book
                    except TransportError as exc:
                        if outage.failed(started, loop.time()):
                            raise outage.error(loop.time(), exc) from exc
                        # the book is not confirmed: try again soon, not at the next gap
                        timer = loop.call_later(outage.retry_s, inbox.ask_reconcile)
                    else:
                        outage.succeeded()
                        timer = self._next_pass(loop, inbox, began)
                if running is None and inbox.reconcile_wanted:
                    inbox.reconcile_wanted = False
                    if timer is not None:
                        timer.cancel()
                        timer = None
                    started, began = loop.time(), time.monotonic()
                    running = loop.create_task(self.reconcile())
                    running.add_done_callback(lambda _: inbox.wake.set())
                elif running is None and session.closed:
                    if session.error is not None:
                        raise session.error
                    return
                await inbox.wake.wait()
        finally:
            remove()
            stop_watch()
            if timer is not None:
                timer.cancel()
            try:
                if running is not None and not running.done():
                    running.cancel()  # it still applies what it held, as it unwinds
                    await asyncio.wait((running,))
                if running is not None and running.done() and not running.cancelled():
                    running.exception()  # retrieved: the book ends with its own error
            finally:
                self._inboxes.remove(inbox)

    def _next_pass(
        self, loop: asyncio.AbstractEventLoop, inbox: BookInbox, began: float
    ) -> asyncio.TimerHandle | None:
        """The timer of the next pass after one that succeeded (begun at ``began``,
        ``time.monotonic()``): the periodic one, or the one that settles a gap the
        listing may not have caught up with (``settle_delay``), whichever comes first."""
        delays = [] if self._reconcile_interval is None else [self._reconcile_interval]
        if self._trust_listing:
            lag_s = self._reconciler.listing_slack_ms / 1000
            settle = settle_delay(inbox.gap_at, began, time.monotonic(), lag_s)
            if settle is not None:
                delays.append(settle)
        return loop.call_later(min(delays), inbox.ask_reconcile) if delays else None

    # -- views -------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """One row per order: ``id``, ``symbol``, ``side``, ``type``, ``status``
        (canonical), ``statusRaw``, ``updatedAt`` (UTC; seconds and milliseconds both read
        right, NaT when the body had none - never 1970), ``final``, ``transitions``."""
        import pandas as pd

        rows = [
            {
                "id": s.order_id,
                "symbol": s.order.get("symbol"),
                "side": s.order.get("side"),
                "type": s.order.get("type"),
                "status": s.status,
                "statusRaw": s.status_raw,
                "updatedAt": s.updated_at_ms or None,
                "final": s.final,
                "transitions": len(s.history),
            }
            for s in self._orders.values()
        ]
        columns = [
            "id",
            "symbol",
            "side",
            "type",
            "status",
            "statusRaw",
            "updatedAt",
            "final",
            "transitions",
        ]
        frame = pd.DataFrame(rows, columns=columns)
        frame["updatedAt"] = pd.to_datetime(
            frame["updatedAt"].astype("Int64"), unit="ms", utc=True
        ).astype("datetime64[ms, UTC]")
        frame["final"] = frame["final"].astype(bool)
        frame["transitions"] = frame["transitions"].astype("int64")
        return frame
