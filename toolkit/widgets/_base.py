"""What both live views share: the task on the kernel's loop, the throttled repaint
schedule, the connection-state line, stop() / close(), and notebook display."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from typing import Any

import ipywidgets as widgets
import pandas as pd

from toolkit.errors import InvalidRequest
from toolkit.widgets._theme import OFFLINE, status_html
from toolkit.widgets._throttle import Clock, RepaintThrottle

_log = logging.getLogger("toolkit.widgets")

#: ``OFFLINE`` (from _theme): states in which what a view shows is not live: its prices
#: are greyed with their age and its Cancel buttons are disabled (a stopped view says
#: "stopped" and keeps its last prices and times as they were: a frozen age would only
#: go stale in a saved notebook)
#: the loggers of what a running view does (its stream, its order book, itself): their
#: records go to the view's status line, never printed into the cell's output
VIEW_LOGGERS = ("toolkit.stream", "toolkit.orderbook", "toolkit.widgets")


class _StatusLineHandler(logging.Handler):
    """Shows the warnings of a running view's stream and book on its status line. Being a
    handler, it also keeps Python's last-resort handler from printing them into the cell
    (a notebook without logging set up has no other); a user's own handlers still get them.
    The view's own error is on its state line already: it is not repeated."""

    def __init__(self, view: LiveView) -> None:
        super().__init__(logging.WARNING)
        self._view = view

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == _log.name:
            return
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not break the view
            message = str(record.msg)
        self._view._on_warning(message)


def check_int(name: str, value: object, least: int) -> int:
    """``value`` when it is an integer >= ``least``, else InvalidRequest naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidRequest(f"{name} must be an integer >= {least}, not {value!r}")
    return value


def check_positive(name: str, value: object, what: str) -> float:
    """``value`` as a float when it is a finite number > 0 (NaN and infinity are not), else
    InvalidRequest naming ``name`` and saying ``what`` it counts."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (math.isfinite(value) and value > 0)
    ):
        raise InvalidRequest(f"{name} must be a finite number > 0 ({what}), not {value!r}")
    return float(value)


def check_speed(speed: object) -> float | None:
    """A replay pace: None (as fast as possible) or a finite number > 0."""
    if speed is None:
        return None
    return check_positive("speed", speed, "times real time; None replays at once")


def check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidRequest(f"{name} must be True or False, not {value!r}")
    return value


