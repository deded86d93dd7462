"""What the order view shows, apart from its widgets: the statuses and filters, the
badges, the grid of a row, the legend, and a cancel's outcome text as the order moves on."""

from __future__ import annotations

import html
from dataclasses import dataclass

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.widgets._theme import WHEN_CHARS, grid, one_line

#: market-order statuses (spec 3.1): "pending" is open, awaiting execution, so it can still
#: execute (ACTIVE); "executed" has executed, and the others ended, so they no longer do
MARKET_ACTIVE = frozenset({"PENDING"})
MARKET_FINALIZED = frozenset({"EXECUTED", "CLOSED", "REJECTED", "EXPIRED"})
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
#: the filter of the orders that appeared after the view's first read of the account
SESSION = "SESSION"
FILTERS = ("ALL", "ACTIVE", "FINALIZED", SESSION, *STATUS_ORDER)
#: the filter's menu: (label, value)
FILTER_LABELS = tuple(("this session's orders" if f == SESSION else f, f) for f in FILTERS)
#: after a cancel, the order executed anyway: the cancel came too late
EXECUTED_STATUSES = frozenset({"EXECUTED", "CLOSED"})
#: after a cancel, the order ended without executing, but not as CANCELLED
ENDED_STATUSES = frozenset({"REJECTED", "EXPIRED"})
# the order and its status first: in sight, beside the Cancel cell, where the table
# scrolls sideways (JupyterLab at 1,280 px with its file browser open, a phone)
COLUMNS = (
    "order",
    "status",
    "symbol",
    "side",
    "type",
    "limit",
    "amount",
    "filled",
    "avg price",
    "timeline",
    "updated (UTC)",
)
# Columns size from the container (no fixed total width), each from a minimum that does
# not depend on what the rows show but for the ids' (it only grows): nothing moves when a
# timeline gets longer. The timeline stays on one line, its full history in the tooltip.


# the width of one character of the table's monospace font, in em (with a little slack)
_CHAR_EM = 0.61


#: the longest condensed timeline: "+N → " and the two longest statuses
TIMELINE_CHARS = len("+9 → PROCESSING → CANCELLING")


def order_grid(id_chars: int = 13, price_chars: int = 10, qty_chars: int = 10) -> tuple[str, float]:
    """The grid of the order rows and its narrowest width (em of the table's font). The
    first column fits ids of ``id_chars`` characters, the prices ``price_chars`` and the
    quantities ``qty_chars`` (the longest shown so far), the timeline the longest condensed
    timeline and the last column ``when``'s fixed-width time, so nothing is cut, every row
    lines up and no column moves when what a row shows changes. Narrower than that, the
    view scrolls sideways; its Cancel cell comes first."""
    id_em = max(8.0, 0.62 * id_chars + 0.4)
    timeline_em = _CHAR_EM * TIMELINE_CHARS + 0.4
    updated_em = _CHAR_EM * WHEN_CHARS + 0.4
    # at least a quantity to 8 decimals ("0.00064994") and a price ("351,234.56") fit
    # whole; "181.36312525" or "1,234,567.89" widen their columns
    qty_em = _CHAR_EM * max(qty_chars, 10) + 0.6
    price_em = max(6.6, _CHAR_EM * price_chars + 0.5)
    mins = (id_em, 7.0, 5.3, 2.6, 3.9, price_em, qty_em, qty_em, price_em, timeline_em, updated_em)
    weights = (1.2, 0.6, 0.5, 0.3, 0.4, 0.7, 0.6, 0.6, 0.7, 2.0, 1.0)
    columns = " ".join(f"minmax({m:.1f}em, {w}fr)" for m, w in zip(mins, weights, strict=True))
    return grid(columns), sum(mins) + 0.5 * (len(mins) - 1)


# the timeline shows this many last steps; the tooltip has them all
TIMELINE_STEPS = 2
LEGEND = (
    "<div class='tk-legend tk-view'><span class='tk-rec'>italic</span> = status read over "
    "REST (fetchOrder) after a connection gap, not received as a notification (orders read "
    "at start are not marked); hover a timeline for the whole history. Cancel: click, then "
    "click the same button again to confirm</div>"
)
_LABELS = {
    "accepted": "accepted",
    "deferred": "deferred",
    "already_final": "was final",
    "already_cancelling": "already cancelling",
    "not_found": "not found",
    "not_applied": "not applied",
}
#: what each outcome means, for the tooltip
MEANINGS = {
    "accepted": "the order was OPEN and is now CANCELLING; CANCELLED follows",
    "deferred": "the order is executing: the service recorded the cancel and honours it if "
    "the order returns to OPEN; do not resend",
    "already_final": "the order had already finished: nothing to cancel",
    "already_cancelling": "a cancel of this order is already in progress",
    "not_found": "no such order here",
    "not_applied": "the service answered, yet the order can still execute: the cancel did "
    "not take effect; click Cancel to try again",
}


