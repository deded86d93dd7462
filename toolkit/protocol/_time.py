"""Unix timestamps as the service writes them (seconds or milliseconds), read as integer
milliseconds."""

from __future__ import annotations

from toolkit.errors import InvalidResponse

#: below this a Unix timestamp is in seconds (1e11 s is year 5138; 1e11 ms is 1973)
_SECONDS_BELOW = 100_000_000_000


def to_epoch_ms(value: object, unit: str = "auto") -> int | None:
    """A Unix timestamp as integer milliseconds; ``unit`` is "auto" (by magnitude), "s"
    or "ms". None/"" give None."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidResponse(f"timestamp is not a number: {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise InvalidResponse(f"timestamp is not a number: {value!r}") from None
    if unit == "s" or (unit == "auto" and abs(number) < _SECONDS_BELOW):
        number *= 1000.0
    return round(number)
