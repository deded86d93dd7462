"""HTML of the execution-quality report: one self-contained page (inline CSS, figures as
base64 PNG data URIs, no external resource) and the lighter fragment notebooks show.

Numbers are formatted by what they are (shares as %, amounts with thousands separators and
the quote currency, bp with two decimals, never exponent notation); colours come from CSS
variables that follow JupyterLab's light and dark themes, with dark-safe fallbacks."""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from toolkit.report._coverage import ALL_LABEL, absent_type_notes
from toolkit.report._definitions import (
    CONVENTIONS,
    DEFINITIONS,
    SECTIONS,
    TABLE_DEFINITIONS,
    Section,
)
from toolkit.report._format import cell_kind, format_cell, table_currency

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: longer tables are cut in the page; the Parquet export keeps every row
MAX_HTML_ROWS = 200

# the standalone page: light or dark as the reader's system prefers
PAGE_CSS = """
:root { color-scheme: light dark; --tk-page-fg: #1f2328; --tk-page-bg: #ffffff; }
@media (prefers-color-scheme: dark) {
  :root { --tk-page-fg: #e6edf3; --tk-page-bg: #0d1117; }
}
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5em auto;
       max-width: 1200px; line-height: 1.4; padding: 0 1em;
       color: var(--tk-page-fg); background: var(--tk-page-bg); }
"""

# scoped to .tk-report so a notebook's own styles stay untouched; every colour is a
# JupyterLab theme variable, else a colour that reads on a light and on a dark background
CSS = """
.tk-report { --tk-fg: var(--jp-content-font-color1, inherit);
  --tk-muted: var(--jp-content-font-color2, rgba(127, 127, 127, 0.95));
  --tk-border: var(--jp-border-color2, rgba(127, 127, 127, 0.35));
  --tk-head: var(--jp-layout-color2, rgba(127, 127, 127, 0.16));
  --tk-stripe: var(--jp-layout-color1, rgba(127, 127, 127, 0.06));
  --tk-accent: var(--jp-brand-color1, #3b82f6);
  --tk-good: var(--jp-success-color1, #2e9d4f); --tk-bad: var(--jp-error-color1, #d9453b);
  color: var(--tk-fg); max-width: 100%; }
.tk-report h1 { font-size: 1.5em; margin: 0 0 0.2em; }
.tk-report h2 { border-bottom: 2px solid var(--tk-border); padding-bottom: 0.2em;
  margin-top: 1.6em; font-size: 1.25em; }
.tk-report h3 { font-size: 1em; margin: 1em 0 0.2em; }
.tk-report .tbl { overflow-x: auto; max-width: 100%; width: fit-content;
  border: 1px solid var(--tk-border); border-radius: 4px; margin: 0.3em 0 0.8em; }
.tk-report table { border-collapse: collapse; font-size: 0.85em; margin: 0;
  font-variant-numeric: tabular-nums; }
.tk-report th, .tk-report td { padding: 3px 8px; border-bottom: 1px solid var(--tk-border);
  text-align: right; white-space: nowrap; color: var(--tk-fg); }
.tk-report th { background: var(--tk-head); font-weight: 600; }
.tk-report tbody tr:nth-child(even) td { background: var(--tk-stripe); }
.tk-report td.txt, .tk-report th.txt { text-align: left; }
.tk-report td.pos { color: var(--tk-bad); } .tk-report td.neg { color: var(--tk-good); }
.tk-report .ci { color: var(--tk-muted); font-size: 0.9em; }
.tk-report details { margin: 0.3em 0; }
.tk-report details > summary { cursor: pointer; color: var(--tk-accent); }
.tk-report details.section > summary { font-size: 1.15em; font-weight: 600;
  color: var(--tk-fg); padding: 0.3em 0; border-bottom: 1px solid var(--tk-border); }
.tk-report details.def { display: inline-block; margin-left: 0.6em; font-size: 0.85em; }
.tk-report details.def > div { color: var(--tk-muted); max-width: 70em; white-space: normal; }
.tk-report dl dt { font-weight: 600; margin-top: 0.5em; }
.tk-report dl dd { margin-left: 1.2em; color: var(--tk-muted); }
.tk-report img { max-width: 100%; background: #ffffff; border-radius: 4px; }
.tk-report figure { margin: 0.4em 0; }
.tk-report .note, .tk-report .empty { color: var(--tk-muted); font-size: 0.85em; }
.tk-report .coverage { border-left: 3px solid var(--tk-accent); padding: 0.2em 0.8em;
  margin: 0.5em 0; }
.tk-report .coverage ul { margin: 0.2em 0; padding-left: 1.2em; }
.tk-report .empty { font-style: italic; }
.tk-report nav ul { padding-left: 0; margin: 0.4em 0; }
.tk-report nav li { display: inline; margin-right: 1em; }
.tk-report nav a { color: var(--tk-accent); }
.tk-report .summary-grid { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.tk-report .summary-grid > div { flex: 0 1 auto; min-width: 0; max-width: 100%; }
"""


