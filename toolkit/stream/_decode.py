"""Typed events straight from the text of a data message, decoded by msgspec into structs
made for the profile's payload mapping (``payloads`` paths, any nesting), so the usual
messages never become Python dicts on the way: the stream's fast path.

Only what the event holds is decoded; the whole message (``event.raw``) is a
``LazyMessage``, decoded on first use. Anything the typed decoding does not take (another
channel, a field missing or of another type, an empty price, a time that is not an
integer, a text that is not JSON) returns None, and the caller takes the general path
(``event_from_message`` on the decoded dict), which says what is wrong exactly as before.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

import msgspec

from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.stream._events import (
    Event,
    OrderEvent,
    TickerEvent,
    _epoch_ms,
    canonical_status,
    order_id_of,
)

__all__ = ["LazyMessage", "TypedDecoder", "decoder_for"]

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
    """A struct type for ``tree`` and the dotted attribute path of each leaf."""
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
    return msgspec.defstruct(f"{name}{counter[0]}", fields), where


class TypedDecoder:
    """The fast path of one profile: ``decode(text)`` gives the decoded message (or None,
    for the general path) and ``event(decoded, ...)`` its typed event."""

    def __init__(self, profile: ServiceProfile) -> None:
        self.profile = profile
        self.unit = profile.orders.timestamp_unit
        p = profile.payloads
        leaves = [
            ("symbol", p.ticker_symbol),
            ("bid", p.ticker_bid),
            ("ask", p.ticker_ask),
            ("last", p.ticker_last),
            ("time", p.ticker_time),
        ]
        tree = _tree(leaves) if all(path for _, path in leaves) else None
        types: list[type] = []
        self._ticker_fields: Callable[[Any], tuple[Any, ...]] | None = None
        if tree is not None:
            payload, where = _struct("_TickerPayload", tree, [0])
            self._ticker_fields = operator.attrgetter(
                *(f"message.{where[leaf]}" for leaf, _ in leaves)
            )
            for tag in ("watchticker", "watchTicker"):
                types.append(
                    msgspec.defstruct(
                        f"_Ticker_{tag}",
                        [("message", payload)],
                        tag_field="channel",
                        tag=tag,
                    )
                )
        for tag in ("watchorders", "watchOrders"):
            types.append(
                msgspec.defstruct(
                    f"_Order_{tag}",
                    [("message", dict[str, Any])],
                    tag_field="channel",
                    tag=tag,
                )
            )
        self._kinds = {
            t: ("watchticker" if "Ticker" in t.__name__ else "watchorders") for t in types
        }
        union: Any = types[0]
        for t in types[1:]:
            union = union | t
        self._decode = msgspec.json.Decoder(union, strict=False).decode

    def decode(self, text: str) -> Any | None:
        """The decoded message when the fast path takes it, else None."""
        try:
            return self._decode(text)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None

    def event(
        self, decoded: Any, text: str, received_at_ns: int, connection_id: str, seq: int
    ) -> Event | None:
        """The typed event of a message ``decode`` took (None: take the general path).
        Raises ValueError for a time that is not one, as ``event_from_message`` does."""
        kind = self._kinds[decoded.__class__]
        if kind == "watchticker":
            getter = self._ticker_fields
            assert getter is not None
            symbol, bid, ask, last, stamp = getter(decoded)
            if not symbol:
                return None  # the general path names the missing symbol
            return TickerEvent(
                kind,
                received_at_ns,
                connection_id,
                seq,
                LazyMessage(text),  # type: ignore[arg-type]  # a registered Mapping
                symbol,
                bid,
                ask,
                last,
                _epoch_ms(stamp, self.unit),
            )
        order = decoded.message
        status_raw = str(order.get("status", ""))
        return OrderEvent(
            kind,
            received_at_ns,
            connection_id,
            seq,
            LazyMessage(text),  # type: ignore[arg-type]  # a registered Mapping
            order_id_of(order),
            canonical_status(status_raw),
            status_raw,
            _epoch_ms(order.get("updatedAt"), self.unit),
            order,
        )


_decoders: dict[int, TypedDecoder] = {}


def decoder_for(profile: ServiceProfile = DEFAULT_PROFILE) -> TypedDecoder:
    """The (cached) fast decoder of ``profile``."""
    found = _decoders.get(id(profile))
    if found is None or found.profile is not profile:
        if len(_decoders) > 64:
            _decoders.clear()
        found = _decoders[id(profile)] = TypedDecoder(profile)
    return found