# the tone of a failed cancel request's note (a pending one is "tk-warn")
FAILED_TONE = "tk-bad"


def outcome_html(order_id: str, code: str, text: str, tone: str) -> str:
    """A cancel's outcome as the row shows it: ``text`` in ``tone``, what ``code`` means
    in the tooltip; a failed request's error on one line (its kind), the whole of it on a
    click."""
    title = f"{text}: {MEANINGS[code]}" if code in MEANINGS else text
    if tone == FAILED_TONE and not code:
        summary = text.split(":", 1)[0]
        detail = f"cancel failed: {text}; click Cancel to try again"
        return (
            f"<span class='tk-outcome tk-view {tone}' data-outcome='failed' "
            f"data-order='{html.escape(order_id)}'>"
            f"{one_line(f'failed: {summary}', detail)}</span>"
        )
    return (
        f"<span class='tk-outcome tk-view {tone}' data-outcome='{html.escape(code)}' "
        f"data-order='{html.escape(order_id)}' title='{html.escape(title)}'>"
        f"{html.escape(text)}</span>"
    )


def badge(status: str, status_raw: str | None = None) -> str:
    """A coloured badge for ``status``, always in the canonical (upper) case; the case the
    service sent, when different, is in the tooltip."""
    canonical = status.upper()
    sent = ""
    if status_raw not in (None, canonical):
        sent = f" title='sent as {html.escape(str(status_raw))}'"
    text = html.escape(canonical)
    return f"<span class='tk-badge' data-status='{text}'{sent}>{text}</span>"


@dataclass(frozen=True, slots=True)
class Shortcuts:
    """The ACTIVE and FINALIZED shortcuts (spec 3.2: which statuses belong to each is not
    shown): limit orders per the profile's ``listing.active_statuses`` /
    ``listing.finalized_statuses``, market orders per spec 3.1 (``MARKET_ACTIVE``,
    ``MARKET_FINALIZED``). A limit status the profile puts in neither is in neither."""

    active: frozenset[str]
    finalized: frozenset[str]

    @classmethod
    def of(cls, profile: ServiceProfile) -> Shortcuts:
        listing = profile.listing
        return cls(frozenset(listing.active_statuses), frozenset(listing.finalized_statuses))

    def shortcut(self, status: str, order_type: object = None) -> str | None:
        """ "ACTIVE", "FINALIZED" or None for an order in (canonical) ``status`` of type
        ``order_type`` (spec 2.4: ``market`` by default)."""
        is_limit = str(order_type or "").lower() == "limit"
        if not is_limit and status in MARKET_ACTIVE | MARKET_FINALIZED:
            return "ACTIVE" if status in MARKET_ACTIVE else "FINALIZED"
        if status in self.active:
            return "ACTIVE"
        if status in self.finalized:
            return "FINALIZED"
        return None


DEFAULT_SHORTCUTS = Shortcuts.of(DEFAULT_PROFILE)


def matches(
    status: str, flt: str, order_type: object = None, shortcuts: Shortcuts = DEFAULT_SHORTCUTS
) -> bool:
    """Whether an order in (canonical) ``status`` of type ``order_type`` passes the filter
    ``flt``; ACTIVE and FINALIZED as ``shortcuts`` says (by default the default profile's)."""
    if flt == "ALL":
        return True
    if flt in ("ACTIVE", "FINALIZED"):
        return shortcuts.shortcut(status, order_type) == flt
    return status == flt


def outcome_label(outcome: str, result_status: str | None, current: str | None) -> tuple[str, str]:
    """The text and tone class of a cancel's outcome, following the order since: an
    accepted cancel reads "accepted (CANCELLING)" until the order is CANCELLED, then
    "cancelled"; a cancel the order outran by executing reads "too late: EXECUTED" (or
    CLOSED); an order that ended otherwise since (REJECTED, EXPIRED: it did not execute,
    but was not cancelled either) reads "ended REJECTED". Short enough for the view's
    outcome cell; the tooltip says what each means (``MEANINGS``)."""
    label = _LABELS.get(outcome, outcome)
    status = (result_status or "").upper()
    if current and current != status:
        if current == "CANCELLED":
            return "cancelled", "tk-good"
        if current in EXECUTED_STATUSES:
            return f"too late: {current}", "tk-warn"
        if current in ENDED_STATUSES:
            return f"ended {current}", "tk-warn"
    tone = "tk-good" if outcome == "accepted" else "tk-warn"
    if outcome == "not_applied":
        # shown as a failed request is: the Cancel button comes back to try again
        tone = FAILED_TONE
    if not status or outcome == "already_cancelling":
        return label, tone
    return f"{label} ({status})", tone


def qty_text(value: object) -> str:
    """A quantity as the view shows it: up to 8 decimals without trailing zeros, thousands
    separated; "–" when there is none; the text itself when it is not a number."""
    if value is None or value == "":
        return "–"
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if number != number:  # NaN
        return "–"
    return f"{number:,.8f}".rstrip("0").rstrip(".")
