"""Reading a payload field by a profile's dotted path, and finding an id or a time under
the usual names when a profile does not say: inference where it is safe."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_MISSING: Any = object()


def get_path(payload: Any, path: str, default: Any = None) -> Any:
    """``payload["a"]["b"]`` for ``path`` "a.b"; ``default`` when any step is missing. An
    empty path is the payload itself."""
    if not path:
        return payload
    value = payload
    for step in path.split("."):
        if not isinstance(value, Mapping) or step not in value:
            return default
        value = value[step]
    return value


def set_path(target: dict[str, Any], path: str, value: Any) -> None:
    """``target["a"]["b"] = value`` for ``path`` "a.b", making the inner objects (how a
    profile's dotted field is written: the sign-in body, the simulator's payloads)."""
    *outer, last = path.split(".")
    node = target
    for step in outer:
        inner = node.get(step)
        if not isinstance(inner, dict):
            inner = node[step] = {}
        node = inner
    node[last] = value


def has_path(payload: Any, path: str) -> bool:
    return get_path(payload, path, _MISSING) is not _MISSING


#: usual names of an order id, tried in order when the configured field is absent
ID_CANDIDATES: tuple[str, ...] = ("id", "orderId", "order_id", "orderID", "uuid", "_id")


def find_field(payload: Mapping[str, Any], preferred: str, candidates: Sequence[str]) -> str | None:
    """``preferred`` when the payload has it, else the first of ``candidates`` it has."""
    if has_path(payload, preferred):
        return preferred
    for name in candidates:
        if name in payload:
            return name
    return None
