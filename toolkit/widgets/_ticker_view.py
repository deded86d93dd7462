"""``TickerView``: a live table of prices, one row per pair, repainted at most ``max_hz``
times a second from a client's ticker channels or from a recording."""

from __future__ import annotations

import asyncio
import html
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets
import pandas as pd

from toolkit.errors import InvalidRequest
from toolkit.protocol import validate_symbol
from toolkit.stream._events import SessionEvent, TickerEvent, TickersEvent
from toolkit.widgets._base import LiveView, check_flag, check_int, check_speed
from toolkit.widgets._sources import Subscription, aiter_events, describe_source
from toolkit.widgets._theme import FLASH_S, STYLE, WHEN_CHARS, age_text, grid, price_text, when
from toolkit.widgets._throttle import Clock

_BLOCKS = "▁▂▃▄▅▆▇█"
# (header, CSS class of the column's cells): the header shares its cells' alignment
_COLUMNS = (
    ("symbol", "tk-sym"),
    ("bid", "tk-num"),
    ("ask", "tk-num"),
    ("last", "tk-num"),
    ("change", "tk-num"),
    ("trend", "tk-spark"),
    ("updated (UTC)", "tk-num"),
)


def _grid(spark_len: int) -> str:
    """Columns that size from the container: each has a readable minimum that does not
    depend on what the rows show (the sparkline's is its ``spark_len`` blocks, the time's
    the width of ``when``), so no column moves when a value widens, and shares what is
    left."""
    spark_em, when_em = spark_len * 0.55 + 0.5, WHEN_CHARS * 0.61 + 0.4
    return grid(
        "minmax(5.5em, 1fr) repeat(3, minmax(6.5em, 1.1fr)) minmax(5.2em, 0.8fr) "
        f"minmax({spark_em:.1f}em, 1.6fr) minmax({when_em:.1f}em, 1fr)"
    )


# how often a view that lost its connection updates its prices' age
_AGE_EVERY_S = 1.0


