"""``TickerView``: a live table of prices, one row per pair, repainted at most ``max_hz``
times a second from a client's ticker channels or from a recording."""

from __future__ import annotations

import html
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import ipywidgets as widgets

from toolkit.stream._events import SessionEvent, TickerEvent, TickersEvent
from toolkit.widgets._base import LiveView
from toolkit.widgets._sources import Subscription, aiter_events, describe_source
from toolkit.widgets._throttle import Clock

_BLOCKS = "▁▂▃▄▅▆▇█"
_COLUMNS = ("symbol", "bid", "ask", "last", "change", "trend", "updated (UTC)")
_GRID = "display:grid;grid-template-columns:90px 110px 110px 110px 90px 150px 110px;gap:4px;"
# The flash is a CSS animation, so a highlight costs no extra repaint to switch off.
_STYLE = """<style>
@keyframes tk-flash-up {from {background:#b7f5c4;} to {background:transparent;}}
@keyframes tk-flash-down {from {background:#ffc9c9;} to {background:transparent;}}
.tk-up {animation: tk-flash-up 0.8s ease-out; color:#1a7f37;}
.tk-down {animation: tk-flash-down 0.8s ease-out; color:#cf222e;}
.tk-row {font-family: ui-monospace, monospace; font-size: 12px;}
.tk-row span {padding: 0 2px; text-align: right;}
.tk-row span.tk-sym {text-align: left; font-weight: 600;}
.tk-row span.tk-spark {text-align: left; letter-spacing: -1px;}
</style>"""


def sparkline(values: Iterable[float]) -> str:
    """Unicode block sparkline of ``values`` (empty string for no values)."""
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    if hi == lo:
        return _BLOCKS[3] * len(vals)
    scale = (len(_BLOCKS) - 1) / (hi - lo)
    return "".join(_BLOCKS[round((v - lo) * scale)] for v in vals)


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "–"
    if abs(value) >= 1000:
        return f"{value:,.2f}"
    return f"{value:.4f}"


@dataclass(slots=True)
class TickerRow:
    """Latest state of one pair. Its size is fixed: the sparkline keeps ``spark_len`` lasts."""

    symbol: str
    bid: float = math.nan
    ask: float = math.nan
    last: float = math.nan
    first_last: float = math.nan
    timestamp: int = 0
    ticks: int = 0
    spark: deque[float] = field(default_factory=deque)
    # what the widget shows now, to flash only the cells that moved since
    shown: tuple[float, float, float] = (math.nan, math.nan, math.nan)

    @property
    def change(self) -> float:
        """Relative change of ``last`` since the view first saw this pair."""
        if math.isnan(self.first_last) or self.first_last == 0:
            return math.nan
        return self.last / self.first_last - 1.0


