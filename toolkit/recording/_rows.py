"""The rows of a recording: its one Arrow schema, its Hive partitions, and the row
extracted from a data message, a raw text, a typed event or a session happening.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, get_items, get_path
from toolkit.protocol import iso_to_epoch_ms
from toolkit.recording._misses import Misses, count_payload_misses, may_miss
from toolkit.recording._wal import Row
from toolkit.stream._decode import LazyMessage
from toolkit.stream._events import OrderEvent, SessionEvent, TickerEvent, order_id_of

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


SESSION_CHANNEL = "_session"
#: channel of a data message whose text is not a JSON object, or that names the session
#: channel (kept, never dropped, and never taken for one of the recorder's own rows)
UNPARSED_CHANNEL = "_unparsed"
#: column names of every Parquet file, in order. One schema for every channel (columns a
#: channel does not use stay null) so any reader can scan the whole dataset at once.
COLUMNS: tuple[str, ...] = (
    "received_at",
    "connection_id",
    "seq",
    "channel",
    "symbol",
    "order_id",
    "status",
    "updated_at",
    "bid",
    "ask",
    "last",
    "kind",
    "detail",
    "gap_start",
    "gap_end",
    "raw",
)

NS_PER_DAY = 86_400 * 1_000_000_000
_SAFE_PARTITION = re.compile(r"[^a-z0-9_\-]")


def recording_schema() -> pa.Schema:
    """The Arrow schema of every file of a recording."""
    import pyarrow as pa

    ts_ns = pa.timestamp("ns", tz="UTC")
    return pa.schema(
        [
            pa.field("received_at", ts_ns, nullable=False),
            pa.field("connection_id", pa.string()),
            pa.field("seq", pa.int64()),
            pa.field("channel", pa.string()),
            pa.field("symbol", pa.string()),
            pa.field("order_id", pa.string()),
            pa.field("status", pa.string()),
            pa.field("updated_at", pa.timestamp("ms", tz="UTC")),
            pa.field("bid", pa.float64()),
            pa.field("ask", pa.float64()),
            pa.field("last", pa.float64()),
            pa.field("kind", pa.string()),
            pa.field("detail", pa.string()),
            pa.field("gap_start", ts_ns),
            pa.field("gap_end", ts_ns),
            pa.field("raw", pa.string()),
        ]
    )


#: Parquet key-value metadata of every file: the profile the columns were extracted under
META_PROFILE = b"toolkit.profile"
META_PAYLOADS = b"toolkit.profile.payloads"
META_ORDERS = b"toolkit.profile.orders"
#: the account the recording was made with (``toolkit.client.account_of``: the service's
#: address and a fingerprint of the API key, never the key): an order store takes the
#: recorded bodies of a recording of its own account without fetching them again
META_ACCOUNT = b"toolkit.account"


def profile_of(client: Any, profile: ServiceProfile | None = None) -> ServiceProfile:
    """``profile`` when given, else the client's ``profile``, else the default."""
    if profile is not None:
        return profile
    found = getattr(client, "profile", None)
    return found if isinstance(found, ServiceProfile) else DEFAULT_PROFILE


def profile_metadata(
    profile: ServiceProfile, account: Mapping[str, str | None] | None = None
) -> dict[bytes, bytes]:
    """The key-value metadata that says which profile a file's columns were read under:
    its name, and its ``payloads`` and ``orders`` sections as JSON; and, when known, the
    ``account`` it was recorded with (:data:`META_ACCOUNT`)."""
    data = profile.to_dict()
    out = {
        META_PROFILE: profile.name.encode(),
        META_PAYLOADS: json.dumps(data["payloads"], sort_keys=True).encode(),
        META_ORDERS: json.dumps(data["orders"], sort_keys=True).encode(),
    }
    if account is not None:
        out[META_ACCOUNT] = json.dumps(dict(account), sort_keys=True).encode()
    return out


def account_from_metadata(metadata: Mapping[bytes, bytes] | None) -> dict[str, Any] | None:
    """The account a file names (:data:`META_ACCOUNT`), or None (none, or unreadable)."""
    if not metadata or META_ACCOUNT not in metadata:
        return None
    try:
        account = json.loads(metadata[META_ACCOUNT])
    except ValueError:
        return None
    return account if isinstance(account, dict) else None


