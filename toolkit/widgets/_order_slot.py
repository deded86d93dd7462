"""One row of the order view: its widgets (the row's cells, the Cancel button and the
cancel's outcome), created once and repainted with whichever order the view assigns it;
and the Cancel buttons, one per order, that move from row to row with their order."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import ipywidgets as widgets

CANCEL_TOOLTIP = "cancel this limit order: click, then click again to confirm"


def cancel_button() -> widgets.Button:
    """A Cancel button, hidden until shown."""
    return widgets.Button(
        description="Cancel",
        button_style="warning",
        tooltip=CANCEL_TOOLTIP,
        layout=widgets.Layout(
            width="auto",
            min_width="fit-content",
            flex="0 0 auto",
            visibility="hidden",
            display="none",
        ),
    )


class OrderButtons:
    """The Cancel buttons, one per order, each bound to its order for its whole life.

    A front end sends a click without saying what it showed beside the button; rows are
    reassigned as orders move (the newest first), and a click sent just before a repaint
    arrives after it. A button that belonged to a row would then cancel whichever order
    the row shows when the click arrives, not the one the user saw. A button that belongs
    to an order moves with it from row to row, so its click cancels that order, wherever
    it is by then. The ``keep`` most recently shown buttons are kept (a click on an order
    that has just left the rows still reaches it); older ones are closed, and a click on a
    closed button is dropped by the front end, never given to another order.
    """

    def __init__(self, on_click: Callable[[str], None], *, keep: int) -> None:
        self._on_click = on_click
        self._keep = max(1, keep)
        self._buttons: OrderedDict[str, widgets.Button] = OrderedDict()
        self.disabled = False
        # disabled while the view is offline (the connection lost): enabled again after
        self.offline = False
        self._armed: str | None = None

    def get(self, order_id: str) -> widgets.Button:
        """``order_id``'s button (made on first use), as the most recently shown."""
        button = self._buttons.get(order_id)
        if button is None:
            button = cancel_button()
            button.disabled = self.disabled or self.offline
            button.on_click(lambda _b, oid=order_id: self._on_click(oid))
            self._buttons[order_id] = button
            while len(self._buttons) > self._keep:
                self._buttons.popitem(last=False)[1].close()
        else:
            self._buttons.move_to_end(order_id)
        return button

    def owner(self, button: widgets.Button) -> str | None:
        """The order ``button`` cancels (None: not one of these)."""
        return next((oid for oid, b in self._buttons.items() if b is button), None)

    def disable(self) -> None:
        """Disable every button, also those made later (a stopped view)."""
        self.disabled = True
        self.arm(None)
        for button in self._buttons.values():
            button.disabled = True

    def set_offline(self, offline: bool) -> None:
        """Disable every button while the view is offline, enable them again after."""
        self.offline = offline
        if offline:
            self.arm(None)
        for button in self._buttons.values():
            button.disabled = self.disabled or offline

    def arm(self, order_id: str | None) -> None:
        """Show ``order_id``'s button armed ("Confirm cancel <id>"), every other one as a
        plain Cancel (None: none armed)."""
        if self._armed == order_id:
            return
        before = self._buttons.get(self._armed) if self._armed is not None else None
        if before is not None:
            before.description = "Cancel"
            before.button_style = "warning"
            before.tooltip = CANCEL_TOOLTIP
        self._armed = order_id
        button = self._buttons.get(order_id) if order_id is not None else None
        if button is not None:
            button.description = f"Confirm cancel {order_id}"
            button.button_style = "danger"
            button.tooltip = f"click again to cancel {order_id}; it disarms by itself"

    def widgets(self) -> list[widgets.Widget]:
        return list(self._buttons.values())


class OrderSlot:
    """One visible row: created once, shows whichever order the repaint assigns it."""

    __slots__ = ("action", "box", "button", "html", "order_id", "outcome", "placeholder")

    def __init__(self) -> None:
        # the table's columns share the row's width; the left end is one cell, the same
        # width in every row, for the Cancel button or, once clicked, the cancel's outcome
        # (never both), so every row's columns line up and nothing is cut
        self.html = widgets.HTML(layout=widgets.Layout(flex="1 1 0", min_width="0"))
        # the button shown: a placeholder of this row until an order's own is given
        self.placeholder = cancel_button()
        self.button = self.placeholder
        self.outcome = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", min_width="0"))
        # a fixed width, wide enough for "Confirm cancel <id>" (the view sets it from
        # its ids), so an armed button moves no column
        self.action = widgets.HBox(
            [self.button, self.outcome],
            layout=widgets.Layout(flex="0 0 13em", align_items="center"),
        )
        # the Cancel cell first: always in sight, also where the table scrolls sideways
        self.box = widgets.HBox(
            [self.action, self.html],
            layout=widgets.Layout(display="none", align_items="center"),
        )
        self.order_id: str | None = None

    def show(self, *, button: bool, outcome: str) -> None:
        """Show or hide the Cancel button, and the outcome text ('' for none)."""
        self._button(button)
        self.outcome.value = outcome

    def _button(self, shown: bool) -> None:
        self._button_of(self.button, shown)

    def paint(
        self,
        order_id: str,
        row: str,
        *,
        button: bool,
        outcome: str,
        order_button: widgets.Button | None = None,
    ) -> None:
        """Show ``order_id``'s ``row`` with its Cancel button (``order_button``, the
        order's own; the row's placeholder without one) and outcome. Each part is a widget
        synced by a message of its own, and a front end may draw between two: so what may
        belong to the order shown before goes first and the new parts come after the row,
        and no frame shows a button or an outcome beside another order."""
        new = self.placeholder if order_button is None else order_button
        if new is not self.button:
            # the previous order's button leaves the row (it may be shown in another row
            # now, beside its order: it is not hidden, only taken out of this one)
            self.action.children = (self.outcome,)
        elif not button:
            self._button(False)
        if order_id != self.order_id and self.outcome.value != outcome:
            self.outcome.value = ""
        self.order_id = order_id
        self.html.value = row
        self._button_of(new, button)
        self.outcome.value = outcome
        if new is not self.button or self.action.children[0] is not new:
            self.button = new
            self.action.children = (new, self.outcome)
        self.box.layout.display = "flex"

    @staticmethod
    def _button_of(button: widgets.Button, shown: bool) -> None:
        button.layout.visibility = "visible" if shown else "hidden"
        button.layout.display = None if shown else "none"

    def widgets(self) -> list[widgets.Widget]:
        return [self.html, self.placeholder, self.outcome, self.action, self.box]


__all__ = ["OrderButtons", "OrderSlot", "cancel_button"]
