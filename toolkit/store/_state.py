"""The order store's state file (``ROOT/_store.json``): what the syncs so far did, written
whole, last, by each sync; refused when it is not one a sync writes."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from toolkit._atomic import atomic_write_text
from toolkit.errors import InvalidRequest

STATE_VERSION = 1


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


#: the state file's fields: a check of each and what it expects (read_state)
_STATE_FIELDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "syncs": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a count"),
    "listing_newest_ms": (lambda v: v is None or _is_int(v), "Unix ms"),
    "recordings_since_ms": (lambda v: v is None or _is_int(v), "Unix ms"),
    "missing": (
        lambda v: isinstance(v, dict) and all(_is_strings(ids) for ids in v.values()),
        "an object of lists of order ids",
    ),
    "last_sync": (lambda v: v is None or isinstance(v, dict), "an object"),
    "identity": (
        lambda v: (
            isinstance(v, dict)
            and isinstance(v.get("base_url"), str)
            and all(x is None or isinstance(x, str) for x in v.values())
        ),
        "an object of the service's address, API key fingerprint and profile name",
    ),
}


def read_state(path: Path) -> dict[str, Any]:
    """The state file at ``path`` (a first sync's when there is none); InvalidRequest
    naming it and the field when it is not one a sync writes."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": STATE_VERSION}
    except (OSError, ValueError) as exc:
        # written atomically: a bad file is not ours to guess at
        raise InvalidRequest(f"order store state {path} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        raise InvalidRequest(f"order store state {path} has an unknown version")
    for key, (ok, expected) in _STATE_FIELDS.items():
        if key in data and not ok(data[key]):
            raise InvalidRequest(
                f"order store state {path}: {key!r} is {data[key]!r:.60}, not {expected}; "
                "a sync never writes that: restore the file, or delete it (the next sync "
                "then reads the whole listing)"
            )
    return data


def write_state(path: Path, state: Mapping[str, Any]) -> None:
    atomic_write_text(path, json.dumps(state, indent=1, sort_keys=True))