class LiveView:
    """Base of the live views. Subclasses implement ``run()`` (consume the source),
    ``_paint()`` (push dirty state into the widgets) and ``_dirty()``."""

    def __init__(self, *, max_hz: float, clock: Clock | None) -> None:
        max_hz = check_positive("max_hz", max_hz, "repaints per second")
        if clock is not None and not callable(clock):
            raise InvalidRequest(f"clock must be None or a callable giving seconds, not {clock!r}")
        self._throttle = RepaintThrottle(max_hz, clock)
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False
        self._closed = False
        self.state = "idle"
        self.state_detail = ""
        self.warnings = 0
        self._warning = ""
        self._status = widgets.HTML(value=self._status_html())
        self._container: widgets.Box = widgets.VBox(
            layout=widgets.Layout(width="100%", overflow="auto")
        )

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def widget(self) -> widgets.Box:
        """The container displayed in the notebook (created once, updated in place)."""
        return self._container

    @property
    def task(self) -> asyncio.Task[None] | None:
        return self._task

    @property
    def repaints(self) -> int:
        """How many repaints happened (each pushes only the rows that changed)."""
        return self._throttle.repaints

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> asyncio.Task[None]:
        """Run the view as a task on the running loop (the kernel's, in Jupyter) and return
        it; the cell is never blocked. Raises RuntimeError when no loop runs."""
        if self._stopped:
            raise RuntimeError("this view was stopped; create a new one")
        if self.running:
            assert self._task is not None
            return self._task
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._run_guarded())
        return self._task

    def _autostart(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # No loop here (plain script, tests): the caller starts it or awaits run().
            return
        self.start()

    async def run(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def _run_guarded(self) -> None:
        handler = _StatusLineHandler(self)
        for name in VIEW_LOGGERS:
            logging.getLogger(name).addHandler(handler)
        try:
            await self.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # A view is fire-and-forget in a notebook: show the failure where the user looks
            # and log it once. Re-raising would leave an exception nobody retrieves, which
            # asyncio reports again, with a traceback, whenever the task is collected.
            self._set_state("error", f"{type(exc).__name__}: {exc}")
            _log.error("%s stopped: %s: %s", type(self).__name__, type(exc).__name__, exc)
        finally:
            for name in VIEW_LOGGERS:
                logging.getLogger(name).removeHandler(handler)

    def _on_warning(self, message: str) -> None:
        """A warning of the view's stream or book: counted, the last one on the status line."""
        self.warnings += 1
        self._warning = message if self.warnings == 1 else f"({self.warnings}) {message}"
        if not self._closed:
            self._status.value = self._status_html()

    def stop(self) -> None:
        """Cancel the view's task (which closes its stream) and freeze the widgets on the
        last state: the table stays on screen, the state line says "stopped" and the
        controls are disabled. That last state is sent whole once more, so a notebook
        executed without a front end (nbclient, for the docs) saves it, not an older one.
        ``close()`` removes the widgets."""
        if self._stopped:
            return
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self._dirty():
            self._paint()
        self._freeze()
        if self.state != "error":
            self._set_state("stopped")
        self._resync()

    def _resync(self) -> None:
        # nbclient saves a notebook's widget state from the messages of the cell it runs
        # only, so it misses what the view's task painted between cells: resend it all
        # (from the cell that stops the view). A front end that has it all redraws nothing.
        for w in self._all_widgets():
            for part in (w, getattr(w, "layout", None), getattr(w, "style", None)):
                if isinstance(part, widgets.Widget):
                    part.send_state()

    def close(self) -> None:
        """``stop()`` and close the widgets: the view disappears from the notebook."""
        self.stop()
        if not self._closed:
            self._closed = True
            self._close_widgets()

    def _freeze(self) -> None:
        """Disable the view's controls once stopped (subclasses that have some)."""

    def to_frame(self) -> pd.DataFrame:  # pragma: no cover - abstract
        """The view's current table as a DataFrame."""
        raise NotImplementedError

    async def astop(self) -> None:
        """``stop()`` and wait until the task has finished unwinding."""
        task = self._task
        self.stop()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def aclose(self) -> None:
        """``close()`` and wait until the task has finished unwinding."""
        task = self._task
        self.close()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _close_widgets(self) -> None:
        for w in self._all_widgets():
            # a widget's layout and style are widgets of their own; close() leaves them
            for part in (getattr(w, "layout", None), getattr(w, "style", None)):
                if isinstance(part, widgets.Widget):
                    part.close()
            w.close()

    def _all_widgets(self) -> list[widgets.Widget]:
        return [self._status, self._container]

    # -- repaint scheduling ------------------------------------------------------------

    def _dirty(self) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def _paint(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def repaint(self, *, force: bool = False) -> bool:
        """Paint the dirty rows if the throttle allows (or ``force``); True when painted."""
        if self._stopped or not self._dirty():
            return False
        if force:
            self._throttle.repaints += 1
        elif not self._throttle.acquire():
            return False
        self._paint()
        return True

    def _paint_soon(self) -> None:
        """Repaint now if allowed, else make sure a timer repaints when the slot opens, so
        the last tick of a burst is always shown."""
        if self.repaint() or self._timer is not None or not self._dirty():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(self._throttle.delay(), self._on_timer)

    async def _final_paint(self) -> None:
        """Show the end of a finished source, in the next free slot of the throttle."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._dirty():
            await asyncio.sleep(self._throttle.delay())
            # a fake clock that did not move during the sleep must not hide the end
            if not self.repaint():
                self.repaint(force=True)

    def _on_timer(self) -> None:
        self._timer = None
        self._paint_soon()

    # -- connection state --------------------------------------------------------------

    def _set_state(self, state: str, detail: str = "") -> None:
        if (state, detail) == (self.state, self.state_detail) or self._closed:
            return
        if self._stopped and state != "stopped":
            return  # a stopped view stays frozen on its last state
        self.state = state
        self.state_detail = detail
        self._status.value = self._status_html()
        self._on_state()

    @property
    def offline(self) -> bool:
        """True while what the view shows is not live (connecting, reconnecting, failed):
        prices are greyed with their age, Cancel buttons disabled."""
        return self.state in OFFLINE

    def _on_state(self) -> None:
        """Called after every change of state (subclasses grey or disable what they show)."""

    def _on_session_event(self, event: Any) -> None:
        kind = getattr(event, "kind", "")
        detail = str(getattr(event, "detail", "") or "")
        if kind in ("connected", "subscribed", "resubscribed"):
            if self.state != "gap reconciled" or kind == "connected":
                self._set_state("connected", detail if kind == "connected" else "")
        elif kind in ("disconnected", "dropped"):
            self._set_state("reconnecting", detail)
        elif kind == "gap":
            start = getattr(event, "gap_start_ns", None)
            end = getattr(event, "gap_end_ns", None)
            if isinstance(start, int) and isinstance(end, int) and end >= start:
                detail = f"gap of {(end - start) / 1e9:.1f} s"
            self._on_gap(detail)

    def _on_gap(self, detail: str) -> None:
        if self.state in ("replaying", "replay finished"):
            # a gap inside a recording: nothing can be re-read, say where data is missing
            self._set_state(self.state, f"{detail} without data in the recording")
            return
        # the next ticks after the restored subscriptions are the current prices again
        self._set_state("gap reconciled", detail)

    def _status_html(self) -> str:
        return status_html(self.state, self.state_detail, self._warning)

    # -- display -----------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = self._container._repr_mimebundle_(**kwargs)
        # where widgets do not render (a console, a static page without the widget
        # manager) the view's own summary reads better than the container's repr
        if isinstance(bundle, dict) and "text/plain" in bundle:
            bundle["text/plain"] = repr(self)
        return bundle
