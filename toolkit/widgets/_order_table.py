"""The order view's table as text: one row's HTML (its cells, its condensed timeline) and
the matching orders as a DataFrame."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from toolkit.widgets._order_format import STATUS_ORDER, TIMELINE_STEPS, badge, qty_text
from toolkit.widgets._theme import price_text, when


def timeline(book: Any, state: Any, loaded_at: int | None) -> tuple[str, str, str]:
    """``state``'s timeline condensed to its last steps: (HTML, its text, the whole
    history for the tooltip). A step read over REST after a gap is marked (italic); the
    read at start (its ``updatedAt`` is ``loaded_at``) is not."""
    steps, names, full = [], [], []
    for t in book.history(state.order_id):
        name = t.status.upper()
        after_gap = t.reconciled and t.updated_at_ms != loaded_at
        mark = " (REST after a gap)" if after_gap else ""
        full.append(f"{name}{mark} {when(t.updated_at_ms)}")
        names.append(name)
        name = html.escape(name)
        steps.append(f"<span class='tk-rec'>{name}</span>" if after_gap else name)
    shown = " → ".join(steps[-TIMELINE_STEPS:])
    text = " → ".join(names[-TIMELINE_STEPS:])
    if len(steps) > TIMELINE_STEPS:
        more = f"+{len(steps) - TIMELINE_STEPS} →"
        shown = f"<span class='tk-muted'>{more}</span> {shown}"
        text = f"{more} {text}"
    return shown, text, "\n".join(full)


def number_texts(order: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """An order's limit price, amount, filled and average price as its row shows them
    (no average before anything executed)."""
    average = order.get("average")
    if average in (None, ""):
        average = order.get("price")
    if _zero(average):
        average = None  # nothing executed yet: no average price
    return (
        price_text(order.get("limitPrice")),
        qty_text(order.get("amount")),
        qty_text(order.get("filled")),
        price_text(average),
    )


def widths(before: tuple[int, int, int], shown: Sequence[Any]) -> tuple[int, int, int]:
    """The characters the id, price and quantity columns fit: ``before`` grown to the
    longest of ``shown``'s (at least 13, 10 and 10). They only grow: a shorter text later
    does not move the other columns."""
    ids, prices, qtys = (max(w, least) for w, least in zip(before, (13, 10, 10), strict=True))
    for state in shown:
        limit, amount, filled, average = number_texts(state.order)
        ids = max(ids, len(state.order_id))
        prices = max(prices, len(limit), len(average))
        qtys = max(qtys, len(amount), len(filled))
    return ids, prices, qtys


def row_html(state: Any, grid: str, steps: tuple[str, str, str], *, pinned: bool) -> str:
    """One order's row of the grid ``grid``, with its timeline ``steps``."""
    order: Mapping[str, Any] = state.order
    shown, _text, full = steps
    oid = html.escape(state.order_id)
    id_cell = (
        f"<span class='tk-pin' data-pinned='1' title='{oid} (pinned)'>{oid}</span>"
        if pinned
        else f"<span title='{oid}'>{oid}</span>"
    )
    cells = "".join(
        f"<span class='tk-num'>{html.escape(text)}</span>" for text in number_texts(order)
    )
    return (
        f"<div class='tk-orow tk-grid tk-view' style='{grid}' data-order='{oid}'>"
        f"{id_cell}"
        f"<span>{badge(state.status, state.status_raw)}</span>"
        f"<span>{html.escape(str(order.get('symbol', '')))}</span>"
        f"<span>{html.escape(str(order.get('side', '')))}</span>"
        f"<span>{html.escape(str(order.get('type', '')))}</span>"
        f"{cells}"
        f"<span class='tk-tl' title='{html.escape(full)}'>{shown}</span>"
        f"<span class='tk-num'>{when(state.updated_at_ms)}</span></div>"
    )


def counts_html(book: Any, shortcuts: Any, shown: int, total: int, *, held: bool) -> str:
    """The line above the rows: "N of M shown", the orders per shortcut and per status
    (one line; the whole of it on hover)."""
    counts: dict[str, int] = {}
    groups: dict[str | None, int] = {"ACTIVE": 0, "FINALIZED": 0, None: 0}
    for state in book.orders.values():
        counts[state.status] = counts.get(state.status, 0) + 1
        groups[shortcuts.shortcut(state.status, state.order.get("type"))] += 1
    # a status the profile puts in neither shortcut is counted apart
    other = f", other {groups[None]}" if groups[None] else ""
    still = " (held still while a cancel is armed or shown)" if held else ""
    parts = [
        f"<b data-shown='{shown}' data-total='{total}'>{shown} of {total} shown</b>{still};"
        f" {sum(counts.values())} orders (ACTIVE {groups['ACTIVE']}, "
        f"FINALIZED {groups['FINALIZED']}{other})"
    ]
    ordered = [s for s in STATUS_ORDER if s in counts] + sorted(
        s for s in counts if s not in STATUS_ORDER
    )
    parts += [f"{badge(s)}&nbsp;{counts[s]}" for s in ordered]
    title = html.escape(
        f"{shown} of {total} shown{still}; " + ", ".join(f"{s} {counts[s]}" for s in ordered)
    )
    return f"<div class='tk-counts' title='{title}'>" + " ".join(parts) + "</div>"


def _zero(value: object) -> bool:
    try:
        return float(value) == 0  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def orders_frame(
    states: Sequence[Any], book: Any, outcome: Callable[[str], str | None]
) -> pd.DataFrame:
    """``states`` as the view's ``to_frame()`` gives them (see there)."""

    def number(field: str, fallback: str | None = None) -> pd.Series:
        values = []
        for s in states:
            v = s.order.get(field)
            if v in (None, "") and fallback is not None:
                v = s.order.get(fallback)
            values.append(None if v in (None, "") else v)
        return pd.to_numeric(pd.Series(values, dtype="object"), errors="coerce").astype("float64")

    return pd.DataFrame(
        {
            "orderId": pd.array([s.order_id for s in states], dtype="string"),
            "type": pd.array([s.order.get("type") for s in states], dtype="string"),
            "symbol": pd.array([s.order.get("symbol") for s in states], dtype="string"),
            "side": pd.array([s.order.get("side") for s in states], dtype="string"),
            "limitPrice": number("limitPrice"),
            "amount": number("amount"),
            "filled": number("filled"),
            "average": number("average", "price"),
            "status": pd.array([s.status for s in states], dtype="string"),
            "statusRaw": pd.array([s.status_raw for s in states], dtype="string"),
            "timeline": pd.array(
                [" → ".join(t.status.upper() for t in book.history(s.order_id)) for s in states],
                dtype="string",
            ),
            "updatedAt": pd.to_datetime(
                pd.Series([s.updated_at_ms or None for s in states], dtype="float64"),
                unit="ms",
                utc=True,
            ).astype("datetime64[ms, UTC]"),
            "cancelOutcome": pd.array([outcome(s.order_id) for s in states], dtype="string"),
        }
    )


__all__ = ["counts_html", "orders_frame", "row_html", "timeline"]
