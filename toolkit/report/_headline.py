"""The top of the report's page: the one-sentence cost headline a head of trading reads
first (total in bp and in the quote currency, then its routing, execution and fee parts)
and the headline table, each figure with the orders it rests on, or "insufficient
coverage (n of N)" where they are too few."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping

import pandas as pd

from toolkit.report._coverage import ALL_LABEL, absent_type_notes
from toolkit.report._format import format_cell
from toolkit.report._gate import CoverageRule, coverage_words, executed, insufficient
from toolkit.report._labels import metric_name


def _bp(v: float) -> str:
    # a no-break space: a figure never wraps away from its unit
    return f"{format_cell(v, 'bp', '')}\u00a0bp"


def headline_sentence(tables: Mapping[str, pd.DataFrame], rule: CoverageRule) -> str:
    """ "Trading cost over the period: X bp = Y BRL: routing A bp, execution B bp, fees
    C bp" as HTML, for the currency with the largest notional (the other currencies are
    named), with the orders it rests on; "insufficient coverage (n of N)" when thin."""
    d = tables["cost_decomposition"]
    po = tables["per_order"]
    total_ex = executed(tables)
    top = d[d["type"] == "all"].sort_values("notional", ascending=False) if len(d) else d
    if top.empty:
        words = insufficient(0, total_ex)
        return (
            '<p class="tk-headline">Trading cost over the period: '
            f'<span class="tk-insufficient">{html.escape(words)}</span> executed orders have a '
            "quote from their venue and a best clean quote.</p>"
        )
    row = top.iloc[0]
    cur = str(row["currency"])
    ex = po["executed"].astype(bool) & (po["currency"] == cur) if len(po) else po["executed"]
    n, total = int(row["orders"]), int(ex.sum())
    if not rule.enough(n, total):
        words = insufficient(n, total)
        return (
            '<p class="tk-headline">Trading cost over the period: '
            f'<span class="tk-insufficient">{html.escape(words)}</span> of the executed '
            f"{html.escape(cur)} orders can be decomposed.</p>"
        )
    others = [str(c) for c in top["currency"].iloc[1:]]
    more = (
        f" Also in {html.escape(', '.join(others))}: see the cost decomposition." if others else ""
    )
    amount = format_cell(row["total"], "amount", cur)
    return (
        '<p class="tk-headline">Trading cost over the period: '
        f'<b class="tk-total-bp">{_bp(row["total_bp"])}</b> = '
        f'<b class="tk-total">{html.escape(amount)}</b>: routing {_bp(row["routing_gap_bp"])}, '
        f"execution {_bp(row['execution_bp'])}, fees {_bp(row['fees_bp'])} "
        f'<span class="ci">({html.escape(coverage_words(n, total, "executed orders"))})</span>.'
        f"{more}</p>"
    )


#: (value column, its order count column, order type) of the summary table
_SUMMARY_VALUES = (
    ("value", "orders", "all"),
    ("market", "market_orders", "market"),
    ("limit", "limit_orders", "limit"),
)


def gated_summary(
    summary: pd.DataFrame, tables: Mapping[str, pd.DataFrame], rule: CoverageRule
) -> pd.DataFrame:
    """The summary table as the page shows it: a bp, share or duration resting on too few
    of the executed orders of its type reads "insufficient coverage (n of N)" instead
    (counts, amounts and the maker share by trades stay as they are)."""
    if summary.empty or "unit" not in summary.columns:
        return summary
    out = summary.astype({c: object for c, _, _ in _SUMMARY_VALUES if c in summary.columns})
    gated = out["unit"].isin(["bp", "share", "s"]) & ~out["metric"].astype(str).str.startswith(
        "maker share"
    )
    for value, count, kind in _SUMMARY_VALUES:
        if value not in out.columns or count not in out.columns:
            continue
        total = executed(tables, kind)
        counts = pd.to_numeric(out[count], errors="coerce").fillna(0).astype("int64")
        for i in out.index[gated]:
            n = int(counts[i])
            if not rule.enough(n, total):
                out.at[i, value] = insufficient(n, total)
    return out


def headline_html(
    headline: pd.DataFrame,
    tables: Mapping[str, pd.DataFrame] | None = None,
    rule: CoverageRule | None = None,
) -> str:
    """The headline metrics, one row per metric, market / limit / all orders of the set side
    by side, each value with its 95 % interval and the orders it rests on (n of N executed);
    "insufficient coverage (n of N)" instead of a value resting on too few; a note below
    for an order type the set lacks. Without ``tables`` N is n (only the order count
    rule applies)."""
    rule = rule or CoverageRule()
    if headline.empty:
        return '<p class="empty">Headline: none (no order to report on).</p>'
    present = set(headline["type"])
    types = [t for t in ("market", "limit", "all") if t in present]
    metrics = list(dict.fromkeys(headline["metric"]))
    h = headline.set_index(["type", "metric"])
    labels = {"all": ALL_LABEL}
    head = '<th class="txt">metric</th>' + "".join(
        f"<th>{html.escape(labels.get(t, f'{t} orders'))}</th>" for t in types
    )
    totals = {t: executed(tables, t) if tables is not None else -1 for t in types}
    rows = []
    for m in metrics:
        cells = [f'<td class="txt">{html.escape(metric_name(m))}</td>']
        for t in types:
            if (t, m) not in h.index:
                cells.append("<td>–</td>")
                continue
            r = h.loc[(t, m)]
            n, total = int(r["orders"]), totals[t] if totals[t] >= 0 else int(r["orders"])
            if not rule.enough(n, total):
                words = html.escape(insufficient(n, total))
                cells.append(f'<td><span class="tk-insufficient">{words}</span></td>')
                continue
            kind = "share" if r["unit"] == "share" else "bp"
            unit = "" if kind == "share" else " bp"
            value = format_cell(r["value"], kind, "") + unit
            ci = ""
            if not (math.isnan(r["ci_low"]) or math.isnan(r["ci_high"])):
                lo, hi = format_cell(r["ci_low"], kind, ""), format_cell(r["ci_high"], kind, "")
                ci = f"[{lo}, {hi}]"
            cov = coverage_words(n, total)
            cells.append(
                f'<td>{html.escape(value)} <span class="ci">{html.escape(ci)} '
                f"{html.escape(cov)}</span></td>"
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    notes = "".join(
        f'<p class="note">{html.escape(n)}</p>' for n in absent_type_notes(present - {"all"})
    )
    return (
        f'<div class="tbl"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{notes}"
    )
