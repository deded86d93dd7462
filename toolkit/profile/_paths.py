"""Reading a payload field by a profile's dotted path, and finding an id or a time under
the usual names when a profile does not say: inference where it is safe."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_MISSING: Any = object()


def get_path(payload: Any, path: str, default: Any = None) -> Any:
    """``payload["a"]["b"]`` for ``path`` "a.b"; ``default`` when any step is missing. An
    empty path is the payload itself.

    Parameters
    ----------
    payload : Any
        A decoded JSON value; only mappings are stepped into.
    path : str
        A profile field: names joined by dots.
    default : Any, optional
        What a missing step gives (default: None).

    Returns
    -------
    Any
        The value at ``path`` (None when the payload holds null there), or ``default``.
    """
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
    profile's dotted field is written: the sign-in body, the simulator's payloads).

    Parameters
    ----------
    target : dict of str to Any
        The object to change, in place.
    path : str
        A profile field: names joined by dots.
    value : Any
        The value to put there. An inner step that holds something other than a dict is
        replaced by a new dict.
    """
    *outer, last = path.split(".")
    node = target
    for step in outer:
        inner = node.get(step)
        if not isinstance(inner, dict):
            inner = node[step] = {}
        node = inner
    node[last] = value


def has_path(payload: Any, path: str) -> bool:
    """Whether ``payload`` holds a value (null included) at ``path``.

    Parameters
    ----------
    payload : Any
        A decoded JSON value; only mappings are stepped into.
    path : str
        A profile field: names joined by dots; an empty path is the payload itself.

    Returns
    -------
    bool
    """
    return get_path(payload, path, _MISSING) is not _MISSING


#: usual names of an order id, tried in order when the configured field is absent
ID_CANDIDATES: tuple[str, ...] = ("id", "orderId", "order_id", "orderID", "uuid", "_id")


def find_field(payload: Mapping[str, Any], preferred: str, candidates: Sequence[str]) -> str | None:
    """``preferred`` when the payload has it, else the first of ``candidates`` it has.

    Parameters
    ----------
    payload : mapping of str to Any
        A decoded JSON object (an order, a list item).
    preferred : str
        The profile's field (a dotted path).
    candidates : sequence of str
        Usual names to try in order, each a top-level key (e.g. :data:`ID_CANDIDATES`).

    Returns
    -------
    str or None
        The field found, None when the payload has none of them.
    """
    if has_path(payload, preferred):
        return preferred
    for name in candidates:
        if name in payload:
            return name
    return None
