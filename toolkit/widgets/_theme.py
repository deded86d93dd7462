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
    "PROCESSING": "warn0",  # white on warn is 2.7:1, on warn0 3.8:1
    "PENDING": "warn0",
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


# a status detail longer than this goes on demand (its first words stay on the line)
_LINE = 60


def _first(text: str) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= _LINE else line[: _LINE - 1] + "…"


def colour(role: str) -> str:
    """The CSS value (a JupyterLab variable with its fallback) of a colour role."""
    return _VARS[role]


#: how long a price's flash lasts at most; shorter where the pair ticks faster (a view
#: sets each flash to under its pair's tick interval, so a cell is not tinted for ever)
FLASH_S = 0.4


def _flash(name: str, role: str) -> str:
    # a translucent tint and the text colour, both fading out: once the flash is over the
    # cell reads as any other, so a tint always means "changed just now"
    tint = f"color-mix(in srgb, {_VARS[role]} 30%, transparent)"
    return (
        f"@keyframes {name} {{from {{background: {tint}; color: {_VARS[role]};}}"
        " to {background: transparent;}}"
    )


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
        f".tk-up {{animation: tk-flash-up {FLASH_S}s ease-out;}}",
        f".tk-down {{animation: tk-flash-down {FLASH_S}s ease-out;}}",
        # a price the view can no longer vouch for (the connection is lost): greyed
        f".tk-stale, .tk-stale .tk-num, .tk-stale .tk-good, .tk-stale .tk-bad"
        f" {{color: {v['muted']}; animation: none;}}",
        ".tk-stale .tk-age {font-style: italic;}",
        ".tk-pin {font-weight: 600;}",
        f".tk-badge {{color: {v['inverse']}; border-radius: 8px; padding: 0 6px;"
        f" font-size: 0.92em; background: {v['grey']};}}",
        ".tk-tl .tk-rec, .tk-legend .tk-rec {font-style: italic; opacity: 0.75;}",
        f".tk-legend {{color: {v['muted']}; font-size: 0.92em;}}",
        # the lines above the rows keep one line's height whatever they say (the whole of
        # it on hover): a longer count or state must not push the rows under the pointer
        ".tk-counts, .tk-status {white-space: nowrap; overflow: hidden; text-overflow: ellipsis;}",
        # a cancel's outcome wraps in its narrow cell rather than being cut
        ".tk-outcome {display: inline-block; line-height: 1.25; overflow-wrap: anywhere;}",
        # an error on one line, the whole of it on a click (<details>)
        ".tk-oneline {display: inline-block; max-width: 100%; vertical-align: top;}",
        ".tk-oneline > summary {white-space: nowrap; overflow: hidden;"
        " text-overflow: ellipsis; cursor: pointer;}",
        ".tk-oneline .tk-detail {white-space: normal; overflow-wrap: anywhere;}",
    ]
    rules += [
        f".tk-badge[data-status='{s}'] {{background: {v[r]};}}" for s, r in BADGE_ROLE.items()
    ]
    rules += [f".tk-dot[data-state='{s}'] {{color: {v[r]};}}" for s, r in STATE_ROLE.items()]
    # a lost connection is a banner across the view, not a small dot: what it shows is
    # not live and it acts on nothing until it is back
    rules += [
        f".tk-status.tk-offline {{border-left: 4px solid {v['warn0']}; padding-left: 6px;"
        " box-sizing: border-box;"
        f" background: color-mix(in srgb, {v['warn0']} 14%, transparent);}}",
    ]
    return "<style>\n" + "\n".join(rules) + "\n</style>"


STYLE = _css()


#: the states in which what a view shows is not live (prices greyed, Cancel disabled)
OFFLINE = frozenset({"connecting", "reconnecting", "error"})
#: what the banner of an offline view says after its state
OFFLINE_TEXT = "not live: prices greyed with their age, Cancel disabled until reconnected"


def status_html(state: str, detail: str, warning: str = "") -> str:
    """The connection-state line: a coloured dot, the state, and a muted detail; a detail
    longer than a line (an error's message), and the last warning the view's stream or
    book logged, show their first words on the line and the rest on demand. Offline (a
    state of :data:`OFFLINE`), the line is a tinted banner that says what that means."""
    offline = state in OFFLINE
    extra = f" <b>{OFFLINE_TEXT}</b>" if offline else ""
    if detail and (len(detail) > _LINE or "\n" in detail):
        extra += " " + one_line(_first(detail), detail, "tk-muted")
    elif detail:
        extra += f" <span class='tk-muted'>{html.escape(detail)}</span>"
    if warning:
        extra += " " + one_line(f"warning: {_first(warning)}", warning, "tk-warn")
    return (
        f"<div class='tk-status tk-view{' tk-offline' if offline else ''}'"
        f" data-state='{html.escape(state)}'>"
        f"<span class='tk-dot' data-state='{html.escape(state)}'>&#9679;</span> "
        f"<b>{html.escape(state)}</b>{extra}</div>"
    )


def when(ms: int) -> str:
    """A service time (Unix ms) as the views show every time, in one format whatever the
    day, UTC: ``2026-11-27 09:23:40.637`` (a fixed width, so a column of times never
    widens); "–" when there is none."""
    if not ms:
        return "–"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


#: the width of ``when``'s text, in characters
WHEN_CHARS = 23


def age_text(seconds: float) -> str:
    """How old a price is, for a view that lost its connection: "12 s old", "3 min old"."""
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s old"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min old"
    return f"{seconds / 3600:.0f} h old"


def one_line(summary: str, detail: str, cls: str = "") -> str:
    """``summary`` on one line (cut with an ellipsis where the cell is narrow) and the
    whole ``detail`` on demand: a ``<details>`` the reader opens with a click."""
    return (
        f"<details class='tk-oneline {cls}'><summary>{html.escape(summary)}</summary>"
        f"<div class='tk-detail'>{html.escape(detail)}</div></details>"
    )


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
