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


#: the last step of a list setting (``payloads.tickers_list``, ``payloads.balance_list``)
#: saying the items are the values of an object, each under its symbol or asset; as an
#: item's symbol or asset setting, the key the item was under
EACH = "*"


def keyed_container(path: str) -> str | None:
    """The path of the keyed object when list setting ``path`` ends in ``*`` (``""`` for
    the payload itself), else None (the path names a list).

    Parameters
    ----------
    path : str
        A list setting: ``"tickers"``, ``"wallet.*"``, ``"*"``.

    Returns
    -------
    str or None
    """
    if path == EACH:
        return ""
    if path.endswith("." + EACH):
        return path[: -len(EACH) - 1]
    return None


def get_items(payload: Any, path: str) -> list[tuple[str | None, Any]] | Any:
    """The items a list setting names, each with the key it was under: ``[(None, item),
    ...]`` for a list, ``[(key, value), ...]`` for an object when ``path`` ends in ``*``
    (``wallet.*``: the values of ``payload["wallet"]``, keyed by asset; a list there is
    taken too). Anything else found there is returned as is, for the caller to report.

    Parameters
    ----------
    payload : Any
        A decoded JSON value.
    path : str
        A list setting in the path grammar of :func:`get_path`, optionally ending in
        ``.*`` (or ``*`` alone: the payload itself is the keyed object).

    Returns
    -------
    list of (str or None, Any), or the value found
        The keyed items; or, when what the path names is not a list (nor, for ``*``, an
        object), that value itself (None when the path is missing), for the caller to
        report.

    Examples
    --------
    >>> get_items({"wallet": {"BTC": {"available": "1"}}}, "wallet.*")
    [('BTC', {'available': '1'})]
    >>> get_items({"tickers": [{"symbol": "BTC-BRL"}]}, "tickers")
    [(None, {'symbol': 'BTC-BRL'})]
    """
    container = keyed_container(path)
    value = get_path(payload, path if container is None else container)
    if isinstance(value, list):
        return [(None, item) for item in value]
    if container is not None and isinstance(value, Mapping):
        return [(str(key), item) for key, item in value.items()]
    return value


def item_field(item: Any, key: str | None, path: str, default: Any = None) -> Any:
    """The field ``path`` of one item from :func:`get_items`: ``*`` is the key it was
    under; a keyed item without the field gives its key too (a symbol or an asset is
    what an item is keyed by).

    Parameters
    ----------
    item : Any
        The item.
    key : str or None
        Its key (None: it came from a list).
    path : str
        An item setting (``payloads.ticker_symbol``, ``payloads.balance_asset``).
    default : Any, optional
        What a missing field of a list item gives.

    Returns
    -------
    Any
    """
    if path == EACH:
        return default if key is None else key
    value = get_path(item, path, _MISSING)
    if value is _MISSING:
        return default if key is None else key
    return value


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
