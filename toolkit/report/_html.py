"""HTML of the execution-quality report: one self-contained page (inline CSS, figures as
inline SVG, no external resource) and the lighter fragment notebooks show.

The page opens on one sentence (the cost in bp and in the quote currency, and its parts);
numbers are formatted by what they are (see ``_tables``); a metric or chart resting on too
few orders says so instead (``_gate``); colours come from CSS variables that follow
JupyterLab's light and dark themes and the reader's system, and the figures draw in the
text colour (``_svg``)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import pandas as pd

from toolkit.report._definitions import (
    CONVENTIONS,
    DEFINITIONS,
    SECTIONS,
    TABLE_DEFINITIONS,
    Section,
)
from toolkit.report._gate import CoverageRule, coverage_words, figure_coverage, insufficient
from toolkit.report._headline import gated_summary, headline_html, headline_sentence
from toolkit.report._labels import column_label
from toolkit.report._tables import MAX_HTML_ROWS, table_html, table_title

#: the title of each figure, said where it would be (insufficient coverage)
FIGURE_TITLES: dict[str, str] = {
    "cost_waterfall": "Cost decomposition chart",
    "daily_cost": "Cost per day chart",
    "slippage_distribution": "Slippage distribution",
    "slippage_over_time": "Execution slippage over time",
    "venue_shares": "Venue shares chart",
    "markout_curve": "Markouts chart",
    "latency_cdf": "Time to execution chart",
    "fee_rate_over_time": "Fee rate over time",
    "limit_funnel": "Limit-order funnel chart",
}

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
  --tk-bg: var(--jp-layout-color0, var(--tk-page-bg, Canvas));
  color: var(--tk-fg); max-width: 100%; }
.tk-report h1 { font-size: 1.5em; margin: 0 0 0.2em; }
.tk-report h2 { border-bottom: 2px solid var(--tk-border); padding-bottom: 0.2em;
  margin-top: 1.6em; font-size: 1.25em; }
.tk-report h3 { font-size: 1em; margin: 1em 0 0.2em; }
.tk-report .tk-headline { font-size: 1.15em; line-height: 1.5; margin: 0.3em 0 0.6em;
  overflow-wrap: anywhere; }
.tk-report .tk-headline b { white-space: nowrap; }
.tk-report .tk-insufficient { color: var(--tk-muted); font-style: italic; }
.tk-report .tbl { overflow-x: auto; max-width: 100%; width: fit-content;
  border: 1px solid var(--tk-border); border-radius: 4px; margin: 0.3em 0 0.8em; }
.tk-report table { border-collapse: collapse; font-size: 0.85em; margin: 0;
  font-variant-numeric: tabular-nums; }
.tk-report th, .tk-report td { padding: 3px 8px; border-bottom: 1px solid var(--tk-border);
  text-align: right; white-space: nowrap; color: var(--tk-fg); }
.tk-report th { background: var(--tk-head); font-weight: 600; }
.tk-report tbody tr:nth-child(even) td { background: var(--tk-stripe); }
.tk-report td.txt, .tk-report th.txt { text-align: left; }
.tk-report th:first-child, .tk-report td:first-child { position: sticky; left: 0; z-index: 1;
  background: var(--tk-bg); border-right: 1px solid var(--tk-border); }
.tk-report tbody tr:nth-child(even) td:first-child { background: var(--tk-bg); }
@media (max-width: 600px) {
  .tk-report th { white-space: normal; min-width: 5em; }
  .tk-report td .ci { display: block; }
  .tk-report table { font-size: 0.8em; }
}
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
.tk-report svg.tk-fig { max-width: 100%; height: auto; display: block; color: var(--tk-fg); }
.tk-report figure { margin: 0.4em 0; max-width: 100%; }
.tk-report figcaption, .tk-report .tk-chart-gap { color: var(--tk-muted); font-size: 0.85em; }
.tk-report .tk-orders { display: flex; flex-wrap: wrap; gap: 0.5em; }
.tk-report .tk-orders figure { flex: 0 1 260px; min-width: 0; }
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


def _definition_link(table: str) -> str:
    key = TABLE_DEFINITIONS.get(table)
    if key is None or key not in DEFINITIONS:
        return ""
    d = DEFINITIONS[key]
    return (
        f'<details class="def"><summary>definition: {html.escape(d.title)}</summary>'
        f"<div>{html.escape(d.text)}</div></details>"
    )


def coverage_html(notes: Sequence[str]) -> str:
    """What the set covers, under the title: no partial set reads as every order."""
    if not notes:
        return ""
    items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    return f'<div class="coverage"><strong>What this set covers</strong><ul>{items}</ul></div>'


#: data checks that are no data problem: the orders are real, their cost is extreme
OUTLIER_PREFIX = "outlier "


def check_label(check: str) -> str:
    """A check's name in words: ``outlier quote_slippage_bp`` reads ``outlier of execution
    slippage (bp)``."""
    if check.startswith(OUTLIER_PREFIX):
        return "outlier of " + column_label(check.removeprefix(OUTLIER_PREFIX))
    return check


def _checks_part(checks: pd.DataFrame, counts: pd.DataFrame, title: str, empty_words: str) -> str:
    checks = checks.assign(check=checks["check"].astype(str).map(check_label))
    if counts.empty:
        return f'<h4>{html.escape(title)}</h4><p class="empty">{html.escape(empty_words)}</p>'
    counts = counts.groupby("check", sort=True)["orders"].sum().reset_index()
    parts = [table_html(counts, "data_check_counts")]
    shown = dict(iter(checks.groupby("check", sort=True)))
    for check, n in zip(counts["check"], counts["orders"], strict=True):
        rows = shown.get(check, checks.iloc[:0])
        parts.append(
            f"<details><summary>{html.escape(str(check))}: {n:,} row(s)</summary>"
            f"{table_html(rows.reset_index(drop=True), 'data_checks', rows=n)}</details>"
        )
    return (
        f"<h4>{html.escape(title)}</h4>"
        f'<details class="checks"><summary>{counts["orders"].sum():,} flag(s) in '
        f"{len(counts)} check(s): show</summary>{''.join(parts)}</details>"
    )


def checks_html(checks: pd.DataFrame, counts: pd.DataFrame | None = None) -> str:
    """The data checks in two parts, each collapsed with its counts: data problems (the
    data disagree with itself or is missing) and economic outliers (real orders with an
    extreme cost, shown for review). ``counts``: rows per check (``check``, ``rows``)
    when ``checks`` holds only the first rows of each (a set too large for memory)."""
    if counts is None:
        counts = checks.groupby("check", sort=False).size().rename("rows").reset_index()
    counts = counts.assign(check=counts["check"].astype(str)).rename(columns={"rows": "orders"})
    if not counts["orders"].sum():
        return '<p class="empty">Data checks: none (no check flagged anything).</p>'
    flagged = counts["check"].str.startswith(OUTLIER_PREFIX)
    counts = counts.assign(check=counts["check"].map(check_label))
    outlier = checks["check"].astype(str).str.startswith(OUTLIER_PREFIX)
    return _checks_part(
        checks[~outlier], counts[~flagged], "Data problems", "Data problems: none."
    ) + _checks_part(
        checks[outlier], counts[flagged], "Economic outliers", "Economic outliers: none."
    )


def figures_html(
    names: Sequence[str],
    figures: Mapping[str, str] | None,
    tables: Mapping[str, pd.DataFrame],
    rule: CoverageRule,
) -> list[str]:
    """Each chart with what it rests on, or "insufficient coverage (n of N)" instead."""
    out = []
    for name in names:
        if figures is None or name not in figures:
            continue
        n, total = figure_coverage(name, tables)
        title = FIGURE_TITLES.get(name, name.replace("_", " "))
        if not rule.enough(n, total):
            words = f"{title}: {insufficient(n, total)}, not drawn."
            out.append(f'<p class="tk-chart-gap" data-figure="{name}">{html.escape(words)}</p>')
            continue
        out.append(
            f'<figure data-figure="{name}">{figures[name]}'
            f"<figcaption>{html.escape(title)}: {html.escape(coverage_words(n, total))}"
            "</figcaption></figure>"
        )
    return out


def orders_html(order_charts: Mapping[str, str] | None) -> str:
    """The small chart of each worst order (its quotes, its fill, the arrival mid)."""
    if not order_charts:
        return ""
    items = "".join(
        f'<figure data-order="{html.escape(oid)}">{svg}</figure>'
        for oid, svg in order_charts.items()
    )
    return (
        f"<h3>{html.escape(DEFINITIONS['drilldown'].title)}</h3>{_definition_link('drilldown')}"
        f'<div class="tk-orders">{items}</div>'
    )


def _section_body(
    s: Section,
    tables: Mapping[str, pd.DataFrame],
    figures: Mapping[str, str] | None,
    cur: str,
    rule: CoverageRule,
    order_charts: Mapping[str, str] | None,
) -> list[str]:
    parts: list[str] = []
    if s.key == "summary":
        parts.append(f"<h3>Headline</h3>{_definition_link('headline')}")
        parts.append(headline_html(tables.get("headline", pd.DataFrame()), tables, rule))
        parts.append('<div class="summary-grid"><div>')
        parts.append("<h3>Cost decomposition</h3>" + _definition_link("cost_decomposition"))
        decomposition = tables.get("cost_decomposition", pd.DataFrame())
        parts.append(table_html(decomposition, "cost_decomposition", cur))
        parts.append("</div><div>")
        parts += figures_html(s.figures, figures, tables, rule)
        parts.append("</div></div>")
        return parts
    parts += figures_html(s.figures, figures, tables, rule)
    for name in s.tables:
        df = tables.get(name)
        if df is None:
            continue
        parts.append(f"<h3>{html.escape(table_title(name))}</h3>{_definition_link(name)}")
        if name == "summary":
            df = gated_summary(df, tables, rule)
        if name == "data_checks":
            parts.append(checks_html(df, tables.get("data_check_counts")))
        else:
            parts.append(table_html(df, name, cur))
        if name == "worst_orders":
            parts.append(orders_html(order_charts))
    return parts


def body_html(
    tables: Mapping[str, pd.DataFrame],
    figures: Mapping[str, str] | None,
    title: str,
    subtitle: str = "",
    *,
    coverage: Sequence[str] = (),
    collapsed: bool = False,
    rule: CoverageRule | None = None,
    order_charts: Mapping[str, str] | None = None,
) -> str:
    """The report's sections; ``figures`` maps figure names to inline SVG (None: none).
    ``coverage``: what the set covers, as notes under the title. ``collapsed``: every
    section but the summary inside a closed ``<details>``. ``rule``: when a metric or a
    chart rests on too few orders to be shown. ``order_charts``: order id -> the SVG of
    each worst order's chart."""
    rule = rule or CoverageRule()
    po = tables.get("per_order", pd.DataFrame())
    cur = ""
    if "currency" in po.columns:
        found = sorted(c for c in po["currency"].dropna().unique() if isinstance(c, str) and c)
        cur = found[0] if len(found) == 1 else ""
    parts = [f'<div class="tk-report"><h1>{html.escape(title)}</h1>']
    if "cost_decomposition" in tables and "per_order" in tables:
        parts.append(headline_sentence(tables, rule))
    if subtitle:
        parts.append(f'<p class="note">{html.escape(subtitle)}</p>')
    if coverage:
        parts.append(coverage_html(coverage))
    parts.append(
        f"<details><summary>conventions</summary><p>{html.escape(CONVENTIONS)} Coverage: "
        f"{html.escape(rule.describe())}.</p></details>"
    )
    if not collapsed:
        parts.append("<nav><ul>")
        parts += [f'<li><a href="#{s.key}">{html.escape(s.title)}</a></li>' for s in SECTIONS]
        parts.append('<li><a href="#definitions">Definitions</a></li></ul></nav>')
    for s in SECTIONS:
        inner = _section_body(s, tables, figures, cur, rule, order_charts)
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
    "figures_html",
    "fragment_html",
    "headline_html",
    "table_html",
]
