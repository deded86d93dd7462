"""HTML of the execution-quality report: one self-contained page (inline CSS, figures as
base64 PNG data URIs, no external resource) and the lighter fragment notebooks show."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from toolkit.report._definitions import CONVENTIONS, DEFINITIONS, SECTIONS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: longer tables are cut in the page; the Parquet export keeps every row
MAX_HTML_ROWS = 200

PAGE_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto;
       max-width: 1200px; color: #222; line-height: 1.4; padding: 0 1em; }
"""

# scoped to .tk-report so a notebook's own styles stay untouched
CSS = """
.tk-report h1 { font-size: 1.6em; margin-bottom: 0.2em; }
.tk-report h2 { border-bottom: 2px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
.tk-report h3 { font-size: 1.05em; margin-bottom: 0.3em; }
.tk-report table { border-collapse: collapse; font-size: 0.85em; margin: 0.4em 0 1em; }
.tk-report th, .tk-report td { padding: 3px 8px; border-bottom: 1px solid #e4e4e4;
     text-align: right; }
.tk-report th { background: #f3f5f7; }
.tk-report td:first-child, .tk-report th:first-child { text-align: left; }
.tk-report .tbl { overflow-x: auto; max-width: 100%; }
.tk-report dl dt { font-weight: 600; margin-top: 0.5em; }
.tk-report dl dd { margin-left: 1.2em; color: #444; }
.tk-report img { max-width: 100%; } .tk-report .note { color: #666; font-size: 0.85em; }
.tk-report .empty { color: #888; font-style: italic; }
"""


def figure_png_base64(fig: Figure, dpi: int = 100) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _format(v: object) -> str:
    if isinstance(v, float | np.floating):
        if np.isnan(v):
            return "–"
        a = abs(float(v))
        if float(v).is_integer() and a < 1e15:
            return f"{v:,.0f}"  # counts stored as float (a metric column mixes units)
        if a != 0 and (a < 0.01 or a >= 1e7):
            return f"{v:.4g}"
        return f"{v:,.2f}" if a >= 100 else f"{v:.4g}" if a < 1 else f"{v:.2f}"
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    return str(v)


def table_html(df: pd.DataFrame, name: str) -> str:
    if df.empty:
        cols = ", ".join(html.escape(str(c)) for c in df.columns)
        return f'<p class="empty">No rows in {html.escape(name)} (columns: {cols}).</p>'
    shown = df.head(MAX_HTML_ROWS)
    body = shown.to_html(
        index=False,
        border=0,
        na_rep="–",
        escape=True,
        formatters={c: _format for c in shown.columns},
    )
    note = ""
    if len(df) > MAX_HTML_ROWS:
        note = (
            f'<p class="note">First {MAX_HTML_ROWS} of {len(df)} rows; '
            "<code>report.to_parquet()</code> writes them all.</p>"
        )
    return f'<div class="tbl">{body}</div>{note}'


def body_html(
    tables: Mapping[str, pd.DataFrame],
    figures: Mapping[str, str] | None,
    title: str,
    subtitle: str = "",
) -> str:
    """The report's sections; ``figures`` maps figure names to base64 PNG (None: none)."""
    parts = [f'<div class="tk-report"><h1>{html.escape(title)}</h1>']
    if subtitle:
        parts.append(f'<p class="note">{html.escape(subtitle)}</p>')
    parts.append(f"<p>{html.escape(CONVENTIONS)}</p>")
    parts.append("<nav><ul>")
    parts += [f'<li><a href="#{s.key}">{html.escape(s.title)}</a></li>' for s in SECTIONS]
    parts.append('<li><a href="#definitions">Definitions</a></li></ul></nav>')
    for s in SECTIONS:
        parts.append(f'<section id="{s.key}"><h2>{html.escape(s.title)}</h2>')
        if s.definitions:
            parts.append("<dl>")
            for key in s.definitions:
                d = DEFINITIONS[key]
                parts.append(f"<dt>{html.escape(d.title)}</dt><dd>{html.escape(d.text)}</dd>")
            parts.append("</dl>")
        for name in s.figures:
            if figures is None or name not in figures:
                continue
            b64 = figures[name]
            alt = html.escape(name.replace("_", " "))
            parts.append(f'<figure><img alt="{alt}" src="data:image/png;base64,{b64}"></figure>')
        for name in s.tables:
            df = tables.get(name)
            if df is None:
                continue
            parts.append(f"<h3>{html.escape(name.replace('_', ' '))}</h3>")
            parts.append(table_html(df, name))
        parts.append("</section>")
    parts.append('<section id="definitions"><h2>Definitions</h2><dl>')
    for d in DEFINITIONS.values():
        parts.append(f"<dt>{html.escape(d.title)}</dt><dd>{html.escape(d.text)}</dd>")
    parts.append("</dl></section></div>")
    return "\n".join(parts)


def document_html(body: str, title: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{PAGE_CSS}{CSS}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )


def fragment_html(body: str) -> str:
    return f"<style>{CSS}</style>\n{body}"