def profile_from_metadata(metadata: Mapping[bytes, bytes] | None) -> ServiceProfile | None:
    """The profile a file was written under (its payload mapping and time unit; every
    other setting default), or None for a file without it. Settings this version does
    not know are left out."""
    if not metadata or META_PROFILE not in metadata:
        return None
    from toolkit.profile import SECTIONS

    data: dict[str, Any] = {"name": metadata[META_PROFILE].decode()}
    for key, section in ((META_PAYLOADS, "payloads"), (META_ORDERS, "orders")):
        try:
            table = json.loads(metadata.get(key, b"{}"))
        except ValueError:
            continue
        if isinstance(table, Mapping):
            known = {f.name for f in dataclasses.fields(SECTIONS[section])}
            data[section] = {k: v for k, v in table.items() if k in known}
    try:
        return ServiceProfile.from_dict(data, source="recording metadata")
    except ValueError:
        return None


def partition_value(channel: str) -> str:
    """The directory-safe form of a channel name: a name sent by the server can never
    climb out of ``ROOT`` (``/``, ``..`` and the like are percent-encoded)."""
    name = channel.lower()
    if name == SESSION_CHANNEL:
        return name
    return _SAFE_PARTITION.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), name)


def partition_dir(root: str | os.PathLike[str], channel: str, date: str) -> Path:
    """``ROOT/channel=<name>/date=<YYYY-MM-DD>``."""
    return Path(root) / f"channel={partition_value(channel)}" / f"date={date}"


# ---------------------------------------------------------------------------- rows


def data_channel(name: Any) -> str:
    """The channel a data message is filed under: its own, lowercase, except the session
    channel's name, which only the recorder's own rows may carry."""
    channel = str(name).lower()
    return UNPARSED_CHANNEL if channel == SESSION_CHANNEL else channel


