"""What a value looks like, and which field of a payload means what: the pure inference the
doctor runs on the raw JSON it observed (no I/O here, so every rule is unit-testable)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from toolkit.client._auth import TTL_AUTO_MS_ABOVE, unit_in_name
from toolkit.profile import ID_CANDIDATES, get_path

STATUSES = frozenset(
    {
        "OPEN",
        "TRIGGERED",
        "PROCESSING",
        "CANCELLING",
        "EXECUTED",
        "CLOSED",
        "EXPIRED",
        "CANCELLED",
        "REJECTED",
        "PENDING",
    }
)
LIMIT_ONLY = frozenset({"OPEN", "TRIGGERED", "PROCESSING", "CANCELLING", "CANCELLED"})
_PAIR = re.compile(r"^[A-Za-z0-9]{2,12}/[A-Za-z0-9]{2,12}$")
_NUMBER = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_TOKENISH = re.compile(r"^[A-Za-z0-9._~+/=:-]{16,}$")
# Unix moments between 2001 and 2286: seconds 1e9..1e10, milliseconds 1e12..1e13
_S_RANGE = (1e9, 1e10)
_MS_RANGE = (1e12, 1e13)
#: a ttl below this is seconds whatever its field's name leaves unsaid
TTL_S_BELOW = 1000


def leaves(payload: Any, prefix: str = "", depth: int = 4) -> dict[str, Any]:
    """Dotted path -> value of every non-object field (lists are leaves), a few levels deep."""
    out: dict[str, Any] = {}
    if not isinstance(payload, Mapping) or depth < 0:
        return out
    for key, value in payload.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(leaves(value, f"{path}.", depth - 1))
        else:
            out[path] = value
    return out


def is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and bool(_NUMBER.match(value.strip()))


def as_float(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def time_unit(value: Any) -> str | None:
    """``s`` or ``ms`` for a plausible Unix moment (number or numeric text), ``iso`` for ISO
    8601 text, else None."""
    if isinstance(value, str) and _ISO.match(value):
        return "iso"
    number = as_float(value)
    if number is None:
        return None
    if _S_RANGE[0] <= number < _S_RANGE[1]:
        return "s"
    if _MS_RANGE[0] <= number < _MS_RANGE[1]:
        return "ms"
    return None


def epoch_s(value: Any) -> float | None:
    unit = time_unit(value)
    if unit == "iso":
        try:
            return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    number = as_float(value)
    if number is None or unit is None:
        return None
    return number / 1000.0 if unit == "ms" else number


def is_pair(value: Any) -> bool:
    return isinstance(value, str) and bool(_PAIR.match(value))


def plain_symbol(symbol: str) -> str:
    return symbol.replace("/", "").lower()


# ------------------------------------------------------------------ sign-in answer


def find_token(payload: Any, preferred: str) -> str | None:
    """The path of the operational token in a sign-in answer: ``preferred`` when it holds
    a token-like string, else the token-like string whose name says token/access/jwt."""
    found = leaves(payload)
    if _tokenish(found.get(preferred)):
        return preferred
    scored = sorted(
        (
            (-_token_score(path), path)
            for path, value in found.items()
            if _tokenish(value) and not _NUMBER.match(str(value)) and not _ISO.match(str(value))
        )
    )
    return scored[0][1] if scored else None


def _tokenish(value: Any) -> bool:
    return isinstance(value, str) and bool(_TOKENISH.match(value))


def _token_score(path: str) -> int:
    name = path.rsplit(".", 1)[-1].lower()
    if "refresh" in name:
        return 0
    return 3 if "token" in name else 2 if ("access" in name or "jwt" in name) else 1


_EXPIRY_NAME = re.compile(r"exp|ttl|valid|lifetime|until", re.IGNORECASE)


def find_expiry(payload: Any, preferred: str) -> str | None:
    """The path of the token's expiry: ``preferred`` when it holds a number or an ISO date,
    else a number/ISO field named like expires*, ttl, validUntil."""
    found = leaves(payload)
    if preferred in found and (is_number(found[preferred]) or time_unit(found[preferred])):
        return preferred
    for path, value in found.items():
        name = path.rsplit(".", 1)[-1]
        if _EXPIRY_NAME.search(name) and (is_number(value) or time_unit(value) == "iso"):
            return path
    return None


def expiry_shape(value: Any, now: float | None = None, field: str = "") -> tuple[str, str | None]:
    """(kind, unit) of an expiry value: ``absolute`` when it is a moment near now (in
    seconds, milliseconds or ISO text), else ``ttl``.

    A ttl's unit is the one the name of ``field`` says (``ttlMs``, ``expires_in_s``...);
    else it is told by magnitude only where that is safe: below 1000 it is seconds (under
    a second in milliseconds is no token lifetime), above 30 days in seconds it is
    milliseconds (as the client's ``auto`` reads it). In between (``3600``: an hour in
    seconds, or 3.6 s in milliseconds) the unit is None: not observed."""
    now = time.time() if now is None else now
    moment = epoch_s(value)
    if moment is not None and abs(moment - now) < 20 * 365 * 86400:
        unit = time_unit(value)
        return "absolute", "auto" if unit == "iso" else str(unit)
    named = unit_in_name(field)
    if named is not None:
        return "ttl", named
    number = as_float(value) or 0.0
    if number > TTL_AUTO_MS_ABOVE:
        return "ttl", "ms"
    if number < TTL_S_BELOW:
        return "ttl", "s"
    return "ttl", None


# ------------------------------------------------------------------ list items


def _values(items: Sequence[Mapping[str, Any]], path: str) -> list[Any]:
    out = []
    for item in items:
        value = leaves(item).get(path)
        if value is not None and value != "":
            out.append(value)
    return out


def _all(values: list[Any], test: Any) -> bool:
    return bool(values) and all(test(v) for v in values)


def _lower_in(allowed: Iterable[str]) -> Any:
    names = {a.lower() for a in allowed}
    return lambda v: isinstance(v, str) and v.lower() in names


_TIME_HINTS = {
    "created_at_field": ("creat", "placed", "opened"),
    "updated_at_field": ("updat", "modif", "chang", "last"),
    "expires_at_field": ("expir", "deadline", "valid", "until", "ttl"),
}


def map_list_items(
    items: Sequence[Mapping[str, Any]], assumed: Mapping[str, str], now: float | None = None
) -> dict[str, str | None]:
    """Listing setting name (``id_field``...) -> the item path that holds that meaning, by
    value shape; an assumed name is kept whenever its values have the right shape."""
    now = time.time() if now is None else now
    paths: list[str] = []
    for item in items:
        for path in leaves(item):
            if path not in paths:
                paths.append(path)
    shapes = {
        "symbol_field": is_pair,
        "side_field": _lower_in({"buy", "sell"}),
        "type_field": _lower_in({"limit", "market"}),
        "status_field": _lower_in(STATUSES),
        "limit_price_field": lambda v: is_number(v) and time_unit(v) is None,
    }
    out: dict[str, str | None] = {}
    taken: set[str] = set()
    for name, test in shapes.items():
        # a price is looked for under a name that says so first: an integer id (spec
        # 2.5 shows no types) is a number too
        hinted = [p for p in paths if name != "limit_price_field" or _priceish(p)]
        ordered = hinted + [p for p in paths if p not in hinted]
        out[name] = _pick(items, ordered, assumed.get(name, ""), test, taken)
    stamps = [p for p in paths if p not in taken and _all(_values(items, p), time_unit)]
    out.update(_map_times(items, stamps, assumed, now))
    taken.update(v for v in out.values() if v)
    out["id_field"] = _pick_id(items, [p for p in paths if p not in taken], assumed["id_field"])
    return out


def _priceish(path: str) -> bool:
    name = path.lower()
    return any(h in name for h in ("price", "px", "limit", "rate", "level", "target"))


def _pick(
    items: Sequence[Mapping[str, Any]], paths: list[str], assumed: str, test: Any, taken: set[str]
) -> str | None:
    order = ([assumed] if assumed in paths else []) + [p for p in paths if p != assumed]
    for path in order:
        if path not in taken and _all(_values(items, path), test):
            taken.add(path)
            return path
    return None


def _map_times(
    items: Sequence[Mapping[str, Any]], stamps: list[str], assumed: Mapping[str, str], now: float
) -> dict[str, str | None]:
    out: dict[str, str | None] = dict.fromkeys(_TIME_HINTS)
    left = list(stamps)
    for name in _TIME_HINTS:  # the assumed names first
        if assumed.get(name) in left:
            out[name] = assumed[name]
            left.remove(assumed[name])
    for name, hints in _TIME_HINTS.items():  # then names that say what they are
        if out[name] is None:
            hit = next((p for p in left if any(h in p.lower() for h in hints)), None)
            if hit is not None:
                out[name] = hit
                left.remove(hit)
    if left and out["created_at_field"] is None:  # the earliest moment of each item
        votes = {p: 0 for p in left}
        for item in items:
            flat = leaves(item)
            moments = {p: epoch_s(flat.get(p)) for p in left}
            known = {p: m for p, m in moments.items() if m is not None}
            if known:
                votes[min(known, key=lambda p: known[p])] += 1
        best = max(votes, key=lambda p: votes[p])
        out["created_at_field"] = best
        left.remove(best)
    if left and out["expires_at_field"] is None:  # a deadline can lie in the future
        future = [p for p in left if any((epoch_s(v) or 0) > now for v in _values(items, p))]
        if len(future) == 1:
            out["expires_at_field"] = future[0]
            left.remove(future[0])
    if len(left) == 1 and out["updated_at_field"] is None:
        out["updated_at_field"] = left[0]
    return out


def _pick_id(items: Sequence[Mapping[str, Any]], paths: list[str], assumed: str) -> str | None:
    def distinct_text(path: str) -> bool:
        values = _values(items, path)
        return (
            len(values) == len(items)
            and all(isinstance(v, str | int) and not isinstance(v, bool) for v in values)
            and len(set(map(str, values))) == len(values)
        )

    order = [assumed, *ID_CANDIDATES] + [p for p in paths if "id" in p.lower()] + paths
    for path in order:
        if path in paths and distinct_text(path):
            return path
    return None


# ------------------------------------------------------------------ order bodies


def order_time_units(order: Mapping[str, Any]) -> set[str]:
    """Units (``s``/``ms``) of the Unix moments of an order body, nested lists included."""
    units: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            unit = time_unit(value)
            if unit in ("s", "ms"):
                units.add(unit)

    walk(order)
    return units


def status_case(statuses: Iterable[tuple[str, str]]) -> str | None:
    """``mixed``/``upper``/``lower`` from (status as sent, order type) pairs, or None.

    Market statuses are lowercase in every case (spec 3.1), so only limit orders tell the
    cases apart: a limit ``closed`` is lowercase except in ``upper``; the other limit
    statuses are uppercase except in ``lower``."""
    upper = lower = closed_lower = limit_upper = False
    for raw, kind in statuses:
        canonical = raw.upper()
        if canonical not in STATUSES or raw.isupper() == raw.islower():
            continue
        if not (kind == "limit" or canonical in LIMIT_ONLY):
            continue  # a market status: lowercase whatever the case of limit ones
        if canonical == "CLOSED":
            upper |= raw.isupper()
            closed_lower |= raw.islower()
        else:
            lower |= raw.islower()
            limit_upper |= raw.isupper()
    if lower:
        return "lower"
    if upper:
        return "upper"
    if closed_lower and limit_upper:
        return "mixed"
    return None


def map_quotes(elements: Sequence[Mapping[str, Any]]) -> dict[str, str | None]:
    """``evaluatedTickers`` element fields by meaning: venue (text on every element), price
    (decimal text or number), time (a Unix moment), reason (text on some elements only)."""
    out: dict[str, str | None] = dict.fromkeys(("venue", "price", "time", "reason"))
    paths: list[str] = []
    for e in elements:
        for p in leaves(e):
            if p not in paths:
                paths.append(p)
    for p in paths:
        values = _values(elements, p)
        if not values:
            continue
        if out["time"] is None and _all(values, time_unit):
            out["time"] = p
        elif out["price"] is None and _all(values, is_number):
            out["price"] = p
        elif _all(values, lambda v: isinstance(v, str)):
            everywhere = len(values) == len(elements)
            if everywhere and out["venue"] is None and not _reasonish(p):
                out["venue"] = p
            elif out["reason"] is None and (not everywhere or _reasonish(p)):
                out["reason"] = p
    return out


def _reasonish(path: str) -> bool:
    name = path.lower()
    return any(h in name for h in ("reason", "why", "cause", "contingenc", "error", "note"))


# ------------------------------------------------------------------ stream payloads


def template(text: str, channel: str, symbol: str = "") -> str:
    """A confirmation text with its channel and symbol turned into placeholders."""
    out = text.replace(channel, "{channel}")
    return out.replace(symbol, "{symbol}") if symbol else out


def find_list(payload: Any) -> str | None:
    """The path of the first list of objects in a payload (``""``: the payload itself)."""
    if isinstance(payload, list):
        return ""
    for path, value in leaves(payload).items():
        if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            return path
    return None


_ASSET = re.compile(r"^[A-Z0-9]{2,12}$")


def is_key_of_item(key: Any) -> bool:
    """Whether an object's key looks like what keyed items are keyed by: a pair
    (``BTC/BRL``) or an asset (``BTC``)."""
    return isinstance(key, str) and (is_pair(key) or bool(_ASSET.match(key)))


def find_keyed(payload: Any, depth: int = 3) -> str | None:
    """The list setting of an object keyed by symbol or asset (every key a pair or an
    asset, every value an object): ``wallet.*``, or ``*`` for the payload itself; None
    when there is none (nearest first)."""
    level: list[tuple[str, Any]] = [("", payload)]
    for _ in range(depth):
        deeper: list[tuple[str, Any]] = []
        for path, node in level:
            if not isinstance(node, Mapping) or not node:
                continue
            if all(is_key_of_item(k) and isinstance(v, Mapping) for k, v in node.items()):
                return f"{path}.*" if path else "*"
            deeper += [(f"{path}.{k}" if path else str(k), v) for k, v in node.items()]
        level = deeper
    return None


def find_items(payload: Any) -> str | None:
    """The list setting of a payload's items: a list of objects (:func:`find_list`),
    else an object keyed by symbol or asset (:func:`find_keyed`)."""
    found = find_list(payload)
    return found if found is not None else find_keyed(payload)


def keyed_items(payload: Any, path: str | None) -> list[tuple[str | None, Mapping[str, Any]]]:
    """The items a list setting names with the key each was under (None for a list)."""
    if path is None:
        return []
    if path == "*" or path.endswith(".*"):
        container = path[:-2] if path.endswith(".*") else ""
        node = payload if not container else get_path(payload, container)
        if isinstance(node, Mapping):
            return [(str(k), v) for k, v in node.items() if isinstance(v, Mapping)]
        return []
    return [(None, v) for v in list_at(payload, path)]


def key_field(items: Sequence[tuple[str | None, Mapping[str, Any]]], found: str | None) -> str:
    """The item setting of a symbol or an asset for keyed ``items``: ``found`` (a field of
    the item) when every keyed item holds its key there, else ``*`` (the key)."""
    keyed = [(k, i) for k, i in items if k is not None]
    if not keyed:
        return found or ""
    if found and all(leaves(i).get(found) == k for k, i in keyed):
        return found
    return "*"


def list_at(payload: Any, path: str | None) -> list[Mapping[str, Any]]:
    if path is None:
        return []
    if path == "*" or path.endswith(".*"):
        return [item for _, item in keyed_items(payload, path)]
    value = payload if path == "" else leaves(payload).get(path)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


_PRICE_HINTS = {"bid": ("bid", "buy"), "ask": ("ask", "sell", "offer"), "last": ("last", "price")}


def map_ticker(payload: Any) -> dict[str, str | None]:
    """Ticker fields by meaning: symbol (a pair), bid/ask/last (by name, else by order:
    bid lowest, ask highest), time (a Unix moment)."""
    flat = leaves(payload)
    out: dict[str, str | None] = {
        "symbol": next((p for p, v in flat.items() if is_pair(v)), None),
        "time": next((p for p, v in flat.items() if time_unit(v) in ("s", "ms", "iso")), None),
    }
    prices = [p for p, v in flat.items() if is_number(v) and time_unit(v) is None]
    left = list(prices)
    for meaning, hints in _PRICE_HINTS.items():
        hit = next((p for p in left if any(h in p.rsplit(".", 1)[-1].lower() for h in hints)), None)
        out[meaning] = hit
        if hit is not None:
            left.remove(hit)
    if len(prices) == 3 and None in (out["bid"], out["ask"], out["last"]):
        ranked = sorted(prices, key=lambda p: as_float(flat[p]) or 0.0)
        out.update(bid=ranked[0], last=ranked[1], ask=ranked[2])
    return out


_BALANCE_HINTS = {
    "free": ("free", "avail"),
    "locked": ("lock", "hold", "reserv", "frozen", "used"),
    "total": ("total", "balance", "all"),
}


def map_balance(payload: Any) -> dict[str, str | None]:
    """Balance fields by meaning: the list of assets, in each the asset (text) and
    free/locked/total (by name, else total = free + locked), and the time."""
    lst = find_items(payload)
    keyed = keyed_items(payload, lst)
    items = [item for _, item in keyed]
    out: dict[str, str | None] = {"list": lst, "time": None}
    top = leaves(payload)
    out["time"] = next((p for p, v in top.items() if time_unit(v) in ("s", "ms", "iso")), None)
    if not items:
        return out | dict.fromkeys(("asset", "free", "locked", "total"))
    flat = leaves(items[0])
    out["asset"] = next(
        (p for p, v in flat.items() if isinstance(v, str) and not is_number(v)), None
    )
    if keyed[0][0] is not None:  # keyed by asset: a field holding the key, else the key
        out["asset"] = key_field(keyed, out["asset"])
    numbers = [p for p, v in flat.items() if is_number(v) and time_unit(v) is None]
    left = list(numbers)
    for meaning, hints in _BALANCE_HINTS.items():
        hit = next((p for p in left if any(h in p.rsplit(".", 1)[-1].lower() for h in hints)), None)
        out[meaning] = hit
        if hit is not None:
            left.remove(hit)
    if len(numbers) == 3 and None in (out["free"], out["locked"], out["total"]):
        for total in numbers:
            a, b = (p for p in numbers if p != total)
            if all(_sums(leaves(i), total, a, b) for i in items):
                out.update(total=total, free=a, locked=b)
                break
    if out["time"] is None:
        out["time"] = next((p for p, v in flat.items() if time_unit(v) in ("s", "ms")), None)
    return out


def _sums(flat: Mapping[str, Any], total: str, a: str, b: str) -> bool:
    t, x, y = as_float(flat.get(total)), as_float(flat.get(a)), as_float(flat.get(b))
    if t is None or x is None or y is None:
        return False
    return abs(x + y - t) <= 1e-9 * max(1.0, abs(t))
