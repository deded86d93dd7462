"""The quotes of ``evaluatedTickers`` under the report's own names (exchange, price, reason),
read through the field names the frames were built with (``OrderFrames.quote_fields``, from
the profile's ``orders.quote_*_field``), and the loud messages when they do not fit the data."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit.frames._schema import QuoteFields
from toolkit.report._columns import _num, _text, _time

#: the meanings the report cannot do without (a quote with no venue or price is no quote)
_NEEDED = ("venue", "price")


def quote_fields_of(frames: Any) -> QuoteFields:
    """The frames' quote field names (the default ones for a frames-like object without)."""
    fields = getattr(frames, "quote_fields", None)
    if isinstance(fields, QuoteFields):
        return fields
    return QuoteFields.from_dict(fields if isinstance(fields, dict) else None)


def _has_values(et: pd.DataFrame, name: str) -> bool:
    return name in et.columns and bool(et[name].notna().any())


def missing_quote_fields(et: pd.DataFrame | None, fields: QuoteFields) -> list[str]:
    """The needed meanings whose column is absent (or holds no value at all) in a non-empty
    evaluated_tickers frame: frames built under another profile than the service's."""
    if et is None or len(et) == 0:
        return []
    return [m for m in _NEEDED if not _has_values(et, getattr(fields, m))]


def quotes_usable(et: pd.DataFrame, fields: QuoteFields) -> bool:
    """Whether a non-empty evaluated_tickers frame gives quotes (an orderId column and the
    needed meanings with values)."""
    return "orderId" in et.columns and not missing_quote_fields(et, fields)


def counted_usable(rows: int, counts: dict[str, int], fields: QuoteFields) -> bool:
    """:func:`quotes_usable` of an evaluated_tickers table of ``rows`` rows with ``counts``
    values per column, as an engine counts them."""
    return (
        bool(rows) and "orderId" in counts and all(counts.get(getattr(fields, m)) for m in _NEEDED)
    )


#: data_checks names of the quote problems
MISSING_CHECK = "evaluatedTickers fields"
UNKNOWN_CHECK = "evaluatedTickers unknown fields"
NO_TIME_CHECK = "evaluatedTickers quote time"


def quote_problems(frames: Any) -> list[tuple[str, str]]:
    """(data_checks name, one sentence naming the settings to change) of each way the
    quotes are misread, or []: the needed columns absent (nothing else is then said),
    element fields no ``orders.quote_*_field`` names (a misnamed reason makes every quote
    clean), and no quote time in any element (an empty quote-age table)."""
    et = getattr(frames, "evaluated_tickers", None)
    if et is None or len(et) == 0:
        return []
    counts = {c: int(et[c].notna().sum()) for c in et.columns}
    return counted_quote_problems(len(et), counts, quote_fields_of(frames))


def counted_quote_problems(
    rows: int, counts: dict[str, int], fields: QuoteFields
) -> list[tuple[str, str]]:
    """:func:`quote_problems` of an evaluated_tickers table of ``rows`` rows with ``counts``
    values per column (in the table's column order), as an engine counts them."""
    if rows == 0:
        return []
    missing = [m for m in _NEEDED if not counts.get(getattr(fields, m))]
    named = {"orderId", "rank", *fields.to_dict().values()}
    found = [c for c, n in counts.items() if c not in ("orderId", "rank") and n]
    if missing:
        wanted = ", ".join(f"{QuoteFields.SETTINGS[m]} = {getattr(fields, m)!r}" for m in missing)
        return [
            (
                MISSING_CHECK,
                f"evaluated_tickers has {rows} quote(s) but no value under {wanted}; the "
                f"columns with values are {', '.join(found) or '(none)'}: set the profile's "
                "orders.quote_*_field settings to the service's names (toolkit doctor "
                "observes them); quote slippage, best-quote routing and contingencies are "
                "left out",
            )
        ]
    out: list[tuple[str, str]] = []
    unknown = [c for c in found if c not in named]
    if unknown:
        listed = ", ".join(f"{c} ({counts[c]} quote(s))" for c in unknown)
        out.append(
            (
                UNKNOWN_CHECK,
                f"evaluatedTickers elements carry field(s) no orders.quote_*_field setting "
                f"names: {listed}; if one is the service's contingency reason or quote time, "
                f"set {QuoteFields.SETTINGS['reason']} (now {fields.reason!r}) or "
                f"{QuoteFields.SETTINGS['time']} (now {fields.time!r}) to it (toolkit doctor "
                "observes them): a misnamed reason makes every quote count as clean (best "
                "clean quote, routing gap, contingencies), a misnamed time empties quote_age",
            )
        )
    if not counts.get(fields.time):
        out.append(
            (
                NO_TIME_CHECK,
                f"none of the {rows} evaluatedTickers element(s) has a value under "
                f"{QuoteFields.SETTINGS['time']} = {fields.time!r}: quote ages are left out "
                "and the quote_age table is empty; set it to the service's name for the "
                "quote time (toolkit doctor observes it)",
            )
        )
    return out


def canonical_quotes(frames: Any, *, usable: bool | None = None) -> pd.DataFrame | None:
    """``orderId, rank, exchange, price, reason, quoted_at`` of every quote (None: no usable
    quotes); ``quoted_at`` is NaT where the quote carries no time. ``usable``: whether the
    quotes of the whole set are (:func:`quotes_usable`), for ``frames`` holding a chunk of
    it: a chunk without a quote then gives an empty table, as its orders had in the set."""
    et = getattr(frames, "evaluated_tickers", None)
    if usable is None:
        if et is None or len(et) == 0 or not quotes_usable(et, quote_fields_of(frames)):
            return None
    elif not usable:
        return None
    fields = quote_fields_of(frames)
    if et is None or len(et) == 0:
        et = pd.DataFrame({"orderId": pd.Series(dtype="str")})
    rank = _num(et, "rank") if "rank" in et.columns else et.groupby("orderId").cumcount()
    return pd.DataFrame(
        {
            "orderId": _text(et, "orderId"),
            "rank": rank.astype("float64"),
            "exchange": _text(et, fields.venue),
            "price": _num(et, fields.price),
            "reason": _text(et, fields.reason),
            "quoted_at": _time(et, fields.time),
        }
    )
