"""Reading a payload field by a profile's dotted path, and finding an id or a time under
the usual names when a profile does not say: inference where it is safe."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_MISSING: Any = object()


def get_path(payload: Any, path: str, default: Any = None) -> Any:
    """``payload["a"]["b"]`` for ``path`` "a.b"; ``default`` when any step is missing. An
    empty path is the payload itself.

    A step may also index a list: ``errors[0].detail`` (or ``errors.0.detail``) is the
    ``detail`` of the first element of ``errors``, as gateways shape error bodies; a
    mapping's own key is taken first (a key named ``"0"`` stays a key).

    Parameters
    ----------
    payload : Any
        A decoded JSON value; mappings are stepped into by name, lists by index.
    path : str
        A profile field: names joined by dots, each optionally followed by ``[n]``.
    default : Any, optional
        What a missing step gives (default: None).

    Returns
    -------
    Any
        The value at ``path`` (None when the payload holds null there), or ``default``.

    Examples
    --------
    >>> get_path({"errors": [{"detail": "bad id"}]}, "errors[0].detail")
    'bad id'
    """
    if not path:
        return payload
    value = payload
    for step in path.split("."):
        if isinstance(value, Mapping) and step in value:
            value = value[step]
            continue
        if "[" in step:
            name, _, rest = step.partition("[")
            if name:
                if not isinstance(value, Mapping) or name not in value:
                    return default
                value = value[name]
            for index in rest.rstrip("]").split("]["):
                value = _index(value, index)
                if value is _MISSING:
                    return default
            continue
        value = _index(value, step) if isinstance(value, list) else _MISSING
        if value is _MISSING:
            return default
    return value


def _index(value: Any, index: str) -> Any:
    """``value[int(index)]`` for a list and a decimal index in range, else ``_MISSING``."""
    if not isinstance(value, list) or not index.isdigit() or int(index) >= len(value):
        return _MISSING
    return value[int(index)]


def set_path(target: dict[str, Any], path: str, value: Any) -> None:
    """``target["a"]["b"] = value`` for ``path`` "a.b", making the inner objects (how a
    profile's dotted field is written: the sign-in body, the simulator's payloads). A step
    ``name[0]`` makes ``name`` a list whose first element is the next object (the shape
    ``errors[0].detail`` reads).

    Parameters
    ----------
    target : dict of str to Any
        The object to change, in place.
    path : str
        A profile field: names joined by dots, each optionally followed by ``[0]``.
    value : Any
        The value to put there. An inner step that holds something other than a dict is
        replaced by a new dict.
    """
    *outer, last = path.split(".")
    node = target
    for step in outer:
        name, bracket, _ = step.partition("[")
        if bracket:
            items = node.get(name)
            if not isinstance(items, list) or not items or not isinstance(items[0], dict):
                items = node[name] = [{}]
            node = items[0]
            continue
        inner = node.get(step)
        if not isinstance(inner, dict):
            inner = node[step] = {}
        node = inner
    name, bracket, _ = last.partition("[")
    if bracket:
        node[name] = [value]
    else:
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
