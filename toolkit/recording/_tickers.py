"""Columns extracted at read time: ``watchtickers`` messages read back as one row per pair
(the recorder keeps one row per message: the receiving path does no per-pair work), where
the profile the recording was made under says, and the columns of the ticker and balance
channels read again from ``raw`` under another profile (``read_recording(profile=)``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolkit.profile import ServiceProfile, get_items, get_path, item_field
from toolkit.recording._misses import Misses, miss_text
from toolkit.recording._rows import _ms, _num, _str, row_from_text

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

TICKERS_CHANNEL = "watchtickers"
#: the channels whose columns ``profile=`` reads again from ``raw`` (``watchtickers`` too
#: when it is not split per pair)
REREAD_CHANNELS = ("watchticker", "watchbalance")
#: column -> the field of a ``Row`` that holds it
_ROW_FIELD = {
    "symbol": "symbol",
    "updated_at": "updated_at_ms",
    "bid": "bid",
    "ask": "ask",
    "last": "last",
}
_log = logging.getLogger("toolkit.recording")


def _pairs(text: Any, profile: ServiceProfile) -> list[tuple[Any, ...]]:
    """(symbol, bid, ask, last, updated ms) of each pair of one message's raw text."""
    p, unit = profile.payloads, profile.orders.timestamp_unit
    try:
        message = json.loads(text).get("message")
    except (TypeError, ValueError, AttributeError):
        return []
    items = get_items(message, p.tickers_list)
    if not isinstance(items, list):
        return []
    return [
        (
            _str(item_field(t, key, p.ticker_symbol)),
            _num(get_path(t, p.ticker_bid)),
            _num(get_path(t, p.ticker_ask)),
            _num(get_path(t, p.ticker_last)),
            _ms(get_path(t, p.ticker_time), unit),
        )
        for key, t in items
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


def reread_columns(table: pa.Table, profile: ServiceProfile, channels: Iterable[str]) -> pa.Table:
    """``table`` (with ``channel`` and ``raw``) with the ``symbol``, ``bid``, ``ask``,
    ``last`` and ``updated_at`` of its rows of ``channels`` extracted again from ``raw``
    under ``profile`` (as the recorder extracts them); warns when its mapped fields are
    missing too, naming the ``payloads.*`` settings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = [n for n in _ROW_FIELD if n in table.column_names]
    mine = pc.is_in(table.column("channel"), value_set=pa.array(list(channels), pa.string()))
    mine = pc.fill_null(mine, False).combine_chunks()
    if not names or not pc.any(mine).as_py():
        return table
    misses: Misses = {}
    rows = [
        row_from_text(
            text or "", received_at_ns=0, connection_id="", seq=0, profile=profile, misses=misses
        )
        for text in table.column("raw").filter(mine).to_pylist()
    ]
    for name in names:
        index = table.column_names.index(name)
        field = table.schema.field(name)
        values = [getattr(row, _ROW_FIELD[name]) for row in rows]
        new = pa.array(values, pa.int64() if name == "updated_at" else field.type)
        column = pc.replace_with_mask(
            table.column(name).combine_chunks(), mine, new.cast(field.type)
        )
        table = table.set_column(index, field, column)
    if misses:
        found = "; ".join(miss_text(profile, s, n) for s, n in sorted(misses.items()))
        _log.warning("read under profile %r: %s", profile.name, found)
    return table
