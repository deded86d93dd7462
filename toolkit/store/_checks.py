"""What the store refuses: sync arguments, folders that are not recordings and a client of
another service or account (before anything is sent or written), and fetchOrder bodies it
could not read back (before their row is written)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.client._items import ListItems
from toolkit.errors import InvalidRequest, InvalidResponse
from toolkit.protocol import JsonShapeError, canonical_status, parse_object, validate_order_id

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client import Client
    from toolkit.profile import ServiceProfile

#: the moments an order body may carry, in Unix ms (2000-01-01 to 9999-12-31, UTC): a
#: value outside was read in the wrong unit (orders.timestamp_unit) or is not a time
EARLIEST_MS = 946_684_800_000
LATEST_MS = 253_402_300_799_999
_MS_PER_YEAR = 31_556_952_000

#: what a store's identity compares (``_store.json`` ``identity``): the account of a
#: service; the profile (how its answers are read) may change, with a warning
IDENTITY_KEYS = ("base_url", "api_key")


# -- the service and account a store belongs to ---------------------------------------------


def store_identity(client: Client, profile: ServiceProfile) -> dict[str, str | None]:
    """Who a sync reads: the service's base URL, a fingerprint of the API key (never the
    key's secret; the key itself only as its last four characters) and the profile name."""
    from toolkit.client._identity import key_fingerprint
    from toolkit.client._settings import mask_key

    settings = client.settings
    key = settings.api_key
    hint = mask_key(key)
    return {
        "base_url": settings.base_url,
        # the fingerprint recordings name their account by (an account of the store's
        # takes its recorded bodies: toolkit.store._recorded)
        "api_key": key_fingerprint(key),
        # "…" alone (a short key) says nothing
        "api_key_hint": hint if hint and hint != "…" else None,
        "profile": profile.name,
    }


def check_identity(root: Path, saved: Mapping[str, Any] | None, current: Mapping[str, Any]) -> None:
    """InvalidRequest naming both when the store at ``root`` was synced from another
    service or account (API key) than ``current``; nothing saved: any."""
    if saved is None or all(saved.get(k) == current.get(k) for k in IDENTITY_KEYS):
        return
    raise InvalidRequest(
        f"order store {root} holds the orders of {describe_identity(saved)}; this client reads "
        f"{describe_identity(current)}. A store holds one account of one service: nothing was "
        "sent; use another store folder (--store) for this one"
    )


def describe_identity(identity: Mapping[str, Any]) -> str:
    """``identity`` in words, for messages."""
    key = identity.get("api_key")
    hint = identity.get("api_key_hint")
    shown = "no API key" if not key else f"API key {hint + ' ' if hint else ''}({key})"
    return f"{identity.get('base_url')} ({shown}, profile {identity.get('profile')!r})"


# -- arguments of a sync -------------------------------------------------------------------


def check_recording(path: str | os.PathLike[str]) -> Path:
    """``path`` as a recording root (a folder ``toolkit record`` or ``tk.Recorder`` wrote:
    ``channel=*/`` folders, or the ``_wal/`` of a recorder that has not written one yet),
    or InvalidRequest (an empty path too)."""
    from toolkit.recording._read import recording_root

    return recording_root(path)


def check_recordings(recordings: object) -> list[Path]:
    """``recordings=`` as recording roots (a list of folders; one path alone is refused,
    not read as its characters)."""
    if isinstance(recordings, str | bytes | os.PathLike):
        raise InvalidRequest(
            f"recordings= takes a list of recording folders, not one path: "
            f"recordings=[{recordings!r}]"
        )
    if not isinstance(recordings, Iterable):
        raise InvalidRequest(
            f"recordings= takes a list of recording folders, not {type(recordings).__name__}"
        )
    roots: list[Path] = []
    for item in recordings:
        if not isinstance(item, str | os.PathLike):
            raise InvalidRequest(
                f"recordings= holds {type(item).__name__}, not a folder path: {item!r:.60}"
            )
        roots.append(check_recording(item))
    return roots


def check_ids(ids: object) -> list[str]:
    """``ids=`` as validated order ids, de-duplicated in their first-seen order; a bad one
    is named by its position."""
    if isinstance(ids, str | bytes):
        raise InvalidRequest("ids= takes a list of order ids, not a single string: ids=[...]")
    if not isinstance(ids, Iterable):
        raise InvalidRequest(f"ids= takes a list of order ids, not {type(ids).__name__}")
    out: dict[str, None] = {}
    for i, oid in enumerate(ids):
        try:
            out[validate_order_id(oid)] = None
        except InvalidRequest as exc:
            raise InvalidRequest(f"ids[{i}]: {exc}") from None
    return list(out)


