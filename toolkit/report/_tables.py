"""One table of the report as a reader sees it, on the page and in a notebook: headers in
words with their units, each metric under its one name, every cell formatted by what it
holds, the key columns first (the first one stays in view when a narrow screen scrolls
the rest), and "none" for a table without rows."""

from __future__ import annotations

import html

import pandas as pd

from toolkit.report._definitions import TABLE_TITLES
from toolkit.report._format import cell_kind, format_cell, table_currency
from toolkit.report._labels import column_label, metric_name, ordered_breakdown

#: longer tables are cut in the page; the Parquet export keeps every row
MAX_HTML_ROWS = 200

#: the columns a table leads with: what a reader needs on a phone without scrolling
KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    "worst_orders": ("orderId", "total_cost_amount", "total_cost_bp"),
    "cost_decomposition": ("type", "total", "total_bp"),
    "daily_cost": ("day", "total_cost_bp", "total_cost_amount"),
}

#: what a table is sorted by, said under it (the column is shown first)
SORTED_BY: dict[str, str] = {
    "worst_orders": "total_cost_amount",
}

_UNIT_KIND = {"share": "share", "count": "count", "s": "seconds", "bp": "bp"}


def table_title(name: str) -> str:
    """A table's title in words."""
    return TABLE_TITLES.get(name, name.replace("_", " "))


def display_frame(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """``df`` in the order and names a reader sees: metrics under their one name, the
    breakdown's buckets in order, the key columns first (values untouched)."""
    out = df
    if "metric" in out.columns:
        out = out.assign(metric=out["metric"].astype(str).map(metric_name))
    if name == "breakdown":
        out = ordered_breakdown(out)
    keys = [c for c in KEY_COLUMNS.get(name, ()) if c in out.columns]
    if keys:
        out = out[keys + [c for c in out.columns if c not in keys]]
    return out


def _header(column: str, currency: str) -> str:
    label = column_label(column)
    if currency and label.endswith("(amount)"):
        return label[: -len("(amount)")] + f"({currency})"
    return label


def table_html(df: pd.DataFrame, name: str, currency: str = "", *, rows: int | None = None) -> str:
    """``df`` as an HTML table, each column formatted by what it holds, its headers in
    words; "none" when it has no row. ``rows``: how many rows the table has when ``df``
    holds only its first ones."""
    if df.empty:
        return f'<p class="empty">{html.escape(table_title(name))}: none.</p>'
    shown = display_frame(df.head(MAX_HTML_ROWS), name)
    cur = table_currency(shown, currency)
    one_cur = cur if isinstance(cur, str) else (cur[0] if len(set(cur)) == 1 else "")
    row_units = shown["unit"].astype(str).tolist() if "unit" in shown.columns else None
    columns = [c for c in shown.columns if c != "unit"]
    kinds = {c: cell_kind(name, str(c)) for c in columns}
    head = "".join(
        f'<th class="{"txt" if kinds[c] == "text" else "num"}">'
        f"{html.escape(_header(str(c), one_cur))}</th>"
        for c in columns
    )
    values = [shown[c].tolist() for c in columns]
    body = []
    for i in range(len(shown)):
        cells = []
        for c, col in zip(columns, values, strict=True):
            kind = kinds[c]
            unit_cur = cur[i] if isinstance(cur, list) else cur
            suffix = ""
            if kind == "by_unit" and row_units is not None:
                kind = _UNIT_KIND.get(row_units[i], "amount")
                suffix = " bp" if kind == "bp" else ""
                if kind == "amount" and row_units[i] not in ("", "amount"):
                    unit_cur = row_units[i] if row_units[i] != "quote currency" else unit_cur
            text = format_cell(col[i], kind, unit_cur)
            # a number gets its unit; words ("insufficient coverage") stay as they are
            text = text + suffix if not isinstance(col[i], str) and text != "–" else text
            cls = "txt" if kind == "text" else "num"
            cells.append(f'<td class="{cls}">{html.escape(text)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    note = ""
    if name in SORTED_BY and SORTED_BY[name] in columns:
        by = _header(SORTED_BY[name], one_cur)
        note += f'<p class="note">Sorted by {html.escape(by)}, highest first.</p>'
    total = len(df) if rows is None else max(rows, len(df))
    if total > MAX_HTML_ROWS:
        note += (
            f'<p class="note">First {MAX_HTML_ROWS} of {total:,} rows; '
            "<code>report.to_parquet()</code> writes them all.</p>"
        )
    return (
        f'<div class="tbl"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{note}"
    )
