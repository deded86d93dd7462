"""Typed events straight from the text of a data message, decoded by msgspec into structs
made for the profile's payload mapping (``payloads`` paths, any nesting), so the usual
messages never become Python dicts on the way: the stream's fast path.

Only what the event holds is decoded; the whole message (``event.raw``) is a
``LazyMessage``, decoded on first use. The event is built by a function generated for the
profile (its payload paths read straight from the structs, its time unit inlined as
``_epoch_ms`` applies it), so a message costs one Python call. Anything the typed decoding
does not take (another channel, a field missing or of another type, an empty price, a
text that is not JSON), or whose event it does not build (an empty symbol, an order
without an id, a status or an ``updatedAt``), is left to the general path
(``event_from_message`` on the decoded dict), which says what is wrong exactly as before.
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

import msgspec

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.stream._events import (
    _SECONDS_BELOW,
    Event,
    OrderEvent,
    TickerEvent,
    _epoch_ms,
    _order_ms,
    canonical_status,
    order_id_of,
)

__all__ = ["NOT_TAKEN", "LazyMessage", "TypedDecoder", "decoder_for"]

_decode_any = msgspec.json.Decoder().decode


class LazyMessage(msgspec.Struct, eq=False, gc=False):
    """A data message ``{"channel", "message"}`` kept as the text the server sent and
    decoded on first use: an event's ``raw`` when nobody may look at it. It is a read-only
    ``Mapping`` (registered as one; a struct, so that making one per message costs
    little); ``text`` is the text as sent."""

    text: str
    decoded: dict[str, Any] | None = None

    def _decoded(self) -> dict[str, Any]:
        data = self.decoded
        if data is None:
            data = self.decoded = _decode_any(self.text)
        return data

    def __getitem__(self, key: str) -> Any:
        return self._decoded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __contains__(self, key: object) -> bool:
        return key in self._decoded()

    def get(self, key: str, default: Any = None) -> Any:
        return self._decoded().get(key, default)

    def keys(self) -> KeysView[str]:
        return self._decoded().keys()

    def values(self) -> ValuesView[Any]:
        return self._decoded().values()

    def items(self) -> ItemsView[str, Any]:
        return self._decoded().items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyMessage):
            other = other._decoded()
        return self._decoded() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyMessage({self.text!r})"


Mapping.register(LazyMessage)


def _tree(paths: list[tuple[str, str]]) -> dict[str, Any] | None:
    """The nested field tree of (attribute, dotted path) leaves; None on a conflict."""
    tree: dict[str, Any] = {}
    for attr, path in paths:
        *parents, name = path.split(".")
        node = tree
        for step in parents:
            child = node.setdefault(step, {})
            if not isinstance(child, dict):
                return None
            node = child
        if name in node:
            return None  # one JSON field read twice (or as a parent): the general path
        node[name] = attr
    return tree


_TYPES = {"symbol": str, "bid": float, "ask": float, "last": float, "time": int}


def _struct(name: str, tree: dict[str, Any], counter: list[int]) -> tuple[type, dict[str, str]]:
    """A struct type for ``tree`` and the dotted attribute path of each leaf. Only strings
    and numbers in it, so never in a reference cycle: not tracked by the GC (``gc=False``),
    which makes decoding cheaper."""
    fields: list[tuple[str, Any, Any]] = []
    where: dict[str, str] = {}
    for key, child in tree.items():
        counter[0] += 1
        attr = f"f{counter[0]}"
        if isinstance(child, dict):
            sub, inner = _struct(name, child, counter)
            fields.append((attr, sub, msgspec.field(name=key)))
            for leaf, path in inner.items():
                where[leaf] = f"{attr}.{path}"
        else:
            fields.append((attr, _TYPES[child], msgspec.field(name=key)))
            where[child] = attr
    return msgspec.defstruct(f"{name}{counter[0]}", fields, gc=False), where


def _to_ms(name: str, unit: str, convert: str = "_epoch_ms") -> list[str]:
    """Source lines making the time in local ``name`` Unix milliseconds exactly as
    ``_epoch_ms(name, unit)`` does: its integer case inlined for ``unit`` (``s``: times
    1000; ``auto``: times 1000 below ``_SECONDS_BELOW`` in magnitude; ``ms``: as is),
    anything that is not an ``int`` through ``convert`` (``_epoch_ms`` itself, or
    ``_order_ms``, which gives 0 for what is not a time)."""
    lines = [f"if {name}.__class__ is not int:", f"    {name} = {convert}({name}, unit)"]
    if unit == "s":
        lines += ["else:", f"    {name} *= 1000"]
    elif unit == "auto":
        # -B < t < B with B a literal (no negation per call), the usual case (ms) first
        bound = int(_SECONDS_BELOW)
        lines += [f"elif {name} < {bound} and {name} > {-bound}:", f"    {name} *= 1000"]
    return lines


def _ticker_lines(where: dict[str, str], unit: str) -> list[str]:
    """The source building the TickerEvent of the payload struct in local ``m`` (the
    fields read straight from the structs, a parent struct once): None when the symbol
    is empty, for the general path to name it."""
    lines: list[str] = []
    local: dict[str, str] = {}

    def reach(path: str) -> str:
        *parents, leaf = path.split(".")
        owner = "m"
        for i, step in enumerate(parents):
            key = ".".join(parents[: i + 1])
            if key not in local:
                local[key] = f"p{len(local)}"
                lines.append(f"{local[key]} = {owner}.{step}")
            owner = local[key]
        return f"{owner}.{leaf}"

    lines.append(f"symbol = {reach(where['symbol'])}")
    lines += ["if not symbol:", "    return None"]
    prices = ", ".join(reach(where[leaf]) for leaf in ("bid", "ask", "last"))
    lines.append(f"t = {reach(where['time'])}")
    lines += _to_ms("t", unit)
    lines.append(
        'return TickerEvent("watchticker", received_at_ns, connection_id, seq, '
        f"LazyMessage(text), symbol, {prices}, t)"
    )
    return lines


def _order_lines(unit: str) -> list[str]:
    """The source building the OrderEvent of the order dict in local ``m``: what
    ``order_event(strict=True)`` makes of it (order id, canonical status, ``updatedAt``
    in milliseconds), the time unit inlined; None when the id, the status or the time is
    missing, for the general path to name it. ``order`` is the dict decoded for this
    message alone (``raw`` decodes its own), so it is not copied."""
    return [
        's = m.get("status")',
        "if s.__class__ is not str:",  # as _status_raw, without its call
        '    s = "" if s is None else str(s)',
        "status = canonical_status(s)",
        "oid = order_id_of(m)",
        't = m.get("updatedAt")',
        *_to_ms("t", unit, "_order_ms"),
        "if not (oid and status and t):",
        "    return None",
        # an integer id: the event's body carries it in its one form, as order_event's
        'i = m.get("id")',
        "if i is not oid and i is not None:",
        '    m["id"] = oid',
        'return OrderEvent("watchorders", received_at_ns, connection_id, seq, '
        "LazyMessage(text), oid, status, s, t, m)",
    ]


def _compiled(name: str, params: str, body: list[str], names: dict[str, Any]) -> Any:
    """The function ``name(params)`` of the generated lines ``body``, with ``names`` and
    the ones the lines use. No text of the profile is in them, only attribute names
    made here, literals and the names given: nothing from outside is executed."""
    namespace: dict[str, Any] = {
        "TickerEvent": TickerEvent,
        "OrderEvent": OrderEvent,
        "LazyMessage": LazyMessage,
        "_epoch_ms": _epoch_ms,
        "_order_ms": _order_ms,
        "order_id_of": order_id_of,
        "canonical_status": canonical_status,
        **names,
    }
    source = "\n".join([f"def {name}({params}):", *(f"    {line}" for line in body), ""])
    # the source kept where tracebacks and debuggers look for it, once per distinct one
    digest = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()[:12]
    filename = f"<toolkit.stream._decode {name} {digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


#: what ``TypedDecoder.fast`` gives for a message it does not take (the general path's)
NOT_TAKEN: Any = object()
_ERRORS = (msgspec.ValidationError, msgspec.DecodeError)


class TypedDecoder:
    """The fast path of one profile, its event building generated for the profile's
    payload paths and time unit.

    ``fast(text, received_at_ns, connection_id, seq)`` is what the reader of a session
    calls, once per data message: its typed event (decoding and building in one Python
    call); None when the message was decoded but its event is the general path's (an
    empty symbol; an order without an id, a status or a time); ``NOT_TAKEN`` when the
    fast path does not take the message at all (another channel, a field missing or of
    another type, an empty price, a text that is not JSON). Raises ValueError for a
    ticker time that is not one, as ``event_from_message`` does. Its two halves, for
    tests and benchmarks, run the same generated lines: ``decode(text)`` (the decoded
    message, or None when not taken) and ``event(decoded, text, received_at_ns,
    connection_id, seq)`` (its event, or None)."""

    def __init__(self, profile: ServiceProfile) -> None:
        self.profile = profile
        self.unit = unit = profile.orders.timestamp_unit
        p = profile.payloads
        leaves = [
            ("symbol", p.ticker_symbol),
            ("bid", p.ticker_bid),
            ("ask", p.ticker_ask),
            ("last", p.ticker_last),
            ("time", p.ticker_time),
        ]
        tree = _tree(leaves) if all(path for _, path in leaves) else None
        # every struct holds strings, numbers, structs or the order dict alone: in no
        # reference cycle, so none is tracked by the GC (cheaper to make and to drop)
        types: list[type] = []
        names: dict[str, Any] = {"unit": unit}
        # the event of the decoded message in ``decoded``: tickers by the struct type
        body = ["m = decoded.message"]
        if tree is not None:
            payload, where = _struct("_TickerPayload", tree, [0])
            for tag in ("watchticker", "watchTicker"):
                types.append(
                    msgspec.defstruct(
                        f"_Ticker_{tag}",
                        [("message", payload)],
                        tag_field="channel",
                        tag=tag,
                        gc=False,
                    )
                )
            names["Ticker"], names["TickerCamel"] = types
            body += [
                "kind = decoded.__class__",
                "if kind is Ticker or kind is TickerCamel:",
                *(f"    {line}" for line in _ticker_lines(where, unit)),
            ]
        for tag in ("watchorders", "watchOrders"):
            types.append(
                msgspec.defstruct(
                    f"_Order_{tag}",
                    [("message", dict[str, Any])],
                    tag_field="channel",
                    tag=tag,
                    gc=False,
                )
            )
        body += _order_lines(unit)
        union: Any = types[0]
        for t in types[1:]:
            union = union | t
        self._decode = msgspec.json.Decoder(union, strict=False).decode
        names.update(decode=self._decode, errors=_ERRORS, NOT_TAKEN=NOT_TAKEN)
        params = "text, received_at_ns, connection_id, seq"
        self._event = _compiled("event", f"decoded, {params}", body, names)
        decoding = ["try:", "    decoded = decode(text)", "except errors:", "    return NOT_TAKEN"]
        self.fast: Callable[[str, int, str, int], Any] = _compiled(
            "fast", params, decoding + body, names
        )

    def decode(self, text: str) -> Any | None:
        """The decoded message when the fast path takes it, else None."""
        try:
            return self._decode(text)
        except _ERRORS:
            return None

    def event(
        self, decoded: Any, text: str, received_at_ns: int, connection_id: str, seq: int
    ) -> Event | None:
        """The typed event of a message ``decode`` took (None: take the general path).
        Raises ValueError for a time that is not one, as ``event_from_message`` does."""
        event: Event | None = self._event(decoded, text, received_at_ns, connection_id, seq)
        return event


_decoders: dict[int, TypedDecoder] = {}


def decoder_for(profile: ServiceProfile = DEFAULT_PROFILE) -> TypedDecoder:
    """The (cached) fast decoder of ``profile``."""
    found = _decoders.get(id(profile))
    if found is None or found.profile is not profile:
        if len(_decoders) > 64:
            _decoders.clear()
        found = _decoders[id(profile)] = TypedDecoder(profile)
    return found