def check_flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidRequest(f"{name} must be True or False, not {value!r}")
    return value


# -- fetchOrder bodies ---------------------------------------------------------------------


def read_body(oid: str, body: bytes) -> tuple[str, dict[str, Any]]:
    """The fetchOrder body of order ``oid`` as the text to store and the object it is.
    Decoded by its own encoding (UTF-8 with or without a BOM, UTF-16, UTF-32: what JSON
    allows), so the stored text, UTF-8 in the store, is exactly what was read; refused
    (InvalidResponse) when it is not text, not one JSON object, or holds a lone
    surrogate (``\\ud800``), which no Parquet reader can read back."""
    try:
        text = body.decode(json.detect_encoding(body))
    except UnicodeDecodeError as exc:
        raise InvalidResponse(
            f"fetchOrder for order {oid!r} answered a body that is not UTF-8, UTF-16 or "
            f"UTF-32 text (byte {exc.start}); nothing was written for it"
        ) from None
    try:
        order = parse_object(text)
    except JsonShapeError as exc:
        raise InvalidResponse(
            f"fetchOrder for order {oid!r} answered a body that is not one JSON object "
            f"({exc}); nothing was written for it"
        ) from None
    if "\\ud" in text or "\\uD" in text:
        try:
            json.dumps(order, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidResponse(
                f"fetchOrder for order {oid!r} answered a body with a lone UTF-16 surrogate "
                "escape (such as \\ud800), which is no text; nothing was written for it"
            ) from None
    return text, order


def text_field(oid: str, order: Mapping[str, Any], name: str, *, required: bool) -> str | None:
    """The string field ``name`` of the body (None when absent or empty and not
    ``required``); InvalidResponse naming the order and the field otherwise."""
    value = order.get(name)
    if isinstance(value, str) and value.strip():
        return value
    if not required and (value is None or value == ""):
        return None
    what = "missing" if value is None and name not in order else f"{value!r:.40}"
    raise InvalidResponse(
        f"fetchOrder for order {oid!r}: {name!r} is {what}, not a "
        f"{'non-empty ' if required else ''}string (spec 2.4: a base field of every "
        "order); nothing was written for it"
    )


def status_field(oid: str, order: Mapping[str, Any]) -> str:
    value = text_field(oid, order, "status", required=True)
    assert value is not None
    return canonical_status(value)


def moment(
    oid: str, order: Mapping[str, Any], reader: ListItems, name: str, *, required: bool
) -> int | None:
    """``createdAt`` or ``updatedAt`` of the body as Unix ms, read per
    ``orders.timestamp_unit`` (``reader``); InvalidResponse naming the order, the field
    and that setting when it is missing (``required``), no time, or out of range."""
    value = order.get(name)
    if value is None or value == "":
        if not required:
            return None
        raise InvalidResponse(
            f"fetchOrder for order {oid!r} has no {name!r} (spec 2.4: a base field of every "
            "order), needed for the store's month partition; nothing was written for it"
        )
    unit = reader.timestamp_unit
    setting = (
        f"check orders.timestamp_unit in the profile (now {unit!r}; the service writes Unix "
        "seconds or milliseconds)"
    )
    try:
        # the reader's fields are spec 2.4's (createdAt, updatedAt): see _Writer
        if name == "createdAt":
            ms: int | None = reader.created_ms(order, "the store")
        else:
            ms = reader.updated_ms(order)
    except (InvalidResponse, ValueError, OverflowError):
        ms = None
    if ms is None:
        raise InvalidResponse(
            f"fetchOrder for order {oid!r}: {name} {value!r:.40} is neither a Unix timestamp "
            f"nor an ISO 8601 time; {setting}"
        )
    if not EARLIEST_MS <= ms <= LATEST_MS:
        year = 1970 + ms // _MS_PER_YEAR
        when = f"the year {year}" if abs(year) < 10**7 else "no year of any calendar"
        raise InvalidResponse(
            f"fetchOrder for order {oid!r}: {name} {value!r:.40} reads as {when}, not when "
            f"an order was made or changed; {setting}"
        )
    return ms
