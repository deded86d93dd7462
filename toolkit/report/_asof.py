"""The lookup of the market join in numpy: per order and kind of moment, the mid (and the
spread) of the last ticker of its pair at or before the moment, within the quote age limit
and with no gap of the recording in between; of tickers at one time, the one read last."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

_MIN, _MAX = np.iinfo("int64").min, np.iinfo("int64").max


def _ints(column: Any, missing: int) -> np.ndarray:
    """An int64 Arrow column as numpy, a missing value as ``missing``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return np.asarray(pc.fill_null(column.cast(pa.int64()), missing).to_numpy(), dtype="int64")


def _codes(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each value's position in the sorted distinct values (-1: missing), and those values."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column.combine_chunks())
    values = np.asarray(encoded.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    rank = np.empty(len(values), dtype="int64")
    rank[np.argsort(values, kind="stable")] = np.arange(len(values))
    index = pc.fill_null(encoded.indices, -1).to_numpy().astype("int64")
    if not len(values):  # none present
        return index, values
    return np.where(index >= 0, rank[np.maximum(index, 0)], -1), values[np.argsort(rank)]


class Latest:
    """Ticker rows (``symbol, t, mid, spread_bp, o1, o2, o3``: ns time, read order) as one
    row per (pair id, time), the row read last: the greatest ``o1`` (a missing one never
    wins), then a missing ``o2`` or the greatest, then a missing ``o3`` or the greatest;
    sorted by pair id and time."""

    def __init__(self, rows: pa.Table, pair_id: dict[str, int]) -> None:
        from toolkit.report._market import symbol_key

        code, names = _codes(rows.column("symbol"))
        keys = symbol_key(pd.Series(names, dtype="str"))
        of_name = np.asarray(keys.map(pair_id).fillna(-1).to_numpy(), dtype="int64")
        sid = np.where(code >= 0, of_name[np.maximum(code, 0)], -1) if len(names) else code
        t_null = rows.column("t").is_null().to_numpy(zero_copy_only=False)
        t = _ints(rows.column("t"), 0)
        o2, seen = _codes(rows.column("o2"))
        keep = (sid >= 0) & ~t_null
        keys_sorted = (
            _ints(rows.column("o3"), _MAX)[keep],
            np.where(o2 < 0, len(seen), o2)[keep],
            _ints(rows.column("o1"), _MIN)[keep],
            t[keep],
            sid[keep],
        )
        order = np.lexsort(keys_sorted)
        sid, t = sid[keep][order], t[keep][order]
        last = np.ones(len(t), dtype=bool)
        last[:-1] = (sid[1:] != sid[:-1]) | (t[1:] != t[:-1])
        at = np.flatnonzero(keep)[order][last]

        def floats(name: str) -> np.ndarray:
            values = rows.column(name).to_numpy(zero_copy_only=False).astype("float64")
            return values[at]

        self.sid, self.t = sid[last], t[last]
        self.mid, self.spread_bp = floats("mid"), floats("spread_bp")


def backward(
    latest: Latest,
    sid: np.ndarray,
    t: np.ndarray,
    *,
    tolerance_ns: int | None,
    span: tuple[int, int],
    gaps: tuple[np.ndarray, np.ndarray],
) -> np.ndarray:
    """Per moment (pair id ``sid``, -1: none; ``t`` ns) the position in ``latest`` of the
    last ticker of its pair at or before it, never a later one; -1 where none is usable:
    the moment outside the recording's ``span``, the ticker older than ``tolerance_ns``,
    or a gap of the recording (disjoint, sorted ``gaps``) starting at or before the
    moment and not ended before the ticker."""
    found = np.full(len(t), -1, dtype="int64")
    inside = (sid >= 0) & (t >= span[0]) & (t <= span[1])
    for s in np.unique(sid[inside]):
        lo, hi = np.searchsorted(latest.sid, [s, s + 1])
        mine = np.flatnonzero(inside & (sid == s))
        pos = np.searchsorted(latest.t[lo:hi], t[mine], side="right") - 1
        found[mine[pos >= 0]] = lo + pos[pos >= 0]
    hit = np.flatnonzero(found >= 0)
    tick_t = latest.t[found[hit]]
    bad = np.zeros(len(hit), dtype=bool)
    if tolerance_ns is not None:
        bad |= t[hit] - tick_t > tolerance_ns
    starts, ends = gaps
    if len(starts):
        g = np.searchsorted(starts, t[hit], side="right") - 1
        bad |= (g >= 0) & ~(ends[np.maximum(g, 0)] < tick_t)
    found[hit[bad]] = -1
    return found
