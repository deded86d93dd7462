"""Market benchmarks from a ticker recording: per-pair mids, the recording's span and its
gaps (the ``_session`` rows), and per order the arrival mid and spread and the markouts,
each used only where the recording covers the moment without a gap."""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from toolkit.report._columns import _num, _text, _time
from toolkit.report._definitions import MARKOUT_HORIZONS_S

#: the recording channels the report reads (ticker rows, one per pair, and session rows)
TICKER_CHANNELS = ("watchticker", "watchtickers")
SESSION_CHANNEL = "_session"
#: session kinds that carry the span of a gap (``gap_start`` .. ``gap_end``)
_GAP_KINDS = ("gap", "dropped")
_OPENS = ("disconnected",)
_CLOSES = ("connected", "resubscribed")


def read_market(root: str | os.PathLike[str]) -> pd.DataFrame:
    """The ticker rows (``watchticker`` and ``watchtickers``, one row per pair) and the
    ``_session`` rows of a recording, as :func:`toolkit.recording.read_recording` gives them."""
    from toolkit.recording._read import read_recording

    return read_recording(root, channel=[*TICKER_CHANNELS, SESSION_CHANNEL])


class Market(NamedTuple):
    """A recording reduced to what the metrics need (naive UTC nanoseconds throughout)."""

    ticks: pd.DataFrame  # _sym, _t, _tick_t, mid, spread_bp; sorted by _t
    start: Any  # first moment the recording saw (np.datetime64 or NaT)
    end: Any  # last moment the recording saw
    gap_start: np.ndarray  # disjoint gaps, sorted
    gap_end: np.ndarray


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


def market_of(market: pd.DataFrame) -> Market | None:
    """``market`` (ticker rows, with or without ``_session`` rows) as a :class:`Market`."""
    if "channel" in market.columns:
        channel = _text(market, "channel").str.lower()
        session = market[channel == SESSION_CHANNEL]
        rows = market[channel != SESSION_CHANNEL]
    else:
        session, rows = market.iloc[0:0], market
    bid, ask, last = _num(rows, "bid"), _num(rows, "ask"), _num(rows, "last")
    two_sided = (bid > 0) & (ask > 0) & (ask >= bid)
    mid = ((bid + ask) / 2).where(two_sided, last)
    # the ticker's service time (a recording keeps it as updated_at), else when it arrived
    t = _time(rows, "timestamp")
    for fallback in ("updated_at", "received_at"):
        if fallback in rows.columns:
            t = t.where(t.notna(), _time(rows, fallback))
    seen = [naive_ns(t)]
    for frame in (rows, session):
        if "received_at" in frame.columns and len(frame):
            seen.append(naive_ns(_time(frame, "received_at")))
    every = np.concatenate(seen) if seen else np.array([], dtype="datetime64[ns]")
    every = every[~np.isnat(every)]
    if len(every) == 0:
        return None
    start, end = every.min(), every.max()
    tt = naive_ns(t)
    mk = pd.DataFrame(
        {
            "_sym": symbol_key(_text(rows, "symbol")).to_numpy(),
            "_t": tt,
            "_tick_t": tt,
            "mid": mid.to_numpy(),
            "spread_bp": ((ask - bid) / mid * 1e4).where(two_sided).to_numpy(),
        }
    )
    mk = mk[(mk["mid"] > 0) & mk["_t"].notna()]
    gs, ge = _gaps(session, end)
    return Market(mk.sort_values("_t", kind="stable").reset_index(drop=True), start, end, gs, ge)


def _in_gap(m: Market, tick_t: np.ndarray, target: np.ndarray) -> np.ndarray:
    """True where a gap of the recording overlaps [tick time, target]."""
    if len(m.gap_start) == 0:
        return np.zeros(len(target), dtype=bool)
    idx = np.searchsorted(m.gap_start, target, side="right") - 1
    ok = idx >= 0
    out = np.zeros(len(target), dtype=bool)
    out[ok] = m.gap_end[idx[ok]] >= tick_t[ok]
    return out


def execution_anchor(po: pd.DataFrame, trade_time: pd.Series | None) -> pd.Series:
    """t0 of the markouts: executedAt, else the time of the order's last trade."""
    t0 = po["executedAt"]
    if trade_time is not None:
        t0 = t0.where(t0.notna(), po["orderId"].map(trade_time))
    return t0.astype(po["executedAt"].dtype)


def add_market(
    po: pd.DataFrame,
    market: pd.DataFrame | None,
    max_quote_age: float | None,
    trade_time: pd.Series | None = None,
) -> pd.DataFrame:
    """Arrival mid/spread and markouts of the executed orders, where the recording covers
    the moment (inside its span, no gap between the ticker used and the moment)."""
    po["markout_anchor"] = execution_anchor(po, trade_time)
    if market is None or len(market) == 0 or len(po) == 0:
        return po
    m = market_of(market)
    if m is None or m.ticks.empty:
        return po
    tolerance = None if max_quote_age is None else pd.Timedelta(seconds=max_quote_age)
    base = pd.DataFrame({"_row": np.arange(len(po)), "_sym": symbol_key(po["symbol"]).to_numpy()})
    executed = po["executed"].to_numpy()
    anchor = po["markout_anchor"]
    targets = [base.assign(_h="created", _t=naive_ns(po["createdAt"]))]
    if "endedAt" in po.columns:
        targets.append(base.assign(_h="ended", _t=naive_ns(po["endedAt"])))
    targets += [
        base[executed].assign(_h=str(h), _t=naive_ns(anchor[executed] + pd.Timedelta(seconds=h)))
        for h in MARKOUT_HORIZONS_S
    ]
    left = pd.concat(targets, ignore_index=True).dropna(subset=["_t"])
    left = left.sort_values("_t", kind="stable")
    if left.empty:
        return po
    # backward: the last ticker at or before the target time, never a later one
    got = pd.merge_asof(
        left, m.ticks, on="_t", by="_sym", direction="backward", tolerance=tolerance
    )
    got = got.dropna(subset=["mid"])
    target = got["_t"].to_numpy(dtype="datetime64[ns]")
    tick_t = got["_tick_t"].to_numpy(dtype="datetime64[ns]")
    inside = (target >= m.start) & (target <= m.end) & ~_in_gap(m, tick_t, target)
    got = got[inside]
    # one row of mids per target kind, one column per order (positions are po's index)
    kinds = ["created", "ended", *(str(h) for h in MARKOUT_HORIZONS_S)]
    code = got["_h"].map({k: i for i, k in enumerate(kinds)}).to_numpy(dtype="int64")
    row = got["_row"].to_numpy(dtype="int64")
    mids = np.full((len(kinds), len(po)), np.nan)
    mids[code, row] = got["mid"].to_numpy(dtype="float64")
    spreads = np.full(len(po), np.nan)
    created = code == 0
    spreads[row[created]] = got["spread_bp"].to_numpy(dtype="float64")[created]
    sign, avg = po["sign"], po["average"]

    def at(h: str) -> pd.Series:
        return pd.Series(mids[kinds.index(h)], index=po.index)

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
