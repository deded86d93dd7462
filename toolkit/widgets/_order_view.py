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
from toolkit.widgets._order_format import (
    COLUMNS,
    FAILED_TONE,
    FILTERS,
    LEGEND,
    STATUS_ORDER,
    TIMELINE_STEPS,
    Shortcuts,
    badge,
    matches,
    order_grid,
    outcome_html,
    outcome_label,
)
from toolkit.widgets._order_slot import OrderButtons
from toolkit.widgets._order_slot import OrderSlot as _Slot
from toolkit.widgets._sources import aiter_events, describe_source, is_client
from toolkit.widgets._theme import STYLE, price_text, when_compact, when_full
from toolkit.widgets._throttle import Clock

_LOADING = "reading the account's orders over REST"


class OrderStatusView(LiveView):
    """Live orders: one row per order with a status badge (both status families, in one
    case; the case the service sent is in the tooltip), its transition timeline on one line
    (the whole history on hover), counts per status, a filter (ALL, ACTIVE, FINALIZED or
    one status) and a Cancel button on OPEN limit orders. ACTIVE and FINALIZED are the
    book's profile's (``listing.active_statuses`` / ``finalized_statuses``: the spec does
    not show them) for limit orders; a market order is ACTIVE while ``pending`` (spec
    3.1). Times are UTC: today's to the millisecond, another day's as month, day and
    minute, another year's as the date (in the same width, so a table that crosses
    midnight does not widen), each in full on hover; italic timeline entries were read
    over REST after a gap (the legend under the table says so).

    ``source`` is a client (the view runs a reconciled ``OrderBook`` on its own stream:
    ``watchOrders``, and fetchOrder after every gap), or a recording path / replay iterator
    / iterable of events (offline; give ``client=`` to enable Cancel). The Cancel button
    awaits ``client.acancel_limit_order(order_id)`` and shows the ``CancelResult``
    (accepted, deferred while executing, was final, already cancelling); a request that
    failed leaves its error beside the button (to retry) until the order changes or the
    button is clicked again. A live view is "loading" until the book's first
    reconciliation is done (an empty table means no orders only once it says "connected")
    and "reconciling gap" after a gap until the next one is. The newest ``max_rows``
    matching orders are shown in rows created once; the book keeps at most
    ``history_limit`` finished orders. Repaints at most ``max_hz`` times per second on
    ``clock``. Starts itself on the running loop when there is one (unless
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
        Initial filter: ALL, ACTIVE, FINALIZED or one status (upper case).
    max_hz : float, default 10.0
        Most repaints per second (a finite number > 0).
    speed : float, optional
        Replay pace (2.0 = twice real time, a finite number > 0); None replays at once.
    clock : callable, optional
        Monotonic clock of the repaint throttle (tests pass a fake one).
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
        # pending or failed cancels' text and tone per order, bounded like the book's history
        self._notes: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._outcome_limit = max(history_limit, max_rows)
        self.cancel_results: OrderedDict[str, Any] = OrderedDict()
        self._cancel_tasks: set[asyncio.Task[None]] = set()

        self._counts = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", min_width="0"))
        self.filter = widgets.Dropdown(
            options=list(FILTERS),
            value=status.upper(),
            description="show",
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
            style={"description_width": "initial"},
        )
        self.filter.observe(self._on_filter, names="value")
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
            [self.filter, self._counts],
            layout=widgets.Layout(width="100%", align_items="center", flex_flow="row wrap"),
        )
        self._container.children = (
            self._status,
            self._bar,
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
        note = self._notes.get(event.order_id)
        if note is not None and note[1] == FAILED_TONE:
            # a failed cancel's error stays on its row until the order moves on
            del self._notes[event.order_id]
        self._changed = True
        self._paint_soon()

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

    def _on_filter(self, _change: Any) -> None:
        self._changed = True
        self.repaint(force=True)

    # -- painting ----------------------------------------------------------------------

    def _dirty(self) -> bool:
        return self._changed

    def _matching(self) -> list[Any]:
        flt, shortcuts = self.filter.value, self._shortcuts
        states = [
            s
            for s in self.book.orders.values()
            if matches(s.status, flt, s.order.get("type"), shortcuts)
        ]
        states.sort(key=lambda s: (s.updated_at_ms, s.order_id), reverse=True)
        return states

    def _set_grid(self, grid_and_width: tuple[str, float]) -> None:
        """Use this grid for the header and (from now on) every row. A row never gets
        narrower than the grid's minimum: a container narrower than that scrolls."""
        grid, width_em = grid_and_width
        if grid == self._grid:
            return
        self._grid = grid
        # the table's font is 0.92 of the widgets' (see _theme)
        for slot in (self._header, *self._slots):
            slot.html.layout.min_width = f"calc({width_em + 0.5:.1f}em * 0.92)"
        self._header.html.value = (
            f"{STYLE}<div class='tk-orow tk-head tk-grid tk-view' style='{grid}'>"
            f"{self._header_cells}</div>"
        )

    def _paint(self) -> None:
        self._changed = False
        states = self._matching()
        shown = states[: len(self._slots)]
        self._set_grid(
            order_grid(
                max((len(s.order_id) for s in shown), default=0),
                max((len(self._timeline(s)[1]) for s in shown), default=0),
                max((len(when_compact(s.updated_at_ms)) for s in shown), default=0),
            )
        )
        for slot, state in zip(self._slots, states, strict=False):
            self._fill(slot, state)
        for slot in self._slots[len(states) :]:
            slot.order_id = None
            slot.box.layout.display = "none"
        self._counts.value = self._counts_html(len(states))

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
        """The order's timeline condensed to its last steps: (HTML, its text, the whole
        history for the tooltip)."""
        steps, names, full = [], [], []
        for t in self.book.history(state.order_id):
            name = t.status.upper()
            mark = " (REST)" if t.reconciled else ""
            full.append(f"{name}{mark} {when_full(t.updated_at_ms)}")
            names.append(name)
            name = html.escape(name)
            steps.append(f"<span class='tk-rec'>{name}</span>" if t.reconciled else name)
        timeline = " → ".join(steps[-TIMELINE_STEPS:])
        text = " → ".join(names[-TIMELINE_STEPS:])
        if len(steps) > TIMELINE_STEPS:
            more = f"+{len(steps) - TIMELINE_STEPS} →"
            timeline = f"<span class='tk-muted'>{more}</span> {timeline}"
            text = f"{more} {text}"
        return timeline, text, "\n".join(full)

    def _row_html(self, state: Any) -> str:
        order: Mapping[str, Any] = state.order
        timeline, _text, full = self._timeline(state)
        limit = order.get("limitPrice")
        return (
            f"<div class='tk-orow tk-grid tk-view' style='{self._grid}' "
            f"data-order='{html.escape(state.order_id)}'>"
            f"<span title='{html.escape(state.order_id)}'>{html.escape(state.order_id)}</span>"
            f"<span>{html.escape(str(order.get('type', '')))}</span>"
            f"<span>{html.escape(str(order.get('symbol', '')))}</span>"
            f"<span>{html.escape(str(order.get('side', '')))}</span>"
            f"<span class='tk-num'>{html.escape(price_text(limit))}</span>"
            f"<span>{badge(state.status, state.status_raw)}</span>"
            f"<span class='tk-tl' title='{html.escape(full)}'>{timeline}</span>"
            f"<span class='tk-num' title='{when_full(state.updated_at_ms)}'>"
            f"{when_compact(state.updated_at_ms)}</span></div>"
        )

    def to_frame(self) -> pd.DataFrame:
        """The orders that match the filter, newest first, as the table shows them:
        ``orderId``, ``type``, ``symbol``, ``side``, ``limitPrice``, ``status`` (canonical),
        ``statusRaw`` (as sent), ``timeline`` (every status, oldest first), ``updatedAt``
        (UTC) and ``cancelOutcome`` (plain text, None without a cancel)."""
        states = self._matching()
        limits = [state.order.get("limitPrice") for state in states]
        return pd.DataFrame(
            {
                "orderId": pd.array([s.order_id for s in states], dtype="string"),
                "type": pd.array([s.order.get("type") for s in states], dtype="string"),
                "symbol": pd.array([s.order.get("symbol") for s in states], dtype="string"),
                "side": pd.array([s.order.get("side") for s in states], dtype="string"),
                "limitPrice": pd.to_numeric(
                    pd.Series([None if v in (None, "") else v for v in limits], dtype="object"),
                    errors="coerce",
                ).astype("float64"),
                "status": pd.array([s.status for s in states], dtype="string"),
                "statusRaw": pd.array([s.status_raw for s in states], dtype="string"),
                "timeline": pd.array(
                    [
                        " → ".join(t.status.upper() for t in self.book.history(s.order_id))
                        for s in states
                    ],
                    dtype="string",
                ),
                "updatedAt": pd.to_datetime(
                    pd.Series([s.updated_at_ms or None for s in states], dtype="float64"),
                    unit="ms",
                    utc=True,
                ).astype("datetime64[ms, UTC]"),
                "cancelOutcome": pd.array(
                    [self._outcome_plain(s.order_id) for s in states], dtype="string"
                ),
            }
        )

    def _counts_html(self, shown: int) -> str:
        if self._loading:
            note = "stopped before the orders were read" if self._stopped else f"{_LOADING}…"
            return f"<div class='tk-counts tk-muted' data-loading='true'>{note}</div>"
        counts = self.counts()
        groups = {"ACTIVE": 0, "FINALIZED": 0, None: 0}
        for state in self.book.orders.values():
            groups[self._shortcuts.shortcut(state.status, state.order.get("type"))] += 1
        # a status the profile puts in neither shortcut is counted apart
        other = f", other {groups[None]}" if groups[None] else ""
        parts = [
            f"<b>{sum(counts.values())}</b> orders (ACTIVE {groups['ACTIVE']}, "
            f"FINALIZED {groups['FINALIZED']}{other}); matching: {shown}"
        ]
        ordered = [s for s in STATUS_ORDER if s in counts] + sorted(
            s for s in counts if s not in STATUS_ORDER
        )
        parts += [f"{badge(s)}&nbsp;{counts[s]}" for s in ordered]
        return "<div class='tk-counts'>" + " ".join(parts) + "</div>"

    def _all_widgets(self) -> list[widgets.Widget]:
        out: list[widgets.Widget] = [self._status, self._counts, self.filter, self._legend]
        for slot in (self._header, *self._slots):
            out += slot.widgets()
        out += self._buttons.widgets()
        out += [self._bar, self._container]
        return out

    def _freeze(self) -> None:
        self.filter.disabled = True
        self._buttons.disable()

    # -- cancel ------------------------------------------------------------------------

    def _on_cancel_click(self, order_id: str) -> None:
        """A click on ``order_id``'s own button (wherever its row is now)."""
        if self._client is None or self._stopped:
            return
        self._set_note(order_id, "cancelling…", "tk-warn")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            self._spawn_cancel(order_id)
        elif self._loop is not None:
            # a click handled off the loop's thread: hand the request to the view's loop
            self._loop.call_soon_threadsafe(self._spawn_cancel, order_id)

    def _spawn_cancel(self, order_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self.cancel(order_id))
        self._cancel_tasks.add(task)
        task.add_done_callback(self._cancel_tasks.discard)

    async def cancel(self, order_id: str) -> Any:
        """Cancel ``order_id`` with the typed cancel and show its outcome on the row;
        returns the CancelResult (None when the request failed, the error is shown)."""
        if self._client is None:
            raise RuntimeError("this view has no client to cancel with")
        try:
            result = await self._client.acancel_limit_order(order_id)
        except Exception as exc:
            self._set_note(order_id, f"{type(exc).__name__}: {exc}", "tk-bad")
            return None
        self._notes.pop(order_id, None)
        self.cancel_results[order_id] = result
        self.cancel_results.move_to_end(order_id)
        while len(self.cancel_results) > self._outcome_limit:
            self.cancel_results.popitem(last=False)
        self._show_outcome(order_id)
        return result

    def _outcome(self, order_id: str) -> tuple[str, str, str] | None:
        """(outcome code, text, tone) of the cancel of ``order_id`` as it stands now."""
        result = self.cancel_results.get(order_id)
        if result is None:
            note = self._notes.get(order_id)
            return None if note is None else ("", *note)
        code = str(getattr(result.outcome, "value", result.outcome))
        state = self.book.orders.get(order_id)
        text, tone = outcome_label(code, result.status, state.status if state else None)
        return code, text, tone

    def outcome_text(self, order_id: str) -> str:
        """The outcome shown for ``order_id`` (HTML), '' when none. It follows the order:
        "accepted (CANCELLING)" becomes "cancelled" once the order is CANCELLED."""
        outcome = self._outcome(order_id)
        if outcome is None:
            return ""
        return outcome_html(order_id, *outcome)

    def _outcome_plain(self, order_id: str) -> str | None:
        outcome = self._outcome(order_id)
        return None if outcome is None else outcome[1]

    def _set_note(self, order_id: str, text: str, tone: str) -> None:
        """A transient outcome ("cancelling…") or a failed request's error."""
        self._notes[order_id] = (text, tone)
        self._notes.move_to_end(order_id)
        while len(self._notes) > self._outcome_limit:
            self._notes.popitem(last=False)
        self._show_outcome(order_id)

    def _show_outcome(self, order_id: str) -> None:
        slot = self.slot_for(order_id)
        state = self.book.orders.get(order_id)
        if slot is not None and state is not None:
            self._fill(slot, state)

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
