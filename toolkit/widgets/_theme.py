"""The views' one stylesheet: every colour is a JupyterLab CSS variable (so the light, dark
and high-contrast themes all apply), with a fallback for front ends that define none, and
every grid sizes its columns from the container (no fixed total width)."""

from __future__ import annotations

import html
import math
from datetime import UTC, datetime

# (CSS variable, fallback) per role; the fallback is the light theme's value
_VARS = {
    "fg": "var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87))",
    "muted": "var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54))",
    "inverse": "var(--jp-ui-inverse-font-color0, #fff)",
    "border": "var(--jp-border-color2, #e0e0e0)",
    "good": "var(--jp-success-color1, #388e3c)",
    "bad": "var(--jp-error-color1, #d32f2f)",
    "warn": "var(--jp-warn-color1, #f57c00)",
    "warn0": "var(--jp-warn-color0, #e65100)",
    "info": "var(--jp-info-color1, #0097a7)",
    "brand": "var(--jp-brand-color1, #1976d2)",
    "accent": "var(--jp-accent-color1, #388e3c)",
    "grey": "var(--jp-layout-color4, #757575)",
    "font": "var(--jp-code-font-family, ui-monospace, monospace)",
    "size": "calc(var(--jp-code-font-size, 13px) * 0.92)",
}

# status (canonical case) -> colour role of its badge
BADGE_ROLE = {
    "OPEN": "brand",
    "TRIGGERED": "info",
    "PROCESSING": "warn",
    "PENDING": "warn",
    "CANCELLING": "warn0",
    "EXECUTED": "good",
    "CLOSED": "good",
    "EXPIRED": "grey",
    "CANCELLED": "grey",
    "REJECTED": "bad",
}

# connection state -> colour role of its dot
STATE_ROLE = {
    "connecting": "warn",
    "loading": "warn",
    "connected": "good",
    "reconnecting": "warn0",
    "reconciling gap": "warn",
    "gap reconciled": "good",
    "replaying": "brand",
    "replay finished": "grey",
    "stopped": "grey",
    "error": "bad",
}


def colour(role: str) -> str:
    """The CSS value (a JupyterLab variable with its fallback) of a colour role."""
    return _VARS[role]


def _flash(name: str, role: str) -> str:
    # a translucent tint of the text colour: readable on any theme's background
    tint = f"color-mix(in srgb, {_VARS[role]} 30%, transparent)"
    return f"@keyframes {name} {{from {{background: {tint};}} to {{background: transparent;}}}}"


def _css() -> str:
    v = _VARS
    rules = [
        f".tk-view {{color: {v['fg']}; font-family: {v['font']}; font-size: {v['size']};}}",
        ".tk-grid {display: grid; column-gap: 0.5em; align-items: center;}",
        ".tk-grid > span {min-width: 0; overflow: hidden; white-space: nowrap;"
        " text-overflow: ellipsis;}",
        f".tk-head {{color: {v['muted']}; border-bottom: 1px solid {v['border']};}}",
        f".tk-muted {{color: {v['muted']};}}",
        f".tk-good {{color: {v['good']};}}",
        f".tk-bad {{color: {v['bad']};}}",
        f".tk-warn {{color: {v['warn0']};}}",
        ".tk-num {text-align: right; font-variant-numeric: tabular-nums;}",
        ".tk-sym {text-align: left; font-weight: 600;}",
        ".tk-spark {text-align: left; letter-spacing: -1px;}",
        f".tk-err {{color: {v['bad']}; grid-column: 2 / -1;}}",
        _flash("tk-flash-up", "good"),
        _flash("tk-flash-down", "bad"),
        f".tk-up {{animation: tk-flash-up 0.8s ease-out; color: {v['good']};}}",
        f".tk-down {{animation: tk-flash-down 0.8s ease-out; color: {v['bad']};}}",
        f".tk-badge {{color: {v['inverse']}; border-radius: 8px; padding: 0 6px;"
        f" font-size: 0.92em; background: {v['grey']};}}",
        ".tk-tl .tk-rec, .tk-legend .tk-rec {font-style: italic; opacity: 0.75;}",
        f".tk-legend {{color: {v['muted']}; font-size: 0.92em;}}",
        # a cancel's outcome wraps in its narrow cell rather than being cut
        ".tk-outcome {display: inline-block; line-height: 1.25; overflow-wrap: anywhere;}",
        # a failed cancel's error beside the Cancel button: two lines, all of it on hover
        ".tk-outcome.tk-clamp {display: -webkit-box; -webkit-box-orient: vertical;"
        " -webkit-line-clamp: 2; line-clamp: 2; overflow: hidden;}",
    ]
    rules += [
        f".tk-badge[data-status='{s}'] {{background: {v[r]};}}" for s, r in BADGE_ROLE.items()
    ]
    rules += [f".tk-dot[data-state='{s}'] {{color: {v[r]};}}" for s, r in STATE_ROLE.items()]
    return "<style>\n" + "\n".join(rules) + "\n</style>"


