"""The column rules of the frames: decimal strings -> float64 or ``decimal128(38, 18)``, Unix
or ISO 8601 times -> ``timestamp[ms, UTC]``; a value that is neither becomes null, said once
per column with an example order."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.errors import InvalidResponse

#: exact decimals: one type whatever the load holds (20 integer and 18 fractional digits
#: hold any price or quantity we know of), so every export of a column has the same type
EXACT_DECIMAL = pa.decimal128(38, 18)
_WHOLE_DIGITS = EXACT_DECIMAL.precision - EXACT_DECIMAL.scale
TIMESTAMP = pa.timestamp("ms", tz="UTC")
#: the moments an order may carry, in Unix ms (2000-01-01 to 9999-12-31, UTC), as the order
#: store checks them (toolkit/store/_checks.py): outside, the unit is wrong or it is no time
EARLIEST_MS = 946_684_800_000
LATEST_MS = 253_402_300_799_999
#: the times every order has (spec 2.4): most of a load out of range is a unit mistake
REQUIRED_TIMES = frozenset({"createdAt", "updatedAt"})
# below this a Unix time is in seconds: 1e11 s is the year 5138, 1e11 ms is 1973
_SECONDS_BELOW = 100_000_000_000
_NUMBER_RE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
# the warnings point at the caller of build_frames: _to_* <- _convert <- _build_tables <- it
_STACK = 5


@dataclass(frozen=True)
class Where:
    """What a column's messages name: the field as the service sends it (``trades[].price``),
    the order id of each row, and the profile's ``orders.timestamp_unit``."""

    field: str
    ids: pa.ChunkedArray
    unit: str = "auto"

    def example(self, bad: pa.ChunkedArray | pa.Array, values: pa.ChunkedArray) -> str:
        """``order 'o-1': 'value'`` for the first row of ``bad``."""
        i = pc.index(bad, True).as_py()
        return f"order {self.ids[i].as_py()!r}: {values[i].as_py()!r:.40}"


def _text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        return col
    return pc.cast(col, pa.string())


# --------------------------------------------------------------------------- decimals


def _fitting(text: str) -> Decimal | None:
    """``text`` as a Decimal when ``EXACT_DECIMAL`` holds it exactly, else None."""
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    _, digits, exponent = number.as_tuple()
    if not isinstance(exponent, int):  # NaN, Infinity
        return None
    if not any(digits):
        return Decimal(0)
    # trailing zeros hold no digit of the value (normalize() would round past 28 digits)
    kept = len(digits)
    while digits[kept - 1] == 0:
        kept -= 1
    exponent += len(digits) - kept
    if -exponent > EXACT_DECIMAL.scale or kept + exponent > _WHOLE_DIGITS:
        return None
    return number


def _to_exact(col: pa.ChunkedArray, where: Where) -> pa.ChunkedArray:
    """Numeric text -> ``EXACT_DECIMAL``; a value it cannot hold exactly is null, warned."""
    try:
        return pc.cast(col, EXACT_DECIMAL)
    except pa.ArrowInvalid:
        pass
    known: dict[str, Decimal | None] = {}
    values: list[Decimal | None] = []
    for text in col.to_pylist():
        if text is None:
            values.append(None)
            continue
        if text not in known:
            known[text] = _fitting(text)
        values.append(known[text])
    out = pa.chunked_array([pa.array(values, EXACT_DECIMAL)], EXACT_DECIMAL)
    bad = pc.and_(pc.is_valid(col), pc.is_null(out))
    count = pc.sum(bad).as_py() or 0
    if count:
        warnings.warn(
            f"{count} value(s) of {where.field} do not fit the exact type decimal128(38, 18) "
            f"({_WHOLE_DIGITS} integer and {EXACT_DECIMAL.scale} fractional digits; "
            f"{where.example(bad, col)}); they were set to null (exact=False reads them as "
            "float64)",
            RuntimeWarning,
            stacklevel=_STACK + 1,
        )
    return out


def to_decimal(col: pa.ChunkedArray, exact: bool, where: Where) -> pa.ChunkedArray:
    """Decimal text (or JSON numbers) -> float64, or ``EXACT_DECIMAL`` with ``exact``;
    blanks are null, other non-numbers null with a warning."""
    target = EXACT_DECIMAL if exact else pa.float64()
    if pa.types.is_null(col.type):
        return pa.chunked_array([pa.nulls(len(col), target)])
    col = _text(col)
    try:
        return pc.cast(col, target)
    except pa.ArrowInvalid:
        pass
    # slow path: blanks and non-numbers become null, exact values that do not fit too
    col = pc.utf8_trim_whitespace(col)
    numeric = pc.match_substring_regex(col, _NUMBER_RE)
    # "" is how the service says "no value"; only real garbage deserves a warning
    garbage = pc.and_(pc.not_equal(col, ""), pc.invert(numeric))
    bad = pc.sum(garbage).as_py() or 0
    if bad:
        warnings.warn(
            f"{bad} value(s) of {where.field} are not numbers "
            f"({where.example(pc.fill_null(garbage, False), col)}); they were set to null",
            RuntimeWarning,
            stacklevel=_STACK,
        )
    col = pc.if_else(numeric, col, pa.scalar(None, col.type))
    return _to_exact(col, where) if exact else pc.cast(col, target)


