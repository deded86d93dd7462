"""An order book's watch over the limit orders its own client creates.

The create answers the whole order (spec 4.4): the book applies it as a REST read at once,
so a new order shows without waiting for a notification. Whether ``watchOrders`` then
carries the limit-specific states (OPEN, CANCELLING, CANCELLED, EXPIRED) is a contradiction
of the spec (section 6): the profile's ``stream.limit_events`` says which, and a doctor
cannot see it without writing. So the watch checks: when the profile says ``all`` and an
order this client created is not notified within ``grace_s`` of a connection that stayed
up, the service publishes only outcomes. That is learnt (``client.learned``, logged once
with the line to write) and the book turns on its periodic reconcile, as the profile's
``outcome_only`` would have.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from toolkit.stream._event_types import OrderEvent, SessionEvent

_log = logging.getLogger("toolkit.stream")

#: seconds an order this client created may go without a notification before the
#: service is taken to publish only outcomes (a notification is sent on the change)
LIMIT_EVENT_GRACE_S = 10.0
SETTING = "stream.limit_events"
#: how many lately notified ids the watch remembers
_NOTIFIED_KEPT = 4096


class OwnOrderWatch:
    """Applies the creates of ``client`` to a book and learns ``outcome_only``.

    Parameters
    ----------
    apply : callable
        The book's ``apply`` (an order dict taken as a REST read).
    loop : asyncio loop
        The book's loop: creates answered on another thread are handed to it.
    on_outcome_only : callable
        Called once, on the book's loop, when the service is learnt to publish only
        outcomes (the book turns on its periodic reconcile and reconciles now).
    client : object
        The book's client (its ``learned`` and ``profile``).
    expect_events : bool
        Whether to check (the profile says ``all`` and the book has no periodic
        reconcile).
    grace_s : float
        See :data:`LIMIT_EVENT_GRACE_S`.
    """

    def __init__(
        self,
        apply: Callable[[dict[str, Any]], Any],
        loop: asyncio.AbstractEventLoop,
        on_outcome_only: Callable[[], None],
        client: Any,
        *,
        expect_events: bool,
        grace_s: float = LIMIT_EVENT_GRACE_S,
    ) -> None:
        self._apply = apply
        self._loop = loop
        self._on_outcome_only = on_outcome_only
        self._client = client
        self._expect = expect_events
        self._grace_s = grace_s
        #: order id -> the timer that learns outcome_only if it is not notified
        self._waiting: dict[str, asyncio.TimerHandle] = {}
        #: connection losses seen: a silence across one proves nothing
        self._losses = 0
        #: ids notified lately: a notification may come before the create's answer
        self._notified: OrderedDict[str, None] = OrderedDict()
        self.learnt = False

    def created(self, order: dict[str, Any]) -> None:
        """The client's order listener: may run on any thread."""
        if self._loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._created(order)
        else:
            self._loop.call_soon_threadsafe(self._created, order)

    def _created(self, order: dict[str, Any]) -> None:
        event = self._apply(order)
        if not self._expect or self.learnt or event is None or not event.order_id:
            return
        if event.final:
            return  # a create refused at once (REJECTED): nothing more will be sent
        oid = event.order_id
        if oid in self._notified:
            return
        self._waiting[oid] = self._loop.call_later(self._grace_s, self._silent, oid, self._losses)

    def seen(self, event: Any) -> None:
        """A session callback: a notification of a waited-for order ends its wait; a
        lost connection voids the waits (the notification may have been lost)."""
        if isinstance(event, OrderEvent) and not event.reconciled:
            self._notified[event.order_id] = None
            if len(self._notified) > _NOTIFIED_KEPT:
                self._notified.popitem(last=False)
            timer = self._waiting.pop(event.order_id, None)
            if timer is not None:
                timer.cancel()
        elif isinstance(event, SessionEvent) and event.kind in ("disconnected", "dropped"):
            self._losses += 1

    def _silent(self, order_id: str, losses: int) -> None:
        self._waiting.pop(order_id, None)
        if self.learnt or losses != self._losses:
            return
        self.learnt = True
        for timer in self._waiting.values():
            timer.cancel()
        self._waiting.clear()
        evidence = (
            f"limit order {order_id} created by this client was not notified on watchOrders "
            f"within {self._grace_s:g} s of a connection that stayed up (the service "
            "publishes only execution outcomes; its states are read over REST)"
        )
        learned = getattr(self._client, "learned", None)
        if learned is not None:
            learned.learn(SETTING, "outcome_only", "all", evidence)
        else:
            _log.warning("learnt %s = 'outcome_only': %s", SETTING, evidence)
        self._on_outcome_only()

    def close(self) -> None:
        for timer in self._waiting.values():
            timer.cancel()
        self._waiting.clear()


def watch_own_orders(
    book: Any, session: Any, inbox: Any, loop: asyncio.AbstractEventLoop, period_s: float
) -> Callable[[], None]:
    """Start an :class:`OwnOrderWatch` for ``book`` (an ``OrderBook`` following
    ``session`` through ``inbox``) when its client takes order listeners
    (``Client.add_order_listener``); learning ``outcome_only`` (only when the book's
    ``reconcile_interval`` is ``"auto"``: an explicit one is the user's choice) gives the
    book a periodic reconcile every ``period_s`` and one now. Returns what stops the
    watch."""
    add = getattr(book._client, "add_order_listener", None)
    if not callable(add):
        return lambda: None

    def outcome_only() -> None:
        book._reconcile_interval = period_s
        inbox.ask_reconcile()

    expect = (
        book._auto_interval
        and book.profile.stream.limit_events == "all"
        and book._reconcile_interval is None
    )
    watch = OwnOrderWatch(book.apply, loop, outcome_only, book._client, expect_events=expect)
    remove_created = add(watch.created)
    remove_seen = session.add_callback(watch.seen)

    def stop() -> None:
        remove_created()
        remove_seen()
        watch.close()

    return stop
