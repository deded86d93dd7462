"""``OrderStatusView``: a live table of orders moving through their statuses, fed by the
reconciled OrderBook, with counts, a status filter and a Cancel button on OPEN limit orders."""

from __future__ import annotations

import asyncio
import html
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import ipywidgets as widgets

from toolkit.stream._events import OrderEvent, SessionEvent
from toolkit.widgets._base import LiveView
from toolkit.widgets._sources import aiter_events, describe_source, is_client
from toolkit.widgets._throttle import Clock

# PRODUCT.md reads the shortcuts literally; market "pending" can still execute too.
ACTIVE_STATUSES = frozenset({"OPEN", "TRIGGERED", "PROCESSING", "PENDING"})
STATUS_ORDER = (
    "OPEN",
    "TRIGGERED",
    "PROCESSING",
    "PENDING",
    "CANCELLING",
    "EXECUTED",
    "CLOSED",
    "EXPIRED",
    "CANCELLED",
    "REJECTED",
)
FILTERS = ("ALL", "ACTIVE", "FINALIZED", *STATUS_ORDER)
_BADGE = {
    "OPEN": "#0969da",
    "TRIGGERED": "#8250df",
    "PROCESSING": "#bf8700",
    "PENDING": "#bf8700",
    "CANCELLING": "#b35900",
    "EXECUTED": "#1a7f37",
    "CLOSED": "#116329",
    "EXPIRED": "#6e7781",
    "CANCELLED": "#57606a",
    "REJECTED": "#cf222e",
}
_GRID = "display:grid;grid-template-columns:130px 50px 75px 40px 85px 95px 330px 95px;gap:4px;"
_COLUMNS = ("order", "type", "symbol", "side", "limit", "status", "timeline", "updated (UTC)")
_STYLE = """<style>
.tk-orow {font-family: ui-monospace, monospace; font-size: 12px; align-items: center;}
.tk-badge {color: white; border-radius: 8px; padding: 0 6px; font-size: 11px;}
.tk-tl .tk-rec {font-style: italic; opacity: 0.7;}
</style>"""


def badge(status: str, status_raw: str | None = None) -> str:
    """A coloured badge for ``status`` (canonical), showing the case the service sent."""
    canonical = status.upper()
    colour = _BADGE.get(canonical, "#57606a")
    text = html.escape(status_raw or status)
    return (
        f"<span class='tk-badge' data-status='{html.escape(canonical)}' "
        f"style='background:{colour}'>{text}</span>"
    )


def matches(status: str, flt: str) -> bool:
    """Whether an order in (canonical) ``status`` passes the filter ``flt``."""
    if flt == "ALL":
        return True
    if flt == "ACTIVE":
        return status in ACTIVE_STATUSES
    if flt == "FINALIZED":
        return status not in ACTIVE_STATUSES
    return status == flt


def _hms(ms: int) -> str:
    if not ms:
        return "–"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]


class _Slot:
    """One visible row: created once, shows whichever order the repaint assigns it."""

    __slots__ = ("box", "button", "html", "order_id", "outcome")

    def __init__(self) -> None:
        self.html = widgets.HTML()
        self.button = widgets.Button(
            description="Cancel",
            button_style="warning",
            layout=widgets.Layout(width="72px", visibility="hidden"),
        )
        self.outcome = widgets.HTML(layout=widgets.Layout(width="260px"))
        self.box = widgets.HBox(
            [self.html, self.button, self.outcome], layout=widgets.Layout(display="none")
        )
        self.order_id: str | None = None

    def widgets(self) -> list[widgets.Widget]:
        return [self.html, self.button, self.outcome, self.box]


