"""Fields the profile maps that recorded payloads lack, counted per ``payloads.*`` setting
where the columns are extracted (at conversion, never on the receiving path) and read back.

A miss is a mapped field absent from a payload (a field sent as null is the service
saying it has no value), or a ticker without a symbol: the column it fills stays null.
So is an extracted text that is not valid text (:func:`valid_text`), counted under
``invalid_text.<column>``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any

from toolkit.profile import ServiceProfile, get_items, get_path, has_path
from toolkit.recording._wal import Row

_log = logging.getLogger("toolkit.recording")

#: setting -> messages that lacked it
Misses = dict[str, int]

#: the channels that extract a column through each setting, and that column
SETTINGS: dict[str, tuple[str, str]] = {
    "payloads.ticker_symbol": ("watchticker", "symbol"),
    "payloads.ticker_bid": ("watchticker", "bid"),
    "payloads.ticker_ask": ("watchticker", "ask"),
    "payloads.ticker_last": ("watchticker", "last"),
    "payloads.ticker_time": ("watchticker/watchtickers", "updated_at"),
    "payloads.tickers_list": ("watchtickers", "updated_at (and each pair's columns)"),
    "payloads.balance_time": ("watchbalance", "updated_at"),
}
#: the channels whose payloads are read through ``payloads.*``
CHANNELS = frozenset({"watchticker", "watchtickers", "watchbalance"})
#: the count of the messages whose extracted text column was not valid text is kept
#: under this prefix and the column's name (``invalid_text.symbol``)
INVALID_TEXT = "invalid_text."
#: the text columns read out of a message: a value that is not valid text is null there
EXTRACTED_TEXT = frozenset({"symbol", "order_id", "status"})


def _add(misses: Misses, setting: str) -> None:
    misses[setting] = misses.get(setting, 0) + 1


def count_payload_misses(
    channel: str, message: Any, profile: ServiceProfile, misses: Misses
) -> None:
    """Add to ``misses`` the settings whose field ``message`` (a data message's payload on
    ``channel``) lacks."""
    p = profile.payloads
    if channel == "watchticker":
        symbol = get_path(message, p.ticker_symbol)
        if symbol is None or symbol == "":
            _add(misses, "payloads.ticker_symbol")
        for setting, path in (
            ("payloads.ticker_bid", p.ticker_bid),
            ("payloads.ticker_ask", p.ticker_ask),
            ("payloads.ticker_last", p.ticker_last),
            ("payloads.ticker_time", p.ticker_time),
        ):
            if not has_path(message, path):
                _add(misses, setting)
    elif channel == "watchtickers":
        items = get_items(message, p.tickers_list)
        if not isinstance(items, list):
            _add(misses, "payloads.tickers_list")
            return
        pairs = [t for _, t in items if isinstance(t, Mapping)]
        if pairs and not any(has_path(t, p.ticker_time) for t in pairs):
            _add(misses, "payloads.ticker_time")
    elif channel == "watchbalance":
        if isinstance(message, list) and not p.balance_list:
            return  # the profile says the payload is the list itself: no time to read
        if not has_path(message, p.balance_time):
            _add(misses, "payloads.balance_time")


def count_text_misses(
    channels: Iterable[str], texts: Iterable[str], profile: ServiceProfile, misses: Misses
) -> None:
    """``count_payload_misses`` over data messages as sent (their JSON text)."""
    for channel, text in zip(channels, texts, strict=True):
        try:
            message = json.loads(text)
        except (TypeError, ValueError):
            continue
        if isinstance(message, Mapping):
            count_payload_misses(channel, message.get("message"), profile, misses)


def may_miss(row: Row) -> bool:
    """Whether a data row's extracted columns leave room for a miss (one of them null)."""
    channel = row.channel
    if channel == "watchticker":
        return not row.symbol or None in (row.bid, row.ask, row.last, row.updated_at_ms)
    return channel in CHANNELS and row.updated_at_ms is None