# --------------------------------------------------------------------------- times


def _scaled(numbers: pa.ChunkedArray, unit: str) -> pa.ChunkedArray:
    """float64 Unix times in ``unit`` ("s", "ms", "auto": seconds below 1e11, per value, so
    a column mixing the two units still comes out right) -> float64 milliseconds."""
    if unit == "ms":
        return numbers
    if unit == "s":
        return pc.multiply(numbers, 1000.0)
    seconds = pc.less(pc.abs(numbers), float(_SECONDS_BELOW))
    return pc.if_else(seconds, pc.multiply(numbers, 1000.0), numbers)


def _from_iso(texts: pa.ChunkedArray) -> pa.ChunkedArray:
    """ISO 8601 text (naive = UTC) -> float64 ms; null where it is no such time."""
    parsed = pd.to_datetime(
        pd.Series(texts.to_pylist(), dtype=object), utc=True, errors="coerce", format="ISO8601"
    )
    stamps = pa.array(parsed.dt.as_unit("ms"), type=TIMESTAMP)
    return pa.chunked_array([pc.cast(pc.cast(stamps, pa.int64()), pa.float64())])


def to_timestamp(col: pa.ChunkedArray, where: Where, required: bool = False) -> pa.ChunkedArray:
    """Unix seconds or milliseconds (``where.unit``) or ISO 8601 text -> ``TIMESTAMP``.

    Blanks and 0 are "no value" (null, as in recordings). Anything else that is no moment
    between 2000 and 9999 (NaN, Infinity, 1e300, µs or ns, text that is no time) is null,
    with one warning for the column naming the count, an example order and
    ``orders.timestamp_unit``; when most values of a ``required`` time are so, the unit is
    wrong: InvalidResponse naming that setting."""
    if pa.types.is_null(col.type):
        return pa.chunked_array([pa.nulls(len(col), TIMESTAMP)])
    if pa.types.is_timestamp(col.type):
        return pc.cast(col, TIMESTAMP)
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        numbers = pc.cast(col, pa.float64(), safe=False)  # beyond 2**53: out of range anyway
        ms = _scaled(numbers, where.unit)
        sent = pc.not_equal(numbers, 0.0)
    else:
        text = pc.utf8_trim_whitespace(_text(col))
        numeric = pc.fill_null(pc.match_substring_regex(text, _NUMBER_RE), False)
        numbers = pc.cast(pc.if_else(numeric, text, pa.scalar(None, pa.string())), pa.float64())
        ms = _scaled(numbers, where.unit)
        others = pc.and_(pc.is_valid(text), pc.invert(numeric))
        if pc.any(others).as_py():
            iso = _from_iso(pc.if_else(others, text, pa.scalar(None, pa.string())))
            ms = pc.if_else(numeric, ms, iso)
        sent = pc.and_kleene(pc.not_equal(text, ""), pc.invert(pc.equal(numbers, 0.0)))
    sent = pc.fill_null(pc.and_kleene(pc.is_valid(col), sent), True)
    inside = pc.and_(
        pc.is_finite(ms),
        pc.and_(pc.greater_equal(ms, EARLIEST_MS), pc.less_equal(ms, LATEST_MS)),
    )
    inside = pc.fill_null(inside, False)
    kept = pc.if_else(inside, pc.round(ms), pa.scalar(None, pa.float64()))
    out = pc.cast(pc.cast(kept, pa.int64()), TIMESTAMP)
    bad = pc.and_(sent, pc.invert(inside))
    count = pc.sum(bad).as_py() or 0
    if count:
        _say_out_of_range(col, where, bad, count, pc.sum(sent).as_py() or 0, required)
    return out


def _say_out_of_range(
    col: pa.ChunkedArray,
    where: Where,
    bad: pa.ChunkedArray,
    count: int,
    present: int,
    required: bool,
) -> None:
    setting = (
        f"orders.timestamp_unit in the profile (now {where.unit!r}; the service writes Unix "
        "seconds or milliseconds)"
    )
    example = where.example(bad, col)
    if required and count * 2 > present:
        oid = where.ids[pc.index(bad, True).as_py()].as_py()
        raise InvalidResponse(
            f"the {where.field} of {count} of {present} orders reads as no time between 2000 "
            f"and 9999 ({example}): the times are not in the unit the profile reads, or are "
            f"no times; nothing was loaded. Check {setting}",
            order_id=oid if isinstance(oid, str) else None,
        )
    warnings.warn(
        f"{count} value(s) of {where.field} are no time between 2000 and 9999 ({example}); "
        f"they were set to null. If the service sends times in another unit, check {setting}",
        RuntimeWarning,
        stacklevel=_STACK + 1,
    )
