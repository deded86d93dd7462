"""``watchtickers`` messages read back as one row per pair: the recorder keeps one row per
message (the receiving path does no per-pair work); the pairs are split at read time,
where the profile the recording was made under says."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolkit.profile import ServiceProfile, get_path
from toolkit.recording._rows import _ms, _num, _str

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

TICKERS_CHANNEL = "watchtickers"


def _pairs(text: Any, profile: ServiceProfile) -> list[tuple[Any, ...]]:
    """(symbol, bid, ask, last, updated ms) of each pair of one message's raw text."""
    p, unit = profile.payloads, profile.orders.timestamp_unit
    try:
        message = json.loads(text).get("message")
    except (TypeError, ValueError, AttributeError):
        return []
    items = get_path(message, p.tickers_list)
    if not isinstance(items, list):
        return []
    return [
        (
            _str(get_path(t, p.ticker_symbol)),
            _num(get_path(t, p.ticker_bid)),
            _num(get_path(t, p.ticker_ask)),
            _num(get_path(t, p.ticker_last)),
            _ms(get_path(t, p.ticker_time), unit),
        )
        for t in items
        if isinstance(t, Mapping)
    ]


def explode_tickers(
    table: pa.Table, profile: ServiceProfile, symbols: Sequence[str] | None = None
) -> pa.Table:
    """``table`` (with ``channel`` and ``raw``) with each ``watchtickers`` row replaced by
    one row per pair, its ``symbol``/``bid``/``ask``/``last``/``updated_at`` those of the
    pair (a message without pairs keeps its one row). ``symbols``: keep only the pairs
    of these symbols. Other rows are untouched; the result is not sorted."""
    import pyarrow as pa
    import pyarrow.compute as pc

    is_ts = pc.equal(table.column("channel"), TICKERS_CHANNEL)
    if not pc.any(is_ts).as_py():
        return table
    mine = table.filter(is_ts)
    rest = table.filter(pc.invert(is_ts))
    wanted = set(symbols) if symbols is not None else None
    take: list[int] = []
    values: list[tuple[Any, ...]] = []
    for i, text in enumerate(mine.column("raw").to_pylist()):
        pairs = _pairs(text, profile)
        if wanted is not None:
            pairs = [pair for pair in pairs if pair[0] is not None and pair[0].upper() in wanted]
        elif not pairs:
            pairs = [(None, None, None, None, None)]
        for pair in pairs:
            take.append(i)
            values.append(pair)
    exploded = mine.take(pa.array(take, pa.int64()))
    columns = list(zip(*values, strict=True)) if values else [()] * 5
    ms = pa.array(columns[4], pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    new = {
        "symbol": pa.array(columns[0], pa.string()),
        "bid": pa.array(columns[1], pa.float64()),
        "ask": pa.array(columns[2], pa.float64()),
        "last": pa.array(columns[3], pa.float64()),
        "updated_at": ms,
    }
    for name, array in new.items():
        if name in exploded.column_names:
            index = exploded.column_names.index(name)
            exploded = exploded.set_column(index, exploded.schema.field(name), array)
    return pa.concat_tables([rest, exploded])