def flash_seconds(tick_gap_s: float) -> float:
    """How long a changed price's flash lasts: half its pair's last interval between two
    ticks (at most ``FLASH_S``, at least 0.1 s), so the tint is gone before the next tick
    and a tinted cell always means "changed just now"."""
    if not tick_gap_s > 0:
        return FLASH_S
    return max(0.1, min(FLASH_S, tick_gap_s / 2))


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
    return price_text(value)


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
    # why this pair has no data (its subscription failed), '' when it is fine
    error: str = ""
    # the service time of the first price (what ``change`` is measured from)
    first_at: int = 0
    # on the view's clock: when the last tick arrived, and the interval before it
    seen_at: float = math.nan
    gap_s: float = math.nan

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
    or any (async) iterable of ticker events. A symbol the service refuses (unknown, not
    permitted) becomes a row that says why; the other pairs keep going.

    The view starts itself as a task on the running loop when there is one (Jupyter)
    unless ``autostart=False``; otherwise call ``start()`` inside a loop or
    ``await view.run()``. ``stop()`` cancels the task (closing its stream) and leaves the
    last prices on screen marked "stopped"; ``close()`` also removes the widgets;
    ``to_frame()`` returns the table as a DataFrame. ``speed`` paces a recording (None: at
    once). However fast ticks arrive, the widgets repaint at most ``max_hz`` times per
    second on ``clock`` (injectable for tests), pushing only the rows that changed since
    the last repaint. Memory is bounded by the number of pairs.

    Parameters
    ----------
    source : Client, str, os.PathLike or iterable of events
        Where the ticks come from: a live client, a recording folder, ``tk.replay(...)``
        or any (async) iterable of ticker events.
    symbols : str or sequence of str, optional
        Pairs to show, ``BASE/QUOTE`` (any case; one string is one pair). None: every
        pair of ``watchTickers``.
    max_hz : float, default 10.0
        Most repaints per second (a finite number > 0).
    spark_len : int, default 30
        Number of last prices in the sparkline, at least 1.
    only_priority : bool, default False
        With ``symbols=None``, subscribe ``watchTickers`` with ``onlyPriority``.
    speed : float, optional
        Replay pace (2.0 = twice real time, a finite number > 0); None replays at once.
    clock : callable, optional
        Monotonic clock of the repaint throttle (tests pass a fake one).
    autostart : bool, default True
        Start on the running loop, if there is one.

    Raises
    ------
    InvalidRequest
        When an argument is out of range or of the wrong type (an empty ``symbols``, a
        symbol not written ``BASE/QUOTE``...): the message names it; nothing is started.

    Examples
    --------
    >>> view = tk.TickerView(client, symbols=["BTC/BRL", "ETH/BRL"])  # doctest: +SKIP
    >>> view            # displays the live table  # doctest: +SKIP
    >>> view.to_frame()  # the prices now, as a DataFrame  # doctest: +SKIP
    >>> view.stop()      # freezes the table  # doctest: +SKIP
    """

    def __init__(
        self,
        source: object,
        symbols: str | Sequence[str] | None = None,
        max_hz: float = 10.0,
        *,
        spark_len: int = 30,
        only_priority: bool = False,
        speed: float | None = None,
        clock: Clock | None = None,
        autostart: bool = True,
    ) -> None:
        self._symbols = _check_symbols(symbols)
        check_int("spark_len", spark_len, 1)
        check_flag("only_priority", only_priority)
        speed = check_speed(speed)
        check_flag("autostart", autostart)
        super().__init__(max_hz=max_hz, clock=clock)
        self._source = source
        self._only_priority = only_priority
        self._speed = speed
        self._spark_len = spark_len
        self._rows: dict[str, TickerRow] = {}
        self._row_widgets: dict[str, widgets.HTML] = {}
        self._dirty_rows: set[str] = set()
        self._caption_stale = False
        # whether the rows were last painted greyed (offline)
        self._shown_offline = False
        self._kind = describe_source(source)
        header = "".join(f"<span class='{cls}'>{html.escape(c)}</span>" for c, cls in _COLUMNS)
        self._grid = _grid(spark_len)
        self._header = widgets.HTML(
            value=f"{STYLE}<div class='tk-row tk-head tk-grid tk-view' style='{self._grid}'>"
            f"{header}</div>",
            layout=_fill(),
        )
        self._body = widgets.VBox(layout=_fill())
        # what "change" is measured from, once the first price is in
        self._caption = widgets.HTML(layout=_fill())
        self._age_timer: Any = None
        self._container.children = (self._status, self._header, self._body, self._caption)
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
            self._row_widgets[symbol] = widgets.HTML(
                value=self._row_html(row, flash=False), layout=_fill()
            )
        return row

    def set_error(self, symbol: str, message: str) -> None:
        """Show ``symbol``'s row as an error (its subscription failed); others go on."""
        symbol = symbol.strip().upper()
        new = symbol not in self._rows
        row = self._row(symbol)
        if new:
            self._body.children = (*self._body.children, self._row_widgets[symbol])
        row.error = message
        self._dirty_rows.add(symbol)
        self._paint_soon()

    def _on_subscribe_error(self, subscription: Subscription, exc: Exception) -> None:
        _channel, data = subscription
        symbol = str(data.get("symbol", "") or "all pairs")
        self.set_error(symbol, f"{type(exc).__name__}: {exc}")

    def to_frame(self) -> pd.DataFrame:
        """The table now: one row per pair (``symbol``, ``bid``, ``ask``, ``last``,
        ``change`` as a fraction, ``updated`` UTC, ``ticks``, ``error``), in display order."""
        rows = list(self._rows.values())
        frame = pd.DataFrame(
            {
                "symbol": pd.array([r.symbol for r in rows], dtype="string"),
                "bid": pd.array([r.bid for r in rows], dtype="float64"),
                "ask": pd.array([r.ask for r in rows], dtype="float64"),
                "last": pd.array([r.last for r in rows], dtype="float64"),
                "change": pd.array([r.change for r in rows], dtype="float64"),
                "updated": pd.to_datetime(
                    pd.Series([r.timestamp or None for r in rows], dtype="float64"),
                    unit="ms",
                    utc=True,
                ).astype("datetime64[ms, UTC]"),
                "ticks": pd.array([r.ticks for r in rows], dtype="int64"),
                "error": pd.array([r.error or None for r in rows], dtype="string"),
            }
        )
        return frame

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
            row.first_at = int(ticker.timestamp)
            self._caption_stale = True
        now = self._throttle.now()
        if not math.isnan(row.seen_at):
            row.gap_s = now - row.seen_at
        row.seen_at = now
        if last != row.last or not row.spark:
            row.spark.append(last)
        row.bid = float(ticker.bid)
        row.ask = float(ticker.ask)
        row.last = last
        row.timestamp = int(ticker.timestamp)
        row.ticks += 1
        row.error = ""
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
        if self._caption_stale:
            self._caption_stale = False
            self._caption.value = self._caption_html()

    def _caption_html(self) -> str:
        firsts = [r.first_at for r in self._rows.values() if r.first_at]
        if not firsts:
            return ""
        return (
            "<div class='tk-legend tk-view'>change: since the first price this view "
            f"received, {when(min(firsts))} UTC</div>"
        )

    # -- offline: greyed prices with their age -------------------------------------------

    def _on_state(self) -> None:
        if self.offline == self._shown_offline:
            return  # the rows already say it: nothing to repaint
        self._shown_offline = self.offline
        # every row shows (or stops showing) its age; a stopped view is painted here, as
        # its repaints are over
        self._dirty_rows.update(s for s, r in self._rows.items() if r.ticks)
        if self._stopped:
            if self._dirty():
                self._paint()
            return
        self._paint_soon()
        if self.offline and self._age_timer is None:
            self._schedule_age()

    def _schedule_age(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a test): repaint() shows the age on the view's clock
        self._age_timer = loop.call_later(_AGE_EVERY_S, self._on_age_timer)

    def _on_age_timer(self) -> None:
        self._age_timer = None
        if self._stopped or not self.offline:
            return
        self._dirty_rows.update(s for s, r in self._rows.items() if r.ticks)
        self._paint_soon()
        self._schedule_age()

    def _row_html(self, row: TickerRow, *, flash: bool) -> str:
        stale = self.offline and row.ticks > 0
        flash = flash and not stale
        duration = flash_seconds(row.gap_s)

        def cell(value: float, before: float) -> str:
            cls, style = "tk-num", ""
            if flash and not math.isnan(before) and value != before:
                cls += " tk-up" if value > before else " tk-down"
                style = f" style='animation-duration: {duration:.2f}s'"
            return f"<span class='{cls}'{style}>{_fmt(value)}</span>"

        start = (
            f"<div class='tk-row tk-grid tk-view{' tk-stale' if stale else ''}' "
            f"style='{self._grid}' data-symbol='{html.escape(row.symbol)}'"
        )
        symbol = f"<span class='tk-sym'>{html.escape(row.symbol)}</span>"
        if row.error:
            message = html.escape(row.error)
            return (
                f"{start} data-error='1'>{symbol}"
                f"<span class='tk-err' title='{message}'>{message}</span></div>"
            )
        change = row.change
        if math.isnan(change):
            change_html = "<span class='tk-num'>–</span>"
        else:
            tone = "tk-good" if change > 0 else "tk-bad" if change < 0 else "tk-muted"
            since = f"since {_fmt(row.first_last)} at {when(row.first_at)} UTC"
            change_html = f"<span class='tk-num {tone}' title='{since}'>{change * 100:+.2f}%</span>"
        if stale:
            age = age_text(self._throttle.now() - row.seen_at)
            updated = (
                f"<span class='tk-num tk-age' data-age='1' title='last price at "
                f"{when(row.timestamp)} UTC; the connection is lost'>{age}</span>"
            )
        else:
            updated = f"<span class='tk-num'>{when(row.timestamp)}</span>"
        return (
            f"{start}>{symbol}"
            f"{cell(row.bid, row.shown[0])}{cell(row.ask, row.shown[1])}"
            f"{cell(row.last, row.shown[2])}{change_html}"
            f"<span class='tk-spark'>{sparkline(row.spark)}</span>{updated}</div>"
        )

    def _all_widgets(self) -> list[widgets.Widget]:
        return [
            self._status,
            self._header,
            self._body,
            self._caption,
            *self._row_widgets.values(),
            self._container,
        ]

    # -- the task ----------------------------------------------------------------------

    async def run(self) -> None:
        """Consume the source until it ends or the task is cancelled."""
        self._set_state("connecting" if self._kind == "live" else "replaying")
        async for event in aiter_events(
            self._source,
            self.subscriptions,
            speed=self._speed,
            on_subscribe_error=self._on_subscribe_error,
        ):
            if self.apply(event):
                self._paint_soon()
        await self._final_paint()
        if self._kind == "replay":
            self._set_state("replay finished")

    def __repr__(self) -> str:
        return (
            f"TickerView(pairs={len(self._rows)}, state={self.state!r}, repaints={self.repaints})"
        )