class TickerView(LiveView):
    """Live prices: one row per pair with bid, ask, last, change since start, time of the
    last update, a flash on change and a sparkline of the last ``spark_len`` lasts.

    ``source`` is a client (subscribes ``watchTickers`` when ``symbols`` is None, one
    ``watchTicker`` per symbol otherwise), a recording path or ``tk.replay(...)`` iterator,
    or any (async) iterable of ticker events. The view starts itself as a task on the
    running loop when there is one (Jupyter) unless ``autostart=False``; otherwise call
    ``start()`` inside a loop or ``await view.run()``. ``stop()`` cancels the task (closing
    its stream) and closes the widgets; ``speed`` paces a recording (None: at once).
    However fast ticks arrive, the widgets repaint at most ``max_hz``
    times per second on ``clock`` (injectable for tests), pushing only the rows that changed
    since the last repaint. Memory is bounded by the number of pairs.
    """

    def __init__(
        self,
        source: object,
        symbols: Sequence[str] | None = None,
        max_hz: float = 10.0,
        *,
        spark_len: int = 30,
        only_priority: bool = False,
        speed: float | None = None,
        clock: Clock | None = None,
        autostart: bool = True,
    ) -> None:
        super().__init__(max_hz=max_hz, clock=clock)
        self._source = source
        self._symbols: tuple[str, ...] | None = tuple(symbols) if symbols is not None else None
        self._only_priority = only_priority
        self._speed = speed
        self._spark_len = spark_len
        self._rows: dict[str, TickerRow] = {}
        self._row_widgets: dict[str, widgets.HTML] = {}
        self._dirty_rows: set[str] = set()
        self._kind = describe_source(source)
        header = "".join(f"<span>{html.escape(c)}</span>" for c in _COLUMNS)
        self._header = widgets.HTML(
            value=f"{_STYLE}<div class='tk-row' style='{_GRID}color:#57606a'>{header}</div>"
        )
        self._body = widgets.VBox()
        self._container.children = (self._status, self._header, self._body)
        if self._symbols is not None:
            for symbol in self._symbols:
                self._row(symbol)
            self._body.children = tuple(self._row_widgets.values())
        if autostart:
            self._autostart()

    # -- state -------------------------------------------------------------------------

    @property
    def rows(self) -> Mapping[str, TickerRow]:
        """Latest state per pair (read-only view)."""
        return self._rows

    @property
    def subscriptions(self) -> list[Subscription]:
        if self._symbols is None:
            data: dict[str, Any] = {"onlyPriority": True} if self._only_priority else {}
            return [("watchTickers", data)]
        return [("watchTicker", {"symbol": s}) for s in self._symbols]

    def _row(self, symbol: str) -> TickerRow:
        row = self._rows.get(symbol)
        if row is None:
            row = TickerRow(symbol, spark=deque(maxlen=self._spark_len))
            self._rows[symbol] = row
            # one widget per pair, created the first time the pair is seen and then only
            # updated in place
            self._row_widgets[symbol] = widgets.HTML(value=self._row_html(row, flash=False))
        return row

    def apply(self, event: Any) -> bool:
        """Fold one event into the state (sans-I/O); True when a row changed."""
        if isinstance(event, TickerEvent):
            return self._apply_ticker(event)
        if isinstance(event, TickersEvent):
            changed = False
            for ticker in event.tickers:
                changed = self._apply_ticker(ticker) or changed
            return changed
        if isinstance(event, SessionEvent):
            self._on_session_event(event)
        return False

    def _apply_ticker(self, ticker: TickerEvent) -> bool:
        symbol = ticker.symbol
        if self._symbols is not None and symbol not in self._symbols:
            return False
        new = symbol not in self._rows
        row = self._row(symbol)
        if new:
            self._body.children = (*self._body.children, self._row_widgets[symbol])
        last = float(ticker.last)
        if math.isnan(row.first_last):
            row.first_last = last
        if last != row.last or not row.spark:
            row.spark.append(last)
        row.bid = float(ticker.bid)
        row.ask = float(ticker.ask)
        row.last = last
        row.timestamp = int(ticker.timestamp)
        row.ticks += 1
        self._dirty_rows.add(symbol)
        return True

    # -- painting ----------------------------------------------------------------------

    def _dirty(self) -> bool:
        return bool(self._dirty_rows)

    def _paint(self) -> None:
        dirty, self._dirty_rows = self._dirty_rows, set()
        for symbol in dirty:
            row = self._rows[symbol]
            self._row_widgets[symbol].value = self._row_html(row, flash=True)
            row.shown = (row.bid, row.ask, row.last)

    def _row_html(self, row: TickerRow, *, flash: bool) -> str:
        def cell(value: float, before: float) -> str:
            cls = ""
            if flash and not math.isnan(before) and value != before:
                cls = " class='tk-up'" if value > before else " class='tk-down'"
            return f"<span{cls}>{_fmt(value)}</span>"

        change = row.change
        if math.isnan(change):
            change_html = "<span>–</span>"
        else:
            colour = "#1a7f37" if change > 0 else "#cf222e" if change < 0 else "#57606a"
            change_html = f"<span style='color:{colour}'>{change * 100:+.2f}%</span>"
        updated = (
            datetime.fromtimestamp(row.timestamp / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]
            if row.timestamp
            else "–"
        )
        return (
            f"<div class='tk-row' style='{_GRID}' data-symbol='{html.escape(row.symbol)}'>"
            f"<span class='tk-sym'>{html.escape(row.symbol)}</span>"
            f"{cell(row.bid, row.shown[0])}{cell(row.ask, row.shown[1])}"
            f"{cell(row.last, row.shown[2])}{change_html}"
            f"<span class='tk-spark'>{sparkline(row.spark)}</span>"
            f"<span>{updated}</span></div>"
        )

    def _all_widgets(self) -> list[widgets.Widget]:
        return [
            self._status,
            self._header,
            self._body,
            *self._row_widgets.values(),
            self._container,
        ]

    # -- the task ----------------------------------------------------------------------

    async def run(self) -> None:
        """Consume the source until it ends or the task is cancelled."""
        self._set_state("connecting" if self._kind == "live" else "replaying")
        async for event in aiter_events(self._source, self.subscriptions, speed=self._speed):
            if self.apply(event):
                self._paint_soon()
        await self._final_paint()
        if self._kind == "replay":
            self._set_state("replay finished")

    def __repr__(self) -> str:
        return (
            f"TickerView(pairs={len(self._rows)}, state={self.state!r}, repaints={self.repaints})"
        )
