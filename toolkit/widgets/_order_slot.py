"""One row of the order view: its widgets (the row's cells, the Cancel button and the
cancel's outcome), created once and repainted with whichever order the view assigns it."""

from __future__ import annotations

import ipywidgets as widgets


class OrderSlot:
    """One visible row: created once, shows whichever order the repaint assigns it."""

    __slots__ = ("action", "box", "button", "html", "order_id", "outcome")

    def __init__(self) -> None:
        # the table's columns share the row's width; the right end is one cell, the same
        # width in every row, for the Cancel button or, once clicked, the cancel's outcome
        # (never both), so every row's columns line up and nothing is cut
        self.html = widgets.HTML(layout=widgets.Layout(flex="1 1 0", min_width="0"))
        self.button = widgets.Button(
            description="Cancel",
            button_style="warning",
            tooltip="cancel this limit order (cancel_limit_order)",
            layout=widgets.Layout(
                width="auto",
                min_width="fit-content",
                flex="0 0 auto",
                visibility="hidden",
                display="none",
            ),
        )
        self.outcome = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", min_width="0"))
        # 13em where there is room; down to what the button and the outcome's longest word
        # need where there is not (a longer outcome then wraps onto a second line)
        self.action = widgets.HBox(
            [self.button, self.outcome],
            layout=widgets.Layout(flex="0 1 13em", min_width="7.5em", align_items="center"),
        )
        self.box = widgets.HBox(
            [self.html, self.action],
            layout=widgets.Layout(display="none", align_items="center"),
        )
        self.order_id: str | None = None

    def show(self, *, button: bool, outcome: str) -> None:
        """Show or hide the Cancel button, and the outcome text ('' for none)."""
        self._button(button)
        self.outcome.value = outcome

    def _button(self, shown: bool) -> None:
        self.button.layout.visibility = "visible" if shown else "hidden"
        self.button.layout.display = None if shown else "none"

    def paint(self, order_id: str, row: str, *, button: bool, outcome: str) -> None:
        """Show ``order_id``'s ``row`` with its Cancel button and outcome. Each part is a
        widget synced by a message of its own, and a front end may draw between two: so
        what may belong to the order shown before goes first and the new parts come after
        the row, and no frame shows a button or an outcome beside another order."""
        if not button:
            self._button(False)
        if order_id != self.order_id and self.outcome.value != outcome:
            self.outcome.value = ""
        self.order_id = order_id
        self.html.value = row
        self.show(button=button, outcome=outcome)
        self.box.layout.display = "flex"

    def widgets(self) -> list[widgets.Widget]:
        return [self.html, self.button, self.outcome, self.action, self.box]


__all__ = ["OrderSlot"]
