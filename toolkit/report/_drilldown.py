"""The worst orders one by one: the quotes the router saw for each (``evaluatedTickers``),
its fill and its arrival mid on one small chart, so a reader sees where the cost came
from (a worse venue, a price away from its own venue's quote, or the market moving)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from toolkit.report._columns import _conform, empty
from toolkit.report._quotes import canonical_quotes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

QUOTE_COLUMNS = {"orderId": "str", "venue": "str", "price": "float64", "reason": "str"}


def worst_order_quotes(frames: Any, worst: pd.DataFrame) -> pd.DataFrame:
    """Every quote of ``evaluatedTickers`` of the orders in ``worst`` (their first quote per
    venue), under the report's names: ``orderId, venue, price, reason``."""
    return quotes_of(canonical_quotes(frames), worst)


def quotes_of(quotes: pd.DataFrame | None, worst: pd.DataFrame) -> pd.DataFrame:
    """The quotes of ``canonical_quotes`` rows (all, or only those of the worst orders)
    that belong to the orders in ``worst``, as :func:`worst_order_quotes` gives them."""
    if quotes is None or worst.empty:
        return empty(QUOTE_COLUMNS)
    q = quotes[quotes["orderId"].isin(set(worst["orderId"].astype(str)))]
    q = q.sort_values(["orderId", "rank"]).drop_duplicates(["orderId", "exchange"])
    q = q.rename(columns={"exchange": "venue"})
    return _conform(q, QUOTE_COLUMNS)


def order_chart(tables: Mapping[str, pd.DataFrame], order_id: str) -> Figure:
    """One order of the worst orders: each venue's quote (hollow: carried a contingency
    reason, so the router excluded it), the fill's average price on its venue, and the
    arrival mid (when a market recording gave one)."""
    from matplotlib.figure import Figure

    # fixed margins: twenty small charts, and a layout engine would cost more than drawing
    fig = Figure(figsize=(3.6, 2.6))
    fig.subplots_adjust(left=0.2, right=0.97, top=0.82, bottom=0.27)
    ax = fig.add_subplot()
    po = tables["per_order"]
    row = po[po["orderId"] == order_id].iloc[0]
    quotes = tables.get("worst_order_quotes", empty(QUOTE_COLUMNS))
    q = quotes[quotes["orderId"] == order_id]
    cur = str(row["currency"]) or "price"
    total = row["total_cost_bp"]
    cost = f"{total:+,.1f} bp" if total == total else "cost unknown"
    ax.set_title(f"{order_id}\n{row['side']} {row['symbol']}, {cost}", fontsize=8)
    venues = list(dict.fromkeys([*q["venue"].astype(str), str(row["venue"])]))
    x = {v: i for i, v in enumerate(venues)}
    clean = q[q["reason"] == ""]
    excluded = q[q["reason"] != ""]
    ax.scatter([x[v] for v in clean["venue"]], clean["price"], s=24, color="C0", label="quote")
    if len(excluded):
        ax.scatter(
            [x[v] for v in excluded["venue"]],
            excluded["price"],
            s=24,
            facecolors="none",
            edgecolors="C0",
            label="excluded quote",
        )
    if row["average"] == row["average"]:
        ax.scatter(
            [x[str(row["venue"])]],
            [row["average"]],
            marker="x",
            s=50,
            color="C3",
            label="fill (average)",
            zorder=3,
        )
    if row["arrival_mid"] == row["arrival_mid"]:
        ax.axhline(row["arrival_mid"], color="0.5", ls="--", lw=0.8, label="arrival mid")
    if q.empty:
        ax.text(
            0.5,
            0.5,
            "no quote kept for this order",
            ha="center",
            transform=ax.transAxes,
            fontsize=7,
        )
    ax.set_xticks(np.arange(len(venues)), venues, rotation=30, fontsize=7)
    ax.set_xlim(-0.6, len(venues) - 0.4)
    ax.tick_params(axis="y", labelsize=7)
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    ax.set_ylabel(cur, fontsize=7)
    ax.legend(fontsize=6, loc="best")
    return fig
