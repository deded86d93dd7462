"""Market benchmarks from a ticker recording: per-pair mids, the recording's span and its
gaps (the ``_session`` rows), and per order the arrival mid and spread and the markouts,
each used only where the recording covers the moment without a gap."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from toolkit.report._columns import _text, _time
from toolkit.report._definitions import MARKOUT_HORIZONS_S
from toolkit.report._market_join import (
    KINDS,
    SESSION_CHANNEL,
    TICKER_CHANNELS,
    RecordingMarket,
    market_mids,
    recording_market,
)

__all__ = ["TICKER_CHANNELS", "MarketLike", "RecordingMarket", "add_market", "market_source"]

#: what the market join reads: ticker rows as a frame, or a recording's root where it lies
MarketLike = pd.DataFrame | RecordingMarket
#: session kinds that carry the span of a gap (``gap_start`` .. ``gap_end``)
_GAP_KINDS = ("gap", "dropped")
_OPENS = ("disconnected",)
_CLOSES = ("connected", "resubscribed")


def read_market(root: str | os.PathLike[str]) -> pd.DataFrame:
    """The ticker rows (``watchticker`` and ``watchtickers``, one row per pair) and the
    ``_session`` rows of a recording, as :func:`toolkit.recording.read_recording` gives them."""
    from toolkit.recording._read import read_recording

    return read_recording(root, channel=[*TICKER_CHANNELS, SESSION_CHANNEL])


def market_source(market: MarketLike | str | os.PathLike[str]) -> MarketLike:
    """``market`` as the join reads it: a frame as it is, a path as the root of a recording
    (checked here: InvalidRequest when it is none), read later by the engine."""
    if isinstance(market, pd.DataFrame | RecordingMarket):
        return market
    return recording_market(market)


def symbol_key(s: pd.Series) -> pd.Series:
    """Symbols compared without case or separators (``btc/brl`` = ``BTC-BRL``)."""
    return s.astype(str).str.upper().str.replace(r"[^A-Z0-9]", "", regex=True)


def naive_ns(t: pd.Series) -> Any:
    # tz-aware values would leave numpy as slow Timestamp objects
    return t.to_numpy(dtype="datetime64[ns]")


def _gaps(session: pd.DataFrame, end: Any) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted gaps: the span of every gap/dropped row, and from a disconnect to the
    next connect (or the end of the recording)."""
    starts: list[Any] = []
    ends: list[Any] = []
    if len(session):
        kind = _text(session, "kind").str.lower()
        at = naive_ns(_time(session, "received_at"))
        gs = naive_ns(_time(session, "gap_start"))
        ge = naive_ns(_time(session, "gap_end"))
        has = kind.isin(_GAP_KINDS).to_numpy() & ~np.isnat(gs)
        starts += list(gs[has])
        ends += [e if not np.isnat(e) else a for e, a in zip(ge[has], at[has], strict=True)]
        open_at = None
        for k, a in sorted(zip(kind, at, strict=True), key=lambda x: x[1]):
            if k in _OPENS and open_at is None:
                open_at = a
            elif k in _CLOSES and open_at is not None:
                starts.append(open_at)
                ends.append(a)
                open_at = None
        if open_at is not None and not np.isnat(end):
            starts.append(open_at)
            ends.append(end)
    if not starts:
        empty = np.array([], dtype="datetime64[ns]")
        return empty, empty
    order = np.argsort(np.array(starts, dtype="datetime64[ns]"), kind="stable")
    s_arr = np.array(starts, dtype="datetime64[ns]")[order]
    e_arr = np.array(ends, dtype="datetime64[ns]")[order]
    merged_s, merged_e = [s_arr[0]], [e_arr[0]]
    for s, e in zip(s_arr[1:], e_arr[1:], strict=True):
        if s <= merged_e[-1]:
            merged_e[-1] = max(merged_e[-1], e)
        else:
            merged_s.append(s)
            merged_e.append(e)
    return np.array(merged_s, dtype="datetime64[ns]"), np.array(merged_e, dtype="datetime64[ns]")


def execution_anchor(po: pd.DataFrame, trade_time: pd.Series | None) -> pd.Series:
    """t0 of the markouts: executedAt, else the time of the order's last trade."""
    t0 = po["executedAt"]
    if trade_time is not None:
        t0 = t0.where(t0.notna(), po["orderId"].map(trade_time))
    return t0.astype(po["executedAt"].dtype)


def add_market(
    po: pd.DataFrame,
    market: MarketLike | None,
    max_quote_age: float | None,
    trade_time: pd.Series | None = None,
) -> pd.DataFrame:
    """Arrival mid/spread and markouts of the executed orders, where the recording covers
    the moment (inside its span, no gap between the ticker used and the moment): the join
    runs on the report's engine (``_market_join``), the market never loaded into pandas
    when it is a recording's root."""
    po["markout_anchor"] = execution_anchor(po, trade_time)
    if market is None or len(po) == 0:
        return po
    if isinstance(market, pd.DataFrame) and len(market) == 0:
        return po
    got = market_mids(po, market, max_quote_age)
    if got is None:
        return po
    mids, spreads = got
    sign, avg = po["sign"], po["average"]

    def at(h: str) -> pd.Series:
        return pd.Series(mids[KINDS.index(h)], index=po.index)

    po["creation_mid"] = at("created")
    po["end_mid"] = at("ended")
    po["arrival_mid"] = po["creation_mid"].where(po["executed"])
    po["arrival_spread_bp"] = pd.Series(spreads, index=po.index).where(po["executed"])
    po["arrival_slippage_bp"] = sign * (avg - po["arrival_mid"]) / po["arrival_mid"] * 1e4
    half = po["arrival_spread_bp"] / 2
    po["arrival_slippage_half_spreads"] = po["arrival_slippage_bp"] / half.where(half > 0)
    for h in MARKOUT_HORIZONS_S:
        mid_h = at(str(h))
        po[f"markout_{h}s_bp"] = sign * (avg - mid_h) / mid_h * 1e4
    return po


def markouts(po: pd.DataFrame) -> pd.DataFrame:
    """Per horizon: executed orders with an anchor, how many the recording covers, their
    notional-weighted and median markout."""
    from toolkit.report._columns import _conform, empty

    cols = {
        "horizon_s": "int64",
        "eligible": "int64",
        "orders": "int64",
        "coverage": "float64",
        "weighted_mean_bp": "float64",
        "median_bp": "float64",
    }
    ex = po[po["executed"] & po["markout_anchor"].notna()]
    if ex.empty or not any(ex[f"markout_{h}s_bp"].notna().any() for h in MARKOUT_HORIZONS_S):
        return empty(cols)
    rows = []
    for h in MARKOUT_HORIZONS_S:
        v = ex[f"markout_{h}s_bp"]
        ok = v.notna()
        w = ex["notional"].where(ok & (ex["notional"] > 0))
        rows.append(
            {
                "horizon_s": h,
                "eligible": len(ex),
                "orders": int(ok.sum()),
                "coverage": ok.sum() / len(ex),
                "weighted_mean_bp": (v * w).sum() / w.sum() if w.sum() > 0 else np.nan,
                "median_bp": v.median() if ok.any() else np.nan,
            }
        )
    return _conform(pd.DataFrame(rows), cols)