class OrderStatusView(LiveView):
    """Live orders: one row per order with a status badge (both status families, the case
    the service sent), its transition timeline, counts per status, a filter (ALL, ACTIVE,
    FINALIZED or one status) and a Cancel button on OPEN limit orders.

    ``source`` is a client (the view runs a reconciled ``OrderBook`` on its own stream:
    ``watchOrders``, and fetchOrder after every gap), or a recording path / replay iterator
    / iterable of events (offline; give ``client=`` to enable Cancel). The Cancel button
    awaits ``client.acancel_limit_order(order_id)`` and shows the ``CancelResult``
    (accepted, deferred while executing, already final, already cancelling). The newest
    ``max_rows`` matching orders are shown in rows created once; the book keeps at most
    ``history_limit`` finished orders. Repaints at most ``max_hz`` times per second on
    ``clock``. Starts itself on the running loop when there is one (unless
    ``autostart=False``); ``stop()`` cancels its tasks and closes its widgets.
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
        super().__init__(max_hz=max_hz, clock=clock)
        from toolkit.stream._orderbook import OrderBook

        if status.upper() not in FILTERS:
            raise ValueError(f"status filter must be one of {', '.join(FILTERS)}; got {status!r}")
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
        self._remove_listener = self.book.add_listener(self._on_order_event)
        self._changed = True
        # outcome text per order, bounded like the book's history
        self._outcomes: OrderedDict[str, str] = OrderedDict()
        self._outcome_limit = max(history_limit, max_rows)
        self.cancel_results: OrderedDict[str, Any] = OrderedDict()
        self._cancel_tasks: set[asyncio.Task[None]] = set()

        self._counts = widgets.HTML()
        self.filter = widgets.Dropdown(
            options=list(FILTERS),
            value=status.upper(),
            description="show",
            layout=widgets.Layout(width="220px"),
        )
        self.filter.observe(self._on_filter, names="value")
        header = "".join(f"<span>{html.escape(c)}</span>" for c in _COLUMNS)
        self._header = widgets.HTML(
            value=f"{_STYLE}<div class='tk-orow' style='{_GRID}color:#57606a'>{header}</div>"
        )
        self._slots = [_Slot() for _ in range(max_rows)]
        for i, slot in enumerate(self._slots):
            slot.button.on_click(lambda _b, i=i: self._on_cancel_click(i))
        self._container.children = (
            self._status,
            widgets.HBox([self.filter, self._counts]),
            self._header,
            *(slot.box for slot in self._slots),
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
        self._changed = True
        self._paint_soon()

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

    def _on_filter(self, _change: Any) -> None:
        self._changed = True
        self.repaint(force=True)

    # -- painting ----------------------------------------------------------------------

    def _dirty(self) -> bool:
        return self._changed

    def _paint(self) -> None:
        self._changed = False
        flt = self.filter.value
        states = [s for s in self.book.orders.values() if matches(s.status, flt)]
        states.sort(key=lambda s: (s.updated_at_ms, s.order_id), reverse=True)
        for slot, state in zip(self._slots, states, strict=False):
            self._fill(slot, state)
        for slot in self._slots[len(states) :]:
            slot.order_id = None
            slot.box.layout.display = "none"
        self._counts.value = self._counts_html(len(states))

    def _fill(self, slot: _Slot, state: Any) -> None:
        slot.order_id = state.order_id
        order: Mapping[str, Any] = state.order
        cancellable = (
            self._client is not None
            and str(order.get("type", "")).lower() == "limit"
            and state.status == "OPEN"
        )
        slot.html.value = self._row_html(state)
        slot.button.layout.visibility = "visible" if cancellable else "hidden"
        slot.outcome.value = self._outcomes.get(state.order_id, "")
        slot.box.layout.display = "flex"

    def _row_html(self, state: Any) -> str:
        order: Mapping[str, Any] = state.order
        steps = []
        for t in self.book.history(state.order_id):
            cls = " class='tk-rec' title='read over REST after a gap'" if t.reconciled else ""
            steps.append(f"<span{cls}>{html.escape(t.status_raw or t.status)}</span>")
        timeline = " → ".join(steps[-8:])
        if len(steps) > 8:
            timeline = "… → " + timeline
        limit = order.get("limitPrice")
        return (
            f"<div class='tk-orow' style='{_GRID}' data-order='{html.escape(state.order_id)}'>"
            f"<span>{html.escape(state.order_id)}</span>"
            f"<span>{html.escape(str(order.get('type', '')))}</span>"
            f"<span>{html.escape(str(order.get('symbol', '')))}</span>"
            f"<span>{html.escape(str(order.get('side', '')))}</span>"
            f"<span>{html.escape(str(limit)) if limit not in (None, '') else '–'}</span>"
            f"<span>{badge(state.status, state.status_raw)}</span>"
            f"<span class='tk-tl'>{timeline}</span>"
            f"<span>{_hms(state.updated_at_ms)}</span></div>"
        )

    def _counts_html(self, shown: int) -> str:
        counts = self.counts()
        active = sum(n for s, n in counts.items() if s in ACTIVE_STATUSES)
        total = sum(counts.values())
        parts = [
            f"<b>{total}</b> orders (ACTIVE {active}, FINALIZED {total - active}); "
            f"matching: {shown}"
        ]
        ordered = [s for s in STATUS_ORDER if s in counts] + sorted(
            s for s in counts if s not in STATUS_ORDER
        )
        parts += [f"{badge(s)}&nbsp;{counts[s]}" for s in ordered]
        return "<div class='tk-counts'>" + " ".join(parts) + "</div>"

    def _all_widgets(self) -> list[widgets.Widget]:
        out: list[widgets.Widget] = [self._status, self._counts, self.filter, self._header]
        for slot in self._slots:
            out += slot.widgets()
        out += list(self._container.children[1:2])  # the filter/counts HBox
        out.append(self._container)
        return out

    # -- cancel ------------------------------------------------------------------------

    def _on_cancel_click(self, index: int) -> None:
        order_id = self._slots[index].order_id
        if order_id is None or self._client is None:
            return
        self._set_outcome(order_id, "<span style='color:#8a6d00'>cancelling…</span>")
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
            text = f"{type(exc).__name__}: {exc}"
            self._set_outcome(order_id, f"<span style='color:#cf222e'>{html.escape(text)}</span>")
            return None
        self.cancel_results[order_id] = result
        while len(self.cancel_results) > self._outcome_limit:
            self.cancel_results.popitem(last=False)
        outcome = getattr(result.outcome, "value", str(result.outcome))
        label = {
            "accepted": "accepted",
            "deferred": "deferred while executing",
            "already_final": "already final",
            "already_cancelling": "already cancelling",
            "not_found": "not found",
        }.get(outcome, outcome)
        status = f" ({result.status})" if result.status else ""
        colour = "#1a7f37" if outcome == "accepted" else "#8a6d00"
        self._set_outcome(
            order_id,
            f"<span class='tk-outcome' data-outcome='{html.escape(outcome)}' "
            f"style='color:{colour}' title='{html.escape(str(result))}'>"
            f"{html.escape(label)}{html.escape(status)}</span>",
        )
        return result

    def outcome_text(self, order_id: str) -> str:
        """The outcome shown for ``order_id`` (HTML), '' when none."""
        return self._outcomes.get(order_id, "")

    def _set_outcome(self, order_id: str, text: str) -> None:
        self._outcomes[order_id] = text
        self._outcomes.move_to_end(order_id)
        while len(self._outcomes) > self._outcome_limit:
            self._outcomes.popitem(last=False)
        slot = self.slot_for(order_id)
        if slot is not None:
            slot.outcome.value = text

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
            if session.connected:
                self._set_state("connected")
            try:
                await self.book.run(session=session)
            finally:
                remove()

    def _on_stream_event(self, event: Any) -> None:
        if isinstance(event, SessionEvent):
            self._on_session_event(event)

    def stop(self) -> None:
        for task in list(self._cancel_tasks):
            task.cancel()
        self._remove_listener()
        super().stop()

    def __repr__(self) -> str:
        return (
            f"OrderStatusView(orders={len(self.book.orders)}, state={self.state!r}, "
            f"filter={self.filter.value!r}, repaints={self.repaints})"
        )


__all__: Sequence[str] = ("FILTERS", "OrderStatusView", "badge", "matches")
