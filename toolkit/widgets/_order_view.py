"""``OrderStatusView``: a live table of orders moving through their statuses, fed by the
reconciled OrderBook, with counts, a status filter and a Cancel button on OPEN limit orders."""

from __future__ import annotations

import asyncio
import html
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import pandas as pd

from toolkit.errors import InvalidRequest
from toolkit.stream._events import OrderEvent, SessionEvent
from toolkit.widgets._base import LiveView, check_flag, check_int, check_speed
from toolkit.widgets._order_cancel import CancelPart
from toolkit.widgets._order_format import (
    COLUMNS,
    FAILED_TONE,
    FILTER_LABELS,
    FILTERS,
    LEGEND,
    SESSION,
    Shortcuts,
    badge,
    matches,
    order_grid,
)
from toolkit.widgets._order_guard import CancelGuard
from toolkit.widgets._order_slot import OrderButtons
from toolkit.widgets._order_slot import OrderSlot as _Slot
from toolkit.widgets._order_table import counts_html, orders_frame, row_html, timeline, widths
from toolkit.widgets._sources import aiter_events, describe_source, is_client
from toolkit.widgets._theme import STYLE
from toolkit.widgets._throttle import Clock

_LOADING = "reading the account's orders over REST"


class OrderStatusView(LiveView, CancelPart):
    """Live orders: one row per order with its Cancel cell first (a Cancel button on OPEN
    limit orders, or a cancel's outcome), a status badge (both status families, in one
    case; the case the service sent is in the tooltip), amount, filled and average price,
    its transition timeline on one line (the whole history on hover), counts per status,
    "N of M shown", a filter (ALL, ACTIVE, FINALIZED, this session's orders or one status)
    and a box to find an order by id and pin it on top. ACTIVE and FINALIZED are the
    book's profile's (``listing.active_statuses`` / ``finalized_statuses``: the spec does
    not show them) for limit orders; a market order is ACTIVE while ``pending`` (spec
    3.1). "This session's orders" are those that appeared after the view's first read of
    the account. Every time is UTC in one format, ``2026-11-27 09:23:40.637``; italic
    timeline entries were read over REST after a gap (not those read at start; the legend
    under the table says so). Columns have fixed minimum widths: narrower than them the
    view scrolls sideways, nothing moves when a timeline grows.

    Cancel is a two-step: a first click arms the order's own button ("Confirm cancel
    <id>"), a second click on that button within ``ARM_S`` seconds cancels that order
    (each order has its own button, so a click is bound to the order, never to a row
    position); it disarms by itself after that. While a Cancel is armed, and for
    ``HOLD_S`` seconds after a cancel's outcome last changed, the rows hold still (a new
    order fills an empty row only) and the cancelled order keeps its row with its outcome,
    even when the filter no longer matches it. While the view is offline (connecting,
    reconnecting, failed), and once stopped, the Cancel buttons are disabled. The cancel awaits
    ``client.acancel_limit_order(order_id)`` and shows the ``CancelResult`` (accepted,
    deferred while executing, was final, already cancelling); a request that failed
    leaves its error on one line beside the button, the whole of it on a click, until the
    order changes or the button is clicked again. The stream's and book's warnings go to
    the status line (and to logging), never printed into the cell.

    ``source`` is a client (the view runs a reconciled ``OrderBook`` on its own stream:
    ``watchOrders``, and fetchOrder after every gap), or a recording path / replay iterator
    / iterable of events (offline; give ``client=`` to enable Cancel). A live view is
    "loading" until the book's first reconciliation is done (an empty table means no
    orders only once it says "connected") and "reconciling gap" after a gap until the next
    one is. The newest ``max_rows`` matching orders are shown (pinned ones first) in rows
    created once; the book keeps at most ``history_limit`` finished orders. Repaints at
    most ``max_hz`` times per second on ``clock`` (which also times the arming and the
    hold). Starts itself on the running loop when there is one (unless
    ``autostart=False``); ``stop()`` cancels its tasks and freezes the table on its last
    state ("stopped"), ``close()`` also removes the widgets; ``to_frame()`` returns the
    orders that match the filter as a DataFrame.

    Parameters
    ----------
    source : Client, OrderBook, str, os.PathLike or iterable of events
        A live client, an ``OrderBook``, a recording folder, ``tk.replay(...)`` or any
        (async) iterable of order events.
    client : Client, optional
        The client the Cancel button uses when ``source`` is not one.
    max_rows : int, default 20
        Rows shown (the newest matching orders), at least 1.
    history_limit : int, default 1000
        Finished orders the book keeps (0: none). Not used when ``source`` is a book.
    status : str, default "ALL"
        Initial filter: ALL, ACTIVE, FINALIZED, SESSION (this session's orders) or one
        status (upper case).
    max_hz : float, default 10.0
        Most repaints per second (a finite number > 0).
    speed : float, optional
        Replay pace (2.0 = twice real time, a finite number > 0); None replays at once.
    clock : callable, optional
        Monotonic clock of the repaint throttle, the arming and the hold (tests pass a
        fake one).
    autostart : bool, default True
        Start on the running loop, if there is one.

    Raises
    ------
    InvalidRequest
        When ``status`` is not a known filter, or another argument is out of range or of
        the wrong type (the message names it); nothing is started then.

    Examples
    --------
    >>> view = tk.OrderStatusView(client, status="ACTIVE")  # doctest: +SKIP
    >>> view.pin(order["id"])  # always shown, on top  # doctest: +SKIP
    >>> view.to_frame()  # the matching orders now  # doctest: +SKIP
    >>> view.stop()  # doctest: +SKIP
    """

    def __init__(
        self,
        source: object,
        *,
        client: Any = None,
        max_rows: int = 20,
        history_limit: int = 1_000,
        status: str = "ALL",
        max_hz: float = 10.0,
        speed: float | None = None,
        clock: Clock | None = None,
        autostart: bool = True,
    ) -> None:
        from toolkit.stream._orderbook import OrderBook

        if not isinstance(status, str) or status.upper() not in FILTERS:
            raise InvalidRequest(
                f"status filter must be one of {', '.join(FILTERS)}; got {status!r}"
            )
        check_int("max_rows", max_rows, 1)
        check_int("history_limit", history_limit, 0)
        speed = check_speed(speed)
        check_flag("autostart", autostart)
        super().__init__(max_hz=max_hz, clock=clock)
        self._source = source
        self._kind = describe_source(source)
        if client is None and is_client(source):
            client = source
        self._client: Any = client
        self._speed = speed
        self._loop: asyncio.AbstractEventLoop | None = None
        self.book: OrderBook = (
            source
            if isinstance(source, OrderBook)
            else OrderBook(self._client, history_limit=history_limit)
        )
        # ACTIVE / FINALIZED of the filter and the counts, as the book's profile says
        self._shortcuts = Shortcuts.of(self.book.profile)
        self._remove_listener = self.book.add_listener(self._on_order_event)
        self._changed = True
        # a live view reads the orders over REST before it knows any (the book's first
        # reconcile): until then an empty table is no news, and the view says so
        self._loading = self._kind == "live" and is_client(source)
        # orders read at start (id -> the updatedAt read then: not "read after a gap"),
        # and the orders that appeared after that ("this session's")
        self._loaded: dict[str, int] = {
            oid: st.updated_at_ms for oid, st in self.book.orders.items()
        }
        self._new_ids: set[str] = set()
        self._pins: list[str] = []
        # pending or failed cancels' text and tone per order, bounded like the book's history
        self._notes: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._outcome_limit = max(history_limit, max_rows)
        self.cancel_results: OrderedDict[str, Any] = OrderedDict()
        self._cancel_tasks: set[asyncio.Task[None]] = set()
        self._guard = CancelGuard(self._throttle.now)
        # the order ids of the rows while they hold still (None: they follow the order)
        self._layout: list[str] | None = None
        self._relayout = False
        self._guard_timer: asyncio.TimerHandle | None = None
        self._widths = (13, 10, 10)  # the id, price and quantity columns' characters
        self._shown_total = (0, 0)

        # on a line of its own, one line high: what it says never moves the rows
        self._counts = widgets.HTML(layout=widgets.Layout(width="100%", min_width="0"))
        self.filter = widgets.Dropdown(
            options=list(FILTER_LABELS),
            value=status.upper(),
            description="show",
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
            style={"description_width": "initial"},
        )
        self.filter.observe(self._on_control, names="value")
        self.find = widgets.Text(
            placeholder="find an order id",
            layout=widgets.Layout(width="14em", flex="0 1 auto", min_width="8em"),
            continuous_update=True,
        )
        self.find.observe(self._on_control, names="value")
        self.pin_button = widgets.Button(
            description="pin",
            tooltip="pin the order whose id is in the box: always shown, on top",
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
        )
        self.pin_button.on_click(self._on_pin_click)
        header = "".join(f"<span>{html.escape(c)}</span>" for c in COLUMNS)
        # the header is a row like the others (same button and outcome cells, the button
        # invisible) so its columns line up with theirs at any width
        self._header = _Slot()
        self._header_cells = header
        self._grid = ""
        self._header.show(button=False, outcome="<span class='tk-muted tk-view'>cancel</span>")
        self._header.box.layout.display = "flex"
        self._legend = widgets.HTML(value=LEGEND)
        self._slots = [_Slot() for _ in range(max_rows)]
        # each order's Cancel button is its own and moves with it: a click cancels the
        # order the user saw beside the button, even when the rows moved meanwhile
        self._buttons = OrderButtons(self._on_cancel_click, keep=max(64, 4 * max_rows))
        self._set_grid(order_grid())
        self._bar = widgets.HBox(
            [self.filter, self.find, self.pin_button],
            layout=widgets.Layout(width="100%", align_items="center", flex_flow="row wrap"),
        )
        self._container.children = (
            self._status,
            self._bar,
            self._counts,
            self._header.box,
            *(slot.box for slot in self._slots),
            self._legend,
        )
        self._paint()
        if autostart:
            self._autostart()

    # -- state -------------------------------------------------------------------------

    @property
    def visible_order_ids(self) -> list[str]:
        """Ids of the orders in the rows now, top first."""
        return [s.order_id for s in self._slots if s.order_id is not None]

    @property
    def shown(self) -> tuple[int, int]:
        """(rows shown, orders that match): what "N of M shown" says."""
        return self._shown_total

    @property
    def pinned(self) -> tuple[str, ...]:
        """The pinned order ids, in the order they were pinned."""
        return tuple(self._pins)

    @property
    def session_order_ids(self) -> frozenset[str]:
        """The orders that appeared after the view's first read ("this session's")."""
        return frozenset(self._new_ids & set(self.book.orders))

    def pin(self, order_id: str) -> None:
        """Always show ``order_id`` on top, whatever the filter (also before it is known:
        an order about to be created)."""
        if not isinstance(order_id, str) or not order_id.strip():
            raise InvalidRequest(f"pin: order_id must be a non-empty string, not {order_id!r}")
        if order_id.strip() not in self._pins:
            self._pins.append(order_id.strip())
        self._on_control(None)

    def unpin(self, order_id: str) -> None:
        """Stop pinning ``order_id`` (nothing when it is not pinned)."""
        if order_id in self._pins:
            self._pins.remove(order_id)
            self._on_control(None)

    def slot_for(self, order_id: str) -> _Slot | None:
        return next((s for s in self._slots if s.order_id == order_id), None)

    def counts(self) -> dict[str, int]:
        """Orders per canonical status in the book."""
        out: dict[str, int] = {}
        for state in self.book.orders.values():
            out[state.status] = out.get(state.status, 0) + 1
        return out

    def apply(self, event: Any) -> bool:
        """Fold one event (sans-I/O): orders go through the book, session events set the
        connection state. True when an order changed."""
        if isinstance(event, OrderEvent):
            return self.book.apply(event) is not None
        if isinstance(event, SessionEvent):
            self._on_session_event(event)
        return False

    def _on_order_event(self, event: OrderEvent) -> None:
        oid = event.order_id
        if oid not in self._loaded and oid not in self._new_ids:
            if event.reconciled and self.book.reconciles == 0 and self._client is not None:
                self._loaded[oid] = event.updated_at_ms  # read at start
            else:
                self._new_ids.add(oid)
        elif event.reconciled and self.book.reconciles == 0 and oid in self._loaded:
            self._loaded[oid] = event.updated_at_ms
        if len(self._new_ids) + len(self._loaded) > 4 * max(len(self.book.orders), 256):
            # bounded like the book: forget the orders it no longer holds
            held = self.book.orders
            self._new_ids = {o for o in self._new_ids if o in held}
            self._loaded = {o: t for o, t in self._loaded.items() if o in held}
        note = self._notes.get(oid)
        if note is not None and note[1] == FAILED_TONE:
            # a failed cancel's error stays on its row until the order moves on
            del self._notes[oid]
        if oid in self.cancel_results and oid in self._guard.held:
            # the outcome follows the order ("cancelled"): shown for the whole hold again
            self._guard.hold(oid)
            self._schedule_guard()
        self._changed = True
        self._paint_soon()

    def _on_state(self) -> None:
        offline = self.offline and not self._stopped
        if offline != self._buttons.offline:
            self._buttons.set_offline(offline)
            if offline:
                self.disarm()

    def _on_session_event(self, event: Any) -> None:
        if self._loading and getattr(event, "kind", "") in (
            "connected",
            "subscribed",
            "resubscribed",
        ):
            # connected, but the book's first pass over REST is still running
            self._set_state("loading", _LOADING)
            return
        super()._on_session_event(event)

    def _on_gap(self, detail: str) -> None:
        if self._client is None or self.state in ("replaying", "replay finished"):
            super()._on_gap(detail)
            return
        # The book re-reads every open order after a gap; the state says so until that
        # reconciliation has completed (the book's counter moves once it is applied).
        self._set_state("reconciling gap", detail)
        target = self.book.reconciles + 1
        if self._loop is not None and not self._stopped:
            task = self._loop.create_task(self._await_reconcile(target, detail))
            self._cancel_tasks.add(task)
            task.add_done_callback(self._cancel_tasks.discard)

    async def _await_reconcile(self, target: int, detail: str, timeout: float = 120.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.book.reconciles < target and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if self.state == "reconciling gap" and self.book.reconciles >= target:
            self._set_state("gap reconciled", detail)

    async def _await_first_pass(self) -> None:
        # The book tells its listeners about orders, not about a finished pass: poll.
        while self.book.reconciles < 1:
            await asyncio.sleep(0.05)
        self._loading = False
        self._changed = True
        self._paint_soon()  # the counts, also of an account without any order
        if self.state == "loading":
            self._set_state("connected")

    def _on_control(self, _change: Any) -> None:
        """The filter, the find box or the pins changed: the user asked for other rows, so
        an armed Cancel disarms and the rows are laid out again at once."""
        self.disarm()
        self._relayout = True
        self._changed = True
        self.repaint(force=True)

    def _on_pin_click(self, _button: Any) -> None:
        text = str(self.find.value or "").strip()
        if not text:
            return
        hits = [oid for oid in self.book.orders if text.lower() in oid.lower()]
        target = text if text in self.book.orders or len(hits) != 1 else hits[0]
        if target in self._pins:
            self.unpin(target)
        else:
            self.pin(target)

    # -- painting ----------------------------------------------------------------------

    def _dirty(self) -> bool:
        return self._changed or self._expired()

    def _passing(self) -> list[Any]:
        """The orders that pass the filter and the find box, in the book's order."""
        flt, shortcuts, new = self.filter.value, self._shortcuts, self._new_ids
        text = str(self.find.value or "").strip().lower()
        return [
            s
            for s in self.book.orders.values()
            if (
                s.order_id in new
                if flt == SESSION
                else matches(s.status, flt, s.order.get("type"), shortcuts)
            )
            and (not text or text in s.order_id.lower())
        ]

    def _matching(self) -> list[Any]:
        states = self._passing()
        states.sort(key=lambda s: (s.updated_at_ms, s.order_id), reverse=True)
        return states

    def _rows(self) -> tuple[list[Any], int]:
        """The orders of the rows, top first, and how many orders could be shown: pinned
        ones first, then the matching ones and those whose outcome is held, newest update
        first; while the rows hold still, each keeps its row."""
        self._guard.expire()
        self._buttons.arm(self._guard.armed)
        orders = self.book.orders
        pinned = [orders[oid] for oid in self._pins if oid in orders]
        rest = {s.order_id: s for s in self._passing()}
        for oid in self._guard.held:
            if oid in orders:
                rest.setdefault(oid, orders[oid])
        ranked = pinned + sorted(
            (s for oid, s in rest.items() if oid not in self._pins),
            key=lambda s: (s.updated_at_ms, s.order_id),
            reverse=True,
        )
        total = len(ranked)
        if not self._guard.frozen:
            self._layout = None
        elif self._layout is None or self._relayout:
            self._layout = [s.order_id for s in ranked[: len(self._slots)]]
        self._relayout = False
        if self._layout is None:
            return ranked[: len(self._slots)], total
        kept = [orders[oid] for oid in self._layout if oid in orders]
        placed = {s.order_id for s in kept}
        # a row left empty is filled at the bottom; no row moves
        shown = (kept + [s for s in ranked if s.order_id not in placed])[: len(self._slots)]
        self._layout = [s.order_id for s in shown]
        return shown, max(total, len(shown))

    def _set_grid(self, grid_and_width: tuple[str, float]) -> None:
        """Use this grid for the header and (from now on) every row. A row never gets
        narrower than the grid's minimum: a container narrower than that scrolls."""
        grid, width_em = grid_and_width
        if grid == self._grid:
            return
        self._grid = grid
        # the Cancel cell fits "Confirm cancel <id>" in the widgets' font
        action = f"0 0 {0.6 * (15 + self._widths[0]) + 2.5:.1f}em"
        # the table's font is 0.92 of the widgets' (see _theme)
        for slot in (self._header, *self._slots):
            slot.html.layout.min_width = f"calc({width_em + 0.5:.1f}em * 0.92)"
            slot.action.layout.flex = action
        self._header.html.value = (
            f"{STYLE}<div class='tk-orow tk-head tk-grid tk-view' style='{grid}'>"
            f"{self._header_cells}</div>"
        )

    def _paint(self) -> None:
        self._changed = False
        shown, total = self._rows()
        self._widths = widths(self._widths, shown)
        self._set_grid(order_grid(*self._widths))
        for slot, state in zip(self._slots, shown, strict=False):
            self._fill(slot, state)
        for slot in self._slots[len(shown) :]:
            slot.order_id = None
            slot.box.layout.display = "none"
        self._shown_total = (len(shown), total)
        self._counts.value = self._counts_html(len(shown), total)
        self.pin_button.description = (
            "unpin" if str(self.find.value or "").strip() in self._pins else "pin"
        )

    def _fill(self, slot: _Slot, state: Any) -> None:
        order: Mapping[str, Any] = state.order
        cancellable = (
            self._client is not None
            and str(order.get("type", "")).lower() == "limit"
            and state.status == "OPEN"
        )
        # the button while no cancel is under way or answered: none while "cancelling…",
        # back beside a failed request's error, to try again
        outcome = self._outcome(state.order_id)
        button = cancellable and (outcome is None or outcome[2] == FAILED_TONE)
        slot.paint(
            state.order_id,
            self._row_html(state),
            button=button,
            outcome=self.outcome_text(state.order_id),
            order_button=self._buttons.get(state.order_id) if cancellable else None,
        )

    def _timeline(self, state: Any) -> tuple[str, str, str]:
        return timeline(self.book, state, self._loaded.get(state.order_id))

    def _row_html(self, state: Any) -> str:
        return row_html(
            state, self._grid, self._timeline(state), pinned=state.order_id in self._pins
        )

    def to_frame(self) -> pd.DataFrame:
        """The orders that match the filter, newest first, as the table shows them:
        ``orderId``, ``type``, ``symbol``, ``side``, ``limitPrice``, ``amount``,
        ``filled``, ``average`` (the average price), ``status`` (canonical), ``statusRaw``
        (as sent), ``timeline`` (every status, oldest first), ``updatedAt`` (UTC) and
        ``cancelOutcome`` (plain text, None without a cancel)."""
        return orders_frame(self._matching(), self.book, self._outcome_plain)

    def _counts_html(self, shown: int, total: int) -> str:
        if self._loading:
            note = "stopped before the orders were read" if self._stopped else f"{_LOADING}…"
            return f"<div class='tk-counts tk-muted' data-loading='true'>{note}</div>"
        return counts_html(self.book, self._shortcuts, shown, total, held=self._guard.frozen)

    def _all_widgets(self) -> list[widgets.Widget]:
        out: list[widgets.Widget] = [
            self._status,
            self._counts,
            self.filter,
            self.find,
            self.pin_button,
            self._legend,
        ]
        for slot in (self._header, *self._slots):
            out += slot.widgets()
        out += self._buttons.widgets()
        out += [self._bar, self._container]
        return out

    def _freeze(self) -> None:
        self.filter.disabled = True
        self.find.disabled = True
        self.pin_button.disabled = True
        self._buttons.disable()
        if self._guard_timer is not None:
            self._guard_timer.cancel()
            self._guard_timer = None

    # -- the task ----------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled (live) or until the recording ends (replay)."""
        self._loop = asyncio.get_running_loop()
        if self._kind == "live" and is_client(self._source):
            await self._run_live()
            return
        self._set_state("replaying")
        async for event in aiter_events(self._source, (), speed=self._speed):
            self.apply(event)
        await self._final_paint()
        self._set_state("replay finished")

    async def _run_live(self) -> None:
        self._set_state("connecting")
        # the book reads the session through a callback; nobody reads its main queue
        async with self._client.stream(queue_size=1) as session:
            remove = session.add_callback(self._on_stream_event)
            first = asyncio.get_running_loop().create_task(self._await_first_pass())
            self._cancel_tasks.add(first)
            first.add_done_callback(self._cancel_tasks.discard)
            if session.connected and self._loading:
                self._set_state("loading", _LOADING)
            elif session.connected:
                self._set_state("connected")
            try:
                await self.book.run(session=session)
            finally:
                remove()
                first.cancel()

    def _on_stream_event(self, event: Any) -> None:
        if isinstance(event, SessionEvent):
            self._on_session_event(event)

    def stop(self) -> None:
        if self._stopped:
            return
        for task in list(self._cancel_tasks):
            task.cancel()
        self._remove_listener()
        self._changed = self._changed or self._loading  # "stopped before the orders were read"
        super().stop()

    def __repr__(self) -> str:
        return (
            f"OrderStatusView(orders={len(self.book.orders)}, state={self.state!r}, "
            f"filter={self.filter.value!r}, repaints={self.repaints})"
        )


__all__: Sequence[str] = ("FILTERS", "OrderStatusView", "badge", "matches")