def _check_symbols(symbols: object) -> tuple[str, ...] | None:
    """The pairs to show, upper case, each once; InvalidRequest (naming ``symbols``) for
    an empty list or a symbol that is not ``BASE/QUOTE``, before anything is sent."""
    if symbols is None:
        return None
    if isinstance(symbols, str):
        symbols = [symbols]
    elif not isinstance(symbols, Iterable) or isinstance(symbols, bytes | Mapping):
        raise InvalidRequest(
            f"symbols must be None or a list of pairs such as ['BTC/BRL'], not {symbols!r}"
        )
    pairs: list[str] = []
    for symbol in symbols:
        if not isinstance(symbol, str):
            raise InvalidRequest(f"symbols: each pair must be a string, not {symbol!r}")
        try:
            pairs.append(validate_symbol(symbol.strip().upper()))
        except InvalidRequest:
            raise InvalidRequest(
                f"symbols: {symbol!r} is not a pair written BASE/QUOTE (letters and digits, "
                "any case), e.g. 'BTC/BRL'"
            ) from None
    if not pairs:
        raise InvalidRequest("symbols is empty: give at least one pair, or None for every pair")
    return tuple(dict.fromkeys(pairs))


def _fill() -> widgets.Layout:
    """A layout that takes the container's width (its margins included)."""
    return widgets.Layout(width="auto", align_self="stretch")
