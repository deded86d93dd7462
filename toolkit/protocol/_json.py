"""JSON from the service, bounded: a body nested deeper than :data:`MAX_JSON_DEPTH` is
refused with a ``ValueError`` (never a ``RecursionError`` or a crash further down), and the
shape of an order body (one JSON object) is checked before anything else reads it."""

from __future__ import annotations

import json
from typing import Any

#: deepest nesting of objects/arrays accepted in a body from the service (an order body
#: is about 4 deep; the interpreter's recursion limit would stop near 1,000)
MAX_JSON_DEPTH = 64


class JsonShapeError(ValueError):
    """A body that is not JSON, is nested too deep, or is not the expected shape."""


def json_depth_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` (parsed JSON) nests objects/arrays deeper than ``limit``
    (iterative: no recursion, whatever the depth)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def bytes_may_nest_deeper(data: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """A cheap upper bound: ``False`` when ``data`` cannot nest deeper than ``limit``
    because it holds fewer opening brackets than that (most bodies)."""
    return data.count(b"{") + data.count(b"[") > limit


def loads_bounded(data: bytes | str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that raises :class:`JsonShapeError` for anything that is not JSON or
    nests deeper than ``max_depth`` (instead of ``RecursionError``)."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise JsonShapeError(f"JSON nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        text = "empty body" if not data.strip() else f"not JSON ({exc})"
        raise JsonShapeError(text) from None
    raw = data.encode() if isinstance(data, str) else data
    if bytes_may_nest_deeper(raw, max_depth) and json_depth_exceeds(value, max_depth):
        raise JsonShapeError(f"JSON nested deeper than {max_depth} levels")
    return value


def kind_of(value: Any) -> str:
    """The JSON kind of a parsed value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    return "a number"


def parse_object(data: bytes | str, *, max_depth: int = MAX_JSON_DEPTH) -> dict[str, Any]:
    """One JSON object (an order body), or :class:`JsonShapeError` saying what it was."""
    value = loads_bounded(data, max_depth=max_depth)
    if not isinstance(value, dict):
        raise JsonShapeError(f"expected a JSON object, got {kind_of(value)}")
    return value