STYLE = _css()


def status_html(state: str, detail: str) -> str:
    """The connection-state line: a coloured dot, the state, and a muted detail."""
    extra = f" <span class='tk-muted'>{html.escape(detail)}</span>" if detail else ""
    return (
        f"<div class='tk-status tk-view' data-state='{html.escape(state)}'>"
        f"<span class='tk-dot' data-state='{html.escape(state)}'>&#9679;</span> "
        f"<b>{html.escape(state)}</b>{extra}</div>"
    )


def when(ms: int, today: str | None = None) -> str:
    """A service time (Unix ms) as UTC, short: the time of day for today's
    (``14:03:01.123``), month, day and time for another day of this year
    (``09-21 14:03:01``), the whole date for another year's (``2025-11-13 02:13``).
    ``today`` is YYYY-MM-DD, the current UTC date by default."""
    if not ms:
        return "–"
    at = datetime.fromtimestamp(ms / 1000, UTC)
    if today is None:
        today = datetime.now(UTC).strftime("%Y-%m-%d")
    if at.strftime("%Y-%m-%d") == today:
        return at.strftime("%H:%M:%S.%f")[:-3]
    if at.strftime("%Y") == today[:4]:
        return at.strftime("%m-%d %H:%M:%S")
    return at.strftime("%Y-%m-%d %H:%M")


def when_compact(ms: int, today: str | None = None) -> str:
    """A service time (Unix ms) as UTC in 12 characters at most, the width of today's
    time of day (``14:03:01.123``): month, day and minute for another day of this year
    (``09-21 14:03``), the date alone for another year's (``2025-11-13``). For a column
    that must not widen when its times cross midnight; ``when_full`` is for the tooltip.
    ``today`` is YYYY-MM-DD, the current UTC date by default."""
    if not ms:
        return "–"
    at = datetime.fromtimestamp(ms / 1000, UTC)
    if today is None:
        today = datetime.now(UTC).strftime("%Y-%m-%d")
    day = at.strftime("%Y-%m-%d")
    if day == today:
        return at.strftime("%H:%M:%S.%f")[:-3]
    if day[:4] == today[:4]:
        return at.strftime("%m-%d %H:%M")
    return day


def when_full(ms: int) -> str:
    """A service time (Unix ms) in full, UTC (``2026-09-21 14:03:01.123``), for tooltips."""
    if not ms:
        return "–"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def grid(columns: str) -> str:
    """The inline style of a row of the grid whose columns are ``columns``."""
    return f"grid-template-columns: {columns};"


def price_text(value: object) -> str:
    """A price as the views show it: thousands separated with 2 decimals from 1,000 up,
    4 decimals below; "–" when there is none; the text itself when it is not a number."""
    if value is None or value == "":
        return "–"
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return "–"
    return f"{number:,.2f}" if abs(number) >= 1000 else f"{number:.4f}"