def _ms(value: Any, unit: str = "auto") -> int | None:
    """Unix milliseconds of a timestamp field (``unit`` as the profile's
    ``orders.timestamp_unit``; ``auto``: seconds detected by magnitude); null when absent,
    zero or not a time (a row never shows 1970). ISO-8601 text is read as the instant
    it names."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return iso_to_epoch_ms(value) or None if isinstance(value, str) else None
    if number != number or abs(number) > 1e16 or number == 0:  # NaN or absurd
        return None
    if unit == "s" or (unit == "auto" and abs(number) < 1e11):
        return int(number * 1000)
    return int(number)


def _num(value: Any) -> float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def row_from_message(
    raw: Mapping[str, Any],
    *,
    received_at_ns: int,
    connection_id: str,
    seq: int,
    raw_text: str | None = None,
    profile: ServiceProfile = DEFAULT_PROFILE,
    misses: Misses | None = None,
) -> Row:
    """The row of one data message ``{"channel", "message"}`` with its extracted columns,
    read where ``profile`` says (``payloads`` paths, ``orders.timestamp_unit``).

    Extraction never fails: a missing field or one of an unexpected type becomes null, and
    the whole message is always kept in ``raw`` (new fields of the service stay there).
    ``misses``: count there the ``payloads.*`` settings whose field the message lacks.
    """
    channel = data_channel(raw.get("channel", ""))
    message = raw.get("message")
    text = raw_text if raw_text is not None else _dumps(raw)
    symbol = order_id = status = None
    updated = None
    bid = ask = last = None
    unit = profile.orders.timestamp_unit
    p = profile.payloads
    if channel == "watchorders":
        if isinstance(message, Mapping):
            symbol = _str(message.get("symbol"))
            order_id = order_id_of(message) or None
            status = _str(message.get("status"))
            updated = _ms(message.get("updatedAt"), unit)
    elif channel == "watchticker":
        symbol = _str(get_path(message, p.ticker_symbol))
        bid = _num(get_path(message, p.ticker_bid))
        ask = _num(get_path(message, p.ticker_ask))
        last = _num(get_path(message, p.ticker_last))
        updated = _ms(get_path(message, p.ticker_time), unit)
    elif channel == "watchtickers":
        tickers = get_items(message, p.tickers_list)
        if isinstance(tickers, list):
            stamps = [
                _ms(get_path(t, p.ticker_time), unit) for _, t in tickers if isinstance(t, Mapping)
            ]
            known = [s for s in stamps if s is not None]
            updated = max(known) if known else None
    elif channel == "watchbalance":
        updated = _ms(get_path(message, p.balance_time), unit)
    row = Row(
        received_at_ns,
        connection_id,
        seq,
        channel,
        symbol,
        order_id,
        status,
        updated,
        bid,
        ask,
        last,
        None,
        None,
        None,
        None,
        text,
    )
    if misses is not None and may_miss(row):
        count_payload_misses(channel, message, profile, misses)
    return row


_CHANNEL_PREFIX = re.compile(r'\{\s*"channel"\s*:\s*"([^"\\]*)"')


def row_from_text(
    text: str,
    *,
    received_at_ns: int,
    connection_id: str,
    seq: int,
    profile: ServiceProfile = DEFAULT_PROFILE,
    misses: Misses | None = None,
) -> Row:
    """The row of one data message as the server sent it; ``raw`` is ``text`` itself
    (``misses`` as for ``row_from_message``)."""
    try:
        msg = json.loads(text)
    except ValueError:
        msg = None
    if not isinstance(msg, Mapping):
        sniffed = _CHANNEL_PREFIX.match(text)
        channel = data_channel(sniffed.group(1)) if sniffed else UNPARSED_CHANNEL
        return Row(received_at_ns, connection_id, seq, channel, raw=text)
    return row_from_message(
        msg,
        received_at_ns=received_at_ns,
        connection_id=connection_id,
        seq=seq,
        raw_text=text,
        profile=profile,
        misses=misses,
    )


RawItem = tuple[int, str, int, str]  # received_at_ns, connection_id, seq, text


def rows_from_raw(
    items: Iterable[RawItem],
    profile: ServiceProfile = DEFAULT_PROFILE,
    misses: Misses | None = None,
) -> list[Row]:
    """Rows of raw data messages (the per-row Python path of the conversion); ``misses``
    as for ``row_from_message``."""
    return [
        row_from_text(
            text, received_at_ns=ns, connection_id=conn, seq=seq, profile=profile, misses=misses
        )
        for ns, conn, seq, text in items
    ]


# one encoder for every row: json.dumps with options builds a new one on each call;
# no circular check either, since a parsed JSON message cannot be circular
_encode_json = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, check_circular=False, default=str
).encode


def _dumps(raw: Any) -> str:
    return _encode_json(raw)


def _finite(value: float) -> float | None:
    return None if value != value else value  # NaN (an empty decimal) -> null


def session_row(
    kind: str,
    *,
    received_at_ns: int,
    connection_id: str = "",
    seq: int = 0,
    detail: str = "",
    gap_start_ns: int | None = None,
    gap_end_ns: int | None = None,
) -> Row:
    """A ``channel=_session`` row: connect, disconnect, subscription, gap or drop."""
    return Row(
        received_at_ns,
        connection_id,
        seq,
        SESSION_CHANNEL,
        kind=kind,
        detail=detail,
        gap_start_ns=gap_start_ns,
        gap_end_ns=gap_end_ns,
    )


def row_from_event(event: Any, profile: ServiceProfile = DEFAULT_PROFILE) -> Row:
    """The row of a stream event (``toolkit.stream._events``): session events become session
    rows, every other event the row of its data message (read under ``profile``, the one
    the event was built with)."""
    if isinstance(event, SessionEvent):
        return session_row(
            str(event.kind),
            received_at_ns=event.received_at_ns,
            connection_id=event.connection_id,
            seq=event.seq,
            detail=str(getattr(event, "detail", "") or ""),
            gap_start_ns=getattr(event, "gap_start_ns", None),
            gap_end_ns=getattr(event, "gap_end_ns", None),
        )
    raw = event.raw
    if not isinstance(raw, Mapping):
        raw = {"channel": event.channel, "message": None}
    # the text as sent when the stream kept it (a message decoded lazily)
    text = raw.text if isinstance(raw, LazyMessage) else None
    kind = type(event)
    # the hot path: take what the stream already converted instead of parsing again
    if kind is TickerEvent and event.channel == "watchticker":
        return Row(
            event.received_at_ns,
            event.connection_id,
            event.seq,
            "watchticker",
            event.symbol or None,
            None,
            None,
            event.timestamp or None,  # already Unix milliseconds
            _finite(event.bid),
            _finite(event.ask),
            _finite(event.last),
            None,
            None,
            None,
            None,
            _encode_json(raw) if text is None else text,
        )
    if kind is OrderEvent and event.channel == "watchorders":
        order = event.order
        return Row(
            event.received_at_ns,
            event.connection_id,
            event.seq,
            "watchorders",
            _str(order.get("symbol")),
            event.order_id or None,
            _str(order.get("status")),
            event.updated_at_ms or None,  # already Unix milliseconds
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            _encode_json(raw) if text is None else text,
        )
    return row_from_message(
        raw,
        received_at_ns=event.received_at_ns,
        connection_id=event.connection_id,
        seq=event.seq,
        raw_text=text,
        profile=profile,
    )
