"""Matplotlib figures of the execution-quality report, drawn from its tables only (so a
report read back from Parquet draws the same figures); no pyplot, so no GUI and no show."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from toolkit.report._daily import daily_cost_figure
from toolkit.report._definitions import MARKOUT_HORIZONS_S
from toolkit.report._svg import INK, ink

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Tables = Mapping[str, pd.DataFrame]

#: at most this many points in a scatter: more only slows the PNG without showing more
MAX_POINTS = 5_000
#: a CDF line drawn through at most this many quantiles
CDF_POINTS = 1_000


def _figure(width: float = 8.0, height: float = 3.6) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def _time_bins(t: pd.Series) -> tuple[pd.Series, str]:
    """Times floored to a bin that gives a readable line: hours, days or weeks by span."""
    span = t.max() - t.min()
    if span <= pd.Timedelta(days=2):
        return t.dt.floor("h"), "hour"
    if span <= pd.Timedelta(days=180):
        return t.dt.floor("D"), "day"
    return t.dt.floor("7D"), "week"


BIN_WIDTH = {
    "hour": pd.Timedelta(hours=1),
    "day": pd.Timedelta(days=1),
    "week": pd.Timedelta(days=7),
}


def _one_bin_xlim(ax: Axes, bins: pd.Series, unit: str) -> None:
    # matplotlib would spread a single date over years; one bin either side reads better
    if bins.nunique() == 1:
        only = bins.iloc[0]
        ax.set_xlim(only - BIN_WIDTH[unit], only + BIN_WIDTH[unit])


def _no_data(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no data: {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def slippage_distribution(t: Tables) -> Figure:
    fig, ax = _figure()
    po = t["per_order"]
    series = {
        "execution slippage (vs own venue's quote)": po["quote_slippage_bp"].dropna(),
        "slippage vs best clean quote": po["best_quote_slippage_bp"].dropna(),
        "arrival slippage (vs arrival mid)": po["arrival_slippage_bp"].dropna(),
    }
    series = {k: v for k, v in series.items() if len(v)}
    ax.set_title("Slippage distribution (bp, positive = cost)")
    if not series:
        _no_data(ax, "no order with a quote")
        return fig
    allv = pd.concat(series.values())
    # the central 98 % keeps a few outliers (listed in the data checks) from hiding the shape
    lo, hi = np.nanpercentile(allv, [1, 99])
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    bins = np.linspace(lo, hi, 50).tolist()
    for label, v in series.items():
        ax.hist(v.clip(lo, hi), bins=bins, alpha=0.5, label=f"{label} (n={len(v):,})")
    ax.axvline(0, color=INK, lw=0.8)
    ax.set_xlabel("bp, positive = cost (clipped to the 1st-99th percentile)")
    ax.set_ylabel("orders")
    ax.legend(fontsize="small")
    return fig


def slippage_over_time(t: Tables) -> Figure:
    fig, ax = _figure()
    po = t["per_order"]
    d = po.dropna(subset=["quote_slippage_bp", "createdAt"])
    ax.set_title("Execution slippage over time (bp, positive = cost)")
    if d.empty:
        _no_data(ax, "no order with a quote")
        return fig
    sample = d.sample(MAX_POINTS, random_state=0) if len(d) > MAX_POINTS else d
    # thousands of points: one bitmap inside the SVG, the axes and labels stay text
    ax.scatter(
        sample["createdAt"],
        sample["quote_slippage_bp"],
        s=8,
        alpha=0.5,
        label="orders",
        rasterized=True,
    )
    w = d["notional"].where(d["notional"] > 0)
    day, unit = _time_bins(d["createdAt"])
    daily = (d["quote_slippage_bp"] * w).groupby(day).sum(min_count=1) / w.groupby(day).sum(
        min_count=1
    )
    ax.plot(
        daily.index, daily.to_numpy(), color="C3", marker="o", ms=3, label=f"per {unit} (weighted)"
    )
    ax.axhline(0, color=INK, lw=0.8)
    ax.set_ylabel("execution slippage (bp)")
    ax.set_xlabel("created (UTC)")
    ax.legend(fontsize="small")
    _one_bin_xlim(ax, day, unit)
    fig.autofmt_xdate()
    return fig


def venue_shares(t: Tables) -> Figure:
    from matplotlib.ticker import PercentFormatter

    fig, ax = _figure()
    v = t["venues"]
    ax.set_title("Venue shares and best-venue hit rate")
    if v.empty:
        _no_data(ax, "no executed order")
        return fig
    x = np.arange(len(v))
    ax.bar(x - 0.2, v["order_share"], width=0.4, label="share of orders")
    ax.bar(x + 0.2, v["notional_share"].fillna(0), width=0.4, label="share of notional")
    ax.plot(x, v["best_venue_hit_rate"], "kD", label="best-venue hit rate")
    ax.set_xticks(x, v["venue"].astype(str), rotation=20)
    ax.set_ylim(0, 1.05)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("share (%)")
    ax.legend(fontsize="small")
    return fig


def latency_cdf(t: Tables) -> Figure:
    from matplotlib.ticker import PercentFormatter

    fig, ax = _figure()
    po = t["per_order"]
    d = po[po["tte_s"] >= 0]
    ax.set_title("Time to execution (CDF)")
    if d.empty:
        _no_data(ax, "no executed order with executedAt")
        return fig
    for (typ, basis), g in d.groupby(["type", "tte_basis"], sort=True):
        v = np.sort(g["tte_s"].to_numpy())
        n = len(v)  # the orders, not the points the line is drawn through
        y = np.arange(1, len(v) + 1) / len(v)
        if len(v) > CDF_POINTS:  # the same curve through evenly spaced quantiles
            keep = np.linspace(0, len(v) - 1, CDF_POINTS).round().astype(int)
            v, y = v[keep], y[keep]
        ax.step(np.maximum(v, 1e-3), y, where="post", label=f"{typ} orders from {basis} (n={n:,})")
    ax.set_xscale("log")
    ax.set_xlabel("time to execution (s, log scale; dotted: 1 s, 10 s, 30 s, 1 min, 5 min)")
    ax.set_ylabel("share of orders (%)")
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    for edge in (1, 10, 30, 60, 300):
        ax.axvline(edge, color="grey", lw=0.5, ls=":")
    ax.legend(fontsize="small")
    return fig


def cost_waterfall(t: Tables) -> Figure:
    """Routing gap, execution slippage and fees stacking up to the total cost (bp,
    notional-weighted), one waterfall per order type of the largest currency."""
    from matplotlib.patches import Patch

    fig, ax = _figure(8.0, 3.4)
    d = t["cost_decomposition"]
    ax.set_title("Cost decomposition (bp of notional, positive = cost)")
    if d.empty:
        _no_data(ax, "no executed order with a quote from its venue and a best quote")
        return fig
    top = d[d["type"] == "all"].sort_values("notional", ascending=False)
    currency = top["currency"].iloc[0] if len(top) else d["currency"].iloc[0]
    d = d[(d["currency"] == currency) & (d["type"] != "all")]
    steps = ("routing_gap_bp", "execution_bp", "fees_bp")
    names = ("routing gap", "execution", "fees", "total")
    width = 0.8 / max(1, len(d))
    for i, (_, row) in enumerate(d.iterrows()):
        x = np.arange(4) + (i - (len(d) - 1) / 2) * width
        level = 0.0
        for j, col in enumerate(steps):
            v = float(row[col]) if row[col] == row[col] else 0.0
            color = "C3" if v > 0 else "C2"
            ax.bar(x[j], v, bottom=level, width=width * 0.9, color=color, alpha=0.55 + 0.4 * i)
            level += v
        ax.bar(x[3], level, width=width * 0.9, color="C0", alpha=0.55 + 0.4 * i)
        ax.text(x[3], level, f"{row['type']}\n{level:+.2f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(np.arange(4), names)
    ax.margins(y=0.25)
    ax.legend(
        handles=[
            Patch(color="C3", alpha=0.7, label="adds to the cost"),
            Patch(color="C2", alpha=0.7, label="saves cost"),
            Patch(color="C0", alpha=0.7, label="total (label: order type, bp)"),
        ],
        fontsize="small",
        loc="upper left",
    )
    ax.axhline(0, color=INK, lw=0.8)
    ax.set_ylabel(f"bp of notional ({currency} orders)")
    return fig


def markout_curve(t: Tables) -> Figure:
    """Weighted markout per horizon, with its coverage."""
    fig, ax = _figure(8.0, 3.2)
    m = t["markouts"]
    ax.set_title("Markouts after execution (bp, weighted; coverage in brackets)")
    m = m[m["orders"] > 0] if len(m) else m
    if m.empty:
        _no_data(ax, "no markout the recording covers")
        return fig
    ax.plot(m["horizon_s"], m["weighted_mean_bp"], marker="o", label="weighted mean")
    ax.plot(m["horizon_s"], m["median_bp"], marker="x", ls="--", label="median")
    for _, r in m.iterrows():
        ax.annotate(f"({r['coverage']:.0%})", (r["horizon_s"], r["weighted_mean_bp"]), fontsize=8)
    ax.axhline(0, color=INK, lw=0.8)
    ax.set_xlim(min(MARKOUT_HORIZONS_S) - 10, max(MARKOUT_HORIZONS_S) + 10)
    ax.set_xticks(list(MARKOUT_HORIZONS_S))
    ax.set_xlabel("seconds from execution")
    ax.set_ylabel("markout (bp, positive = against the client)")
    ax.legend(fontsize="small")
    return fig


def fee_rate_over_time(t: Tables) -> Figure:
    fig, ax = _figure()
    po = t["per_order"]
    d = po.dropna(subset=["createdAt"])
    d = d[d["fee_rate"].notna() | d["tier_rate"].notna()]
    ax.set_title("Fee rate over time (bp, weighted by notional)")
    if d.empty:
        _no_data(ax, "no order with a fee rate")
        return fig
    w = d["notional"].where(d["notional"] > 0).fillna(1.0)
    day, unit = _time_bins(d["createdAt"])
    styles = {"fee_rate": {"marker": "o", "ms": 5}, "tier_rate": {"marker": "x", "ls": "--"}}
    lines: dict[str, pd.Series] = {}
    for col in ("fee_rate", "tier_rate"):
        ok = d[col].notna()
        if ok.any():
            num = (d[col] * w)[ok].groupby(day[ok]).sum()
            lines[col] = num / w[ok].groupby(day[ok]).sum() * 1e4
    same = len(lines) == 2 and lines["fee_rate"].round(6).equals(lines["tier_rate"].round(6))
    if same:
        # one line: two identical lines drawn on top of each other read as one anyway
        lines.pop("tier_rate")
    labels = {
        "fee_rate": f"fee.rate per {unit}" + (" (= tier rate)" if same else ""),
        "tier_rate": f"tier rate per {unit}",
    }
    for col, daily in lines.items():
        ax.plot(daily.index, daily.to_numpy(), label=labels[col], **styles[col])  # type: ignore[arg-type]
    ax.set_ylabel("fee rate (bp)")
    ax.set_xlabel("created (UTC)")
    ax.legend(fontsize="small")
    _one_bin_xlim(ax, day, unit)
    fig.autofmt_xdate()
    return fig


def limit_funnel(t: Tables) -> Figure:
    fig, ax = _figure(8.0, 3.0)
    f = t["funnel"]
    ax.set_title("Limit orders: outcome funnel")
    if f.empty:
        _no_data(ax, "no limit order")
        return fig
    y = np.arange(len(f))[::-1]
    bars = ax.barh(y, f["orders"], color=["C0", "C1"] + ["C2"] * (len(f) - 2))
    ax.set_yticks(y, f["stage"].astype(str))
    for bar, n, s in zip(bars, f["orders"], f["share"], strict=True):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {n} ({s:.0%})", va="center")
    ax.set_xlabel("orders")
    ax.set_xlim(0, max(1, int(f["orders"].max())) * 1.2)
    return fig


FIGURES: dict[str, Callable[[Tables], Figure]] = {
    "cost_waterfall": cost_waterfall,
    "markout_curve": markout_curve,
    "slippage_distribution": slippage_distribution,
    "slippage_over_time": slippage_over_time,
    "venue_shares": venue_shares,
    "latency_cdf": latency_cdf,
    "fee_rate_over_time": fee_rate_over_time,
    "limit_funnel": limit_funnel,
    "daily_cost": daily_cost_figure,
}


#: figure -> the per-order columns it reads (the others draw from their tables alone)
FIGURE_COLUMNS: dict[str, tuple[str, ...]] = {
    "slippage_distribution": ("quote_slippage_bp", "best_quote_slippage_bp", "arrival_slippage_bp"),
    "slippage_over_time": ("quote_slippage_bp", "createdAt", "notional"),
    "latency_cdf": ("tte_s", "type", "tte_basis"),
    "fee_rate_over_time": ("createdAt", "fee_rate", "tier_rate", "notional"),
}


def all_figures(
    tables: Tables, read: Callable[[Sequence[str]], pd.DataFrame] | None = None
) -> dict[str, Figure]:
    """Every figure of the report, by name.

    Drawn with ``text.parse_math`` off: a venue, symbol or any label from the data is
    plain text, never mathtext (``$\\foo$`` would crash the PNG, ``US$ 1 $2`` would turn
    italic). Each text keeps that setting, so the figures render the same later.
    ``read``: the per-order table's columns by name, for tables without ``per_order``
    (a report on disk): each figure then reads only its :data:`FIGURE_COLUMNS`, one figure
    at a time.
    """
    out = {}
    with ink():
        for name, draw in FIGURES.items():
            if read is None or name not in FIGURE_COLUMNS:
                out[name] = draw(tables)
            else:
                out[name] = draw({**tables, "per_order": read(FIGURE_COLUMNS[name])})
    return out
