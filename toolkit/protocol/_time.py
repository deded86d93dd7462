"""Unix timestamps as the service writes them (seconds or milliseconds), or ISO-8601
text where a payload's time is not shown (spec 6), read as integer milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime

from toolkit.errors import InvalidResponse

#: below this a Unix timestamp is in seconds (1e11 s is year 5138; 1e11 ms is 1973)
_SECONDS_BELOW = 100_000_000_000


def to_epoch_ms(value: object, unit: str = "auto") -> int | None:
    """A Unix timestamp as integer milliseconds; ``unit`` is "auto" (by magnitude), "s"
    or "ms". None/"" give None. ISO-8601 text (``2026-11-27T09:23:40.637Z``; without an
    offset, UTC) is read as the instant it names, whatever ``unit``."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidResponse(f"timestamp is not a number: {value!r}")
    try:
        number = float(value)
    except ValueError:
        iso = iso_to_epoch_ms(value) if isinstance(value, str) else None
        if iso is None:
            raise InvalidResponse(
                f"timestamp is neither a Unix time nor ISO-8601 text: {value!r}"
            ) from None
        return iso
    if unit == "s" or (unit == "auto" and abs(number) < _SECONDS_BELOW):
        number *= 1000.0
    return round(number)


def iso_to_epoch_ms(text: str) -> int | None:
    """Unix milliseconds of ISO-8601 text (``Z`` or an offset; none means UTC), None
    when ``text`` is not ISO-8601 date-time text."""
    text = text.strip()
    if len(text) < 10 or not text[:4].isdigit() or text[4] != "-":
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _ONE_MS


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - _EPOCH