def figure_png_base64(fig: Figure, dpi: int = 100) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _format(v: object) -> str:
    """A value of unknown meaning: whole numbers without decimals, never an exponent."""
    return format_cell(v, "number", "")


def _definition_link(table: str) -> str:
    key = TABLE_DEFINITIONS.get(table)
    if key is None or key not in DEFINITIONS:
        return ""
    d = DEFINITIONS[key]
    return (
        f'<details class="def"><summary>definition: {html.escape(d.title)}</summary>'
        f"<div>{html.escape(d.text)}</div></details>"
    )


def table_html(df: pd.DataFrame, name: str, currency: str = "") -> str:
    """``df`` as a scrolling HTML table, each column formatted by what it holds."""
    if df.empty:
        cols = ", ".join(html.escape(str(c)) for c in df.columns)
        return f'<p class="empty">No rows in {html.escape(name)} (columns: {cols}).</p>'
    shown = df.head(MAX_HTML_ROWS)
    kinds = {c: cell_kind(name, str(c)) for c in shown.columns}
    cur = table_currency(shown, currency)
    row_units = shown["unit"].astype(str).tolist() if "unit" in shown.columns else None
    head = "".join(
        f'<th class="{"txt" if kinds[c] == "text" else "num"}">{html.escape(str(c))}</th>'
        for c in shown.columns
    )
    body = []
    columns = [shown[c].tolist() for c in shown.columns]
    for i in range(len(shown)):
        cells = []
        for c, values in zip(shown.columns, columns, strict=True):
            kind = kinds[c]
            if kind == "by_unit" and row_units is not None:
                kind = {"share": "share", "count": "count", "s": "seconds", "bp": "bp"}.get(
                    row_units[i], "amount"
                )
            unit_cur = cur[i] if isinstance(cur, list) else cur
            if kind == "amount" and row_units is not None and row_units[i] not in ("", "amount"):
                unit_cur = row_units[i] if row_units[i] != "quote currency" else unit_cur
            text = format_cell(values[i], kind, unit_cur)
            cls = "txt" if kind == "text" else "num"
            cells.append(f'<td class="{cls}">{html.escape(text)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    note = ""
    if len(df) > MAX_HTML_ROWS:
        note = (
            f'<p class="note">First {MAX_HTML_ROWS} of {len(df)} rows; '
            "<code>report.to_parquet()</code> writes them all.</p>"
        )
    return (
        f'<div class="tbl"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{note}"
    )


def headline_html(headline: pd.DataFrame) -> str:
    """The headline metrics, one row per metric, market / limit / all orders of the set side
    by side, each value with its 95 % interval and the orders it rests on; a note below
    for an order type the set lacks."""
    if headline.empty:
        return '<p class="empty">No rows in headline: no order to report on.</p>'
    present = set(headline["type"])
    types = [t for t in ("market", "limit", "all") if t in present]
    metrics = list(dict.fromkeys(headline["metric"]))
    h = headline.set_index(["type", "metric"])
    labels = {"all": ALL_LABEL}
    head = '<th class="txt">metric</th>' + "".join(
        f"<th>{html.escape(labels.get(t, f'{t} orders'))}</th>" for t in types
    )
    rows = []
    for m in metrics:
        cells = [f'<td class="txt">{html.escape(m)}</td>']
        for t in types:
            if (t, m) not in h.index:
                cells.append("<td>–</td>")
                continue
            r = h.loc[(t, m)]
            kind = "share" if r["unit"] == "share" else "bp"
            value = format_cell(r["value"], kind, "")
            ci = ""
            if not (math.isnan(r["ci_low"]) or math.isnan(r["ci_high"])):
                ci = (
                    f"[{format_cell(r['ci_low'], kind, '')}, {format_cell(r['ci_high'], kind, '')}]"
                )
            n = f"n={int(r['orders']):,}"
            cells.append(
                f'<td>{html.escape(value)} <span class="ci">{html.escape(ci)} {n}</span></td>'
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    notes = "".join(
        f'<p class="note">{html.escape(n)}</p>' for n in absent_type_notes(present - {"all"})
    )
    return (
        f'<div class="tbl"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{notes}"
    )


def coverage_html(notes: Sequence[str]) -> str:
    """What the set covers, under the title: no partial set reads as every order."""
    if not notes:
        return ""
    items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    return f'<div class="coverage"><strong>What this set covers</strong><ul>{items}</ul></div>'


def checks_html(checks: pd.DataFrame) -> str:
    """The data checks collapsed: the count per check, the rows one click away."""
    if checks.empty:
        return '<p class="empty">No data check flagged anything.</p>'
    counts = checks.groupby("check", sort=True).size().rename("orders").reset_index()
    parts = [table_html(counts, "data_check_counts")]
    for check, rows in checks.groupby("check", sort=True):
        parts.append(
            f"<details><summary>{html.escape(str(check))}: {len(rows):,} row(s)</summary>"
            f"{table_html(rows.reset_index(drop=True), 'data_checks')}</details>"
        )
    return (
        f'<details class="checks"><summary>{len(checks):,} flag(s) in {len(counts)} '
        f"check(s): show</summary>{''.join(parts)}</details>"
    )


def _section_body(
    s: Section, tables: Mapping[str, pd.DataFrame], figures: Mapping[str, str] | None, cur: str
) -> list[str]:
    parts: list[str] = []
    names = s.tables
    figs = s.figures
    key = s.key
    if key == "summary":
        parts.append(f"<h3>headline</h3>{_definition_link('headline')}")
        parts.append(headline_html(tables.get("headline", pd.DataFrame())))
        parts.append('<div class="summary-grid"><div>')
        parts.append("<h3>cost decomposition</h3>" + _definition_link("cost_decomposition"))
        decomposition = tables.get("cost_decomposition", pd.DataFrame())
        parts.append(table_html(decomposition, "cost_decomposition", cur))
        parts.append("</div><div>")
        parts += _figures_html(figs, figures)
        parts.append("</div></div>")
        return parts
    parts += _figures_html(figs, figures)
    for name in names:
        df = tables.get(name)
        if df is None:
            continue
        parts.append(f"<h3>{html.escape(name.replace('_', ' '))}</h3>{_definition_link(name)}")
        parts.append(checks_html(df) if name == "data_checks" else table_html(df, name, cur))
    return parts


def _figures_html(names: tuple[str, ...], figures: Mapping[str, str] | None) -> list[str]:
    out = []
    for name in names:
        if figures is None or name not in figures:
            continue
        alt = html.escape(name.replace("_", " "))
        out.append(
            f'<figure><img alt="{alt}" src="data:image/png;base64,{figures[name]}"></figure>'
        )
    return out


def body_html(
    tables: Mapping[str, pd.DataFrame],
    figures: Mapping[str, str] | None,
    title: str,
    subtitle: str = "",
    *,
    coverage: Sequence[str] = (),
    collapsed: bool = False,
) -> str:
    """The report's sections; ``figures`` maps figure names to base64 PNG (None: none).
    ``coverage``: what the set covers, as notes under the title. ``collapsed``: every
    section but the summary inside a closed ``<details>``."""
    po = tables.get("per_order", pd.DataFrame())
    cur = ""
    if "currency" in po.columns:
        found = sorted(c for c in po["currency"].dropna().unique() if isinstance(c, str) and c)
        cur = found[0] if len(found) == 1 else ""
    parts = [f'<div class="tk-report"><h1>{html.escape(title)}</h1>']
    if subtitle:
        parts.append(f'<p class="note">{html.escape(subtitle)}</p>')
    if coverage:
        parts.append(coverage_html(coverage))
    parts.append(
        f"<details><summary>conventions</summary><p>{html.escape(CONVENTIONS)}</p></details>"
    )
    if not collapsed:
        parts.append("<nav><ul>")
        parts += [f'<li><a href="#{s.key}">{html.escape(s.title)}</a></li>' for s in SECTIONS]
        parts.append('<li><a href="#definitions">Definitions</a></li></ul></nav>')
    for s in SECTIONS:
        inner = _section_body(s, tables, figures, cur)
        if collapsed and s.key != "summary":
            parts.append(
                f'<section id="{s.key}"><details class="section"><summary>'
                f"{html.escape(s.title)}</summary>{''.join(inner)}</details></section>"
            )
        else:
            parts.append(f'<section id="{s.key}"><h2>{html.escape(s.title)}</h2>')
            parts += inner
            parts.append("</section>")
    defs = "".join(
        f'<dt id="def-{k}">{html.escape(d.title)}</dt><dd>{html.escape(d.text)}</dd>'
        for k, d in DEFINITIONS.items()
    )
    if collapsed:
        parts.append(
            '<section id="definitions"><details class="section"><summary>Definitions'
            f"</summary><dl>{defs}</dl></details></section></div>"
        )
    else:
        parts.append(
            f'<section id="definitions"><h2>Definitions</h2><dl>{defs}</dl></section></div>'
        )
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


__all__ = [
    "CSS",
    "MAX_HTML_ROWS",
    "PAGE_CSS",
    "body_html",
    "checks_html",
    "coverage_html",
    "document_html",
    "figure_png_base64",
    "fragment_html",
    "headline_html",
    "table_html",
]