def count_row_misses(rows: Iterable[Row], profile: ServiceProfile, misses: Misses) -> None:
    """``count_payload_misses`` over rows given whole (typed events): only the rows with a
    null column are read again."""
    found = [r for r in rows if r.raw and may_miss(r)]
    if found:
        count_text_misses([r.channel for r in found], [r.raw or "" for r in found], profile, misses)


def merge(into: Misses, more: Mapping[str, Any] | None) -> Misses:
    """``into`` plus the counts of ``more`` (e.g. a converter's reply)."""
    for setting, count in (more or {}).items():
        if isinstance(count, int) and count > 0:
            into[str(setting)] = into.get(str(setting), 0) + count
    return into


def valid_text(
    column: str, values: Iterable[str | None], misses: Misses | None
) -> list[str | None]:
    """``values`` of a text ``column`` that Parquet can hold (valid UTF-8).

    A lone surrogate (a ``"\\ud800"`` escape: legal JSON, decoded by ``json.loads``, but
    no UTF-8 text) makes an extracted column's value (:data:`EXTRACTED_TEXT`) null, counted
    in ``misses`` under ``invalid_text.<column>``: a value that is not the one sent is never
    passed off as it, and ``raw`` keeps the message whole. In any other column (``raw``,
    ``channel``, ``detail``, ...) each lone surrogate becomes its JSON escape, so a JSON
    ``raw`` still decodes to the message as sent."""
    out: list[str | None] = []
    for value in values:
        if value is None or value.isascii():
            out.append(value)
            continue
        try:
            value.encode()
        except UnicodeEncodeError:
            if column in EXTRACTED_TEXT:
                if misses is not None:
                    _add(misses, INVALID_TEXT + column)
                out.append(None)
                continue
            value = escape_surrogates(value)
        out.append(value)
    return out


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its JSON escape (``\\ud800``)."""
    return text.encode("utf-8", "backslashreplace").decode()


def miss_text(profile: ServiceProfile, setting: str, count: int) -> str:
    """What ``count`` misses of ``setting`` mean, naming the setting and its path."""
    if setting.startswith(INVALID_TEXT):
        column = setting[len(INVALID_TEXT) :]
        return (
            f"{count:,} messages have {column} text that is not valid UTF-8 (a lone "
            f"surrogate escape such as \\ud800): their {column} is null"
        )
    channel, column = SETTINGS.get(setting, ("data", "a column"))
    path = getattr(profile.payloads, setting.partition(".")[2], "?")
    return (
        f"{count:,} {channel} messages have no {path!r} (profile {setting} of {profile.name!r}): "
        f"their {column} is null"
    )


HINT = (
    "the raw JSON is kept: fix the profile's payloads.* settings (toolkit doctor shows the "
    "service's fields), then read it back with read_recording(..., profile=)"
)
#: the hint for an extracted text that is not valid text: no setting to fix
INVALID_TEXT_HINT = "the raw JSON keeps the message as sent"


def report_misses(
    misses: Mapping[str, int] | None,
    known: Misses,
    profile: ServiceProfile,
    root: str | os.PathLike[str],
    received_at_ns: int,
    connection_id: str,
) -> list[Row]:
    """Add a conversion's ``misses`` to ``known`` (a recorder's counts), warn once per
    setting not in it yet, and return one ``mismatch`` session row per setting missed."""
    from toolkit.recording._rows import session_row

    rows = []
    for setting, count in sorted(merge({}, misses).items()):
        text = miss_text(profile, setting, count)
        if setting not in known:
            hint = INVALID_TEXT_HINT if setting.startswith(INVALID_TEXT) else HINT
            _log.warning("recording %s: %s; %s", root, text, hint)
        known[setting] = known.get(setting, 0) + count
        detail = f"{text} (in one converted segment)"
        rows.append(
            session_row(
                "mismatch",
                received_at_ns=received_at_ns,
                connection_id=connection_id,
                seq=-1,
                detail=detail,
            )
        )
    return rows
