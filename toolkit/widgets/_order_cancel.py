"""The order view's Cancel: the two-step click (arm, then confirm on the same order's
button), the request, and its outcome on the order's row, held there for a while."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from toolkit.widgets._order_format import FAILED_TONE, outcome_html, outcome_label
from toolkit.widgets._order_guard import CancelGuard
from toolkit.widgets._order_slot import OrderButtons, OrderSlot


class CancelPart:
    """What ``OrderStatusView`` does with its Cancel buttons (a mixin of the view)."""

    _client: Any
    _stopped: bool
    _loop: asyncio.AbstractEventLoop | None
    _guard: CancelGuard
    _buttons: OrderButtons
    _notes: OrderedDict[str, tuple[str, str]]
    _outcome_limit: int
    _layout: list[str] | None
    cancel_results: OrderedDict[str, Any]
    _cancel_tasks: set[asyncio.Task[None]]
    _guard_timer: asyncio.TimerHandle | None
    _changed: bool
    _throttle: Any
    book: Any

    if TYPE_CHECKING:  # the view's

        @property
        def offline(self) -> bool: ...

        @property
        def visible_order_ids(self) -> list[str]: ...

        def slot_for(self, order_id: str) -> OrderSlot | None: ...

        def _fill(self, slot: OrderSlot, state: Any) -> None: ...

        def _paint_soon(self) -> None: ...

        def repaint(self, *, force: bool = False) -> bool: ...

    # -- the click ---------------------------------------------------------------------

    @property
    def armed(self) -> str | None:
        """The order whose Cancel is armed (waiting for its confirming click), if any."""
        self._guard.expire()
        return self._guard.armed

    def disarm(self) -> None:
        """Disarm an armed Cancel (what its timeout does)."""
        armed = self._guard.disarm()
        self._buttons.arm(None)
        if armed is not None:
            self._show_outcome(armed)

    def _on_cancel_click(self, order_id: str) -> None:
        """A click on ``order_id``'s own button (wherever its row is now): the first arms
        it, a second one on the same button while armed cancels that order. Offline (the
        connection lost: the buttons are disabled, a click sent before arrives late) it
        does nothing."""
        if self._client is None or self._stopped:
            return
        if self.offline:
            self.disarm()
            return
        if self._layout is None:
            # the rows hold still from now on, as the user sees them
            self._layout = self.visible_order_ids
        if not self._guard.click(order_id):
            self._buttons.arm(order_id)
            self._schedule_guard()
            # a user's click is answered at once (the counts say the rows hold still)
            self._changed = True
            self.repaint(force=True)
            return
        self._buttons.arm(None)
        self._guard.hold(order_id)
        self._set_note(order_id, "cancelling…", "tk-warn")
        self._schedule_guard()
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

    # -- holding the rows still -------------------------------------------------------

    def _schedule_guard(self) -> None:
        """Repaint when the next arm or hold runs out (the button disarms, the rows move)."""
        deadline = self._guard.next_deadline()
        if deadline is None or self._stopped:
            return
        if self._guard_timer is not None:
            self._guard_timer.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            if self._loop is not None:
                # a click handled off the loop's thread: the view's loop times it
                self._loop.call_soon_threadsafe(self._schedule_guard)
            return  # no loop at all (a test): repaint() expires them on the view's clock
        delay = max(0.0, deadline - self._throttle.now()) + 0.01
        self._guard_timer = loop.call_later(delay, self._on_guard_timer)

    def _on_guard_timer(self) -> None:
        self._guard_timer = None
        self._changed = True
        self._paint_soon()
        self._schedule_guard()

    def _expired(self) -> bool:
        deadline = self._guard.next_deadline()
        return deadline is not None and deadline <= self._throttle.now()

    # -- the request -------------------------------------------------------------------

    async def cancel(self, order_id: str) -> Any:
        """Cancel ``order_id`` with the typed cancel (at once: the two-step click is the
        buttons') and show its outcome on the row, held there ``HOLD_S`` seconds even when
        the filter no longer matches the order; returns the CancelResult (None when the
        request failed: the error is shown on the row)."""
        if self._client is None:
            raise RuntimeError("this view has no client to cancel with")
        try:
            result = await self._client.acancel_limit_order(order_id)
        except Exception as exc:
            self._set_note(order_id, f"{type(exc).__name__}: {exc}", FAILED_TONE)
            return None
        self._notes.pop(order_id, None)
        self.cancel_results[order_id] = result
        self.cancel_results.move_to_end(order_id)
        while len(self.cancel_results) > self._outcome_limit:
            self.cancel_results.popitem(last=False)
        self._show_outcome(order_id, hold=True)
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
        self._show_outcome(order_id, hold=True)

    def _show_outcome(self, order_id: str, *, hold: bool = False) -> None:
        """Repaint ``order_id``'s row; with ``hold``, its outcome stays on it (and the rows
        still) for ``HOLD_S`` seconds from now."""
        if hold:
            if self._layout is None:
                self._layout = self.visible_order_ids
            self._guard.hold(order_id)
            self._schedule_guard()
        slot = self.slot_for(order_id)
        state = self.book.orders.get(order_id)
        if slot is not None and state is not None:
            self._fill(slot, state)


__all__ = ["CancelPart"]
