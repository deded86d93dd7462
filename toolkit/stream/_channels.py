"""Sans-I/O rules of the WebSocket channels: names, validation of subscriptions, the keys
the service confirms with, the text of confirmations, and the reconnect backoff schedule.

Nothing here touches a socket; ``toolkit.stream._session`` moves the bytes.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolkit.errors import InvalidRequest, PermissionDenied

Action = Literal["subscribe", "unsubscribe"]

__all__ = [
    "CHANNELS",
    "Backoff",
    "ChannelInfo",
    "Confirmation",
    "PendingRequest",
    "classify_reply",
    "confirmation_text",
    "normalize_channel",
    "parse_channel_spec",
    "subscription_key",
    "subscription_request",
    "validate_subscription",
]


@dataclass(frozen=True, slots=True)
class ChannelInfo:
    """What the service says about one channel (spec 4.1)."""

    name: str  # as the spec writes it, e.g. "watchTicker"
    permission: str
    requires_symbol: bool = False
    #: keys accepted in ``data``
    fields: frozenset[str] = frozenset()


CHANNELS: dict[str, ChannelInfo] = {
    "watchorders": ChannelInfo("watchOrders", "orders:*"),
    "watchticker": ChannelInfo("watchTicker", "market:*", True, frozenset({"symbol"})),
    "watchtickers": ChannelInfo("watchTickers", "market:*", False, frozenset({"onlyPriority"})),
    "watchbalance": ChannelInfo("watchBalance", "wallet:*"),
}

_SYMBOL = re.compile(r"^[A-Z0-9]{1,20}/[A-Z0-9]{1,20}$")


def normalize_channel(channel: str) -> str:
    """The lowercase name of ``channel`` (input is case-insensitive, spec 2.1).

    Raises InvalidRequest for a name that is not one of the four channels.
    """
    if not isinstance(channel, str):
        raise InvalidRequest(f"channel must be a string, got {type(channel).__name__}")
    name = channel.strip().lower()
    if name not in CHANNELS:
        known = ", ".join(info.name for info in CHANNELS.values())
        raise InvalidRequest(f"unknown channel {channel!r}; known channels: {known}")
    return name


def validate_subscription(
    channel: str, data: Mapping[str, Any] | None = None
) -> tuple[str, dict[str, Any]]:
    """Check a subscription before anything is sent; return ``(lowercase channel, data)``.

    The symbol of ``watchTicker`` is required, in ``BASE/QUOTE`` form (letters are
    upper-cased); ``onlyPriority`` of ``watchTickers`` must be a bool; the other channels
    take no data. Raises InvalidRequest otherwise.
    """
    name = normalize_channel(channel)
    info = CHANNELS[name]
    given = dict(data or {})
    unknown = sorted(set(given) - info.fields)
    if unknown:
        allowed = ", ".join(sorted(info.fields)) or "no data"
        raise InvalidRequest(f"{info.name} does not take {', '.join(unknown)} (it takes {allowed})")
    clean: dict[str, Any] = {}
    if info.requires_symbol:
        symbol = given.get("symbol")
        if symbol is None:
            raise InvalidRequest(f"{info.name} requires a symbol, e.g. symbol='BTC/BRL'")
        if not isinstance(symbol, str) or not _SYMBOL.match(symbol.strip().upper()):
            raise InvalidRequest(f"invalid symbol {symbol!r}: expected BASE/QUOTE, e.g. 'BTC/BRL'")
        clean["symbol"] = symbol.strip().upper()
    if "onlyPriority" in given:
        only = given["onlyPriority"]
        if not isinstance(only, bool):
            raise InvalidRequest(f"onlyPriority must be a bool, got {only!r}")
        clean["onlyPriority"] = only
    return name, clean


def subscription_key(channel: str, data: Mapping[str, Any] | None = None) -> str:
    """The ``channel#symbol`` text the service confirms with: lowercase, slash removed
    (``watchticker#btcbrl``); just the channel when there is no symbol."""
    name = channel.strip().lower()
    symbol = (data or {}).get("symbol")
    if symbol:
        return f"{name}#{str(symbol).replace('/', '').lower()}"
    return name


def subscription_request(action: Action, channel: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON message of a subscribe or unsubscribe (spec 2.1)."""
    message: dict[str, Any] = {"action": action, "channel": channel}
    if data:
        message["data"] = dict(data)
    return message


def parse_channel_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Parse the compact form used by recorders and the CLI, and validate it.

    ``"watchTicker:BTC/BRL"`` -> ``("watchticker", {"symbol": "BTC/BRL"})``;
    ``"watchTickers:priority"`` -> ``("watchtickers", {"onlyPriority": True})``;
    ``"watchOrders"``, ``"watchTickers"``, ``"watchBalance"`` take no argument.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidRequest(f"empty channel spec {spec!r}")
    name, sep, arg = spec.strip().partition(":")
    channel = normalize_channel(name)
    data: dict[str, Any] = {}
    if sep:
        if channel == "watchticker":
            data["symbol"] = arg
        elif channel == "watchtickers" and arg.strip().lower() in {"priority", "onlypriority"}:
            data["onlyPriority"] = True
        else:
            raise InvalidRequest(
                f"channel spec {spec!r}: {CHANNELS[channel].name} takes no {arg!r}"
            )
    return validate_subscription(channel, data)


_VERB = {"subscribe": "subscribed to", "unsubscribe": "unsubscribed from"}


def confirmation_text(action: Action, key: str) -> str:
    """The message of a successful confirmation for ``key`` (spec 2.2, PRODUCT.md)."""
    return f"Successfully {_VERB[action]} channel: {key}"


@dataclass(frozen=True, slots=True)
class Confirmation:
    """A reply of the service that is not a data message: a confirmation or a pong."""

    kind: Literal["confirmation", "pong"]
    success: bool
    message: str
    subscriptions: tuple[str, ...] = ()


def classify_reply(message: Mapping[str, Any]) -> Confirmation | None:
    """A Confirmation for a reply (``{"success", "message"}``), None for a data message."""
    if "success" not in message or "channel" in message:
        return None
    text = str(message.get("message", ""))
    success = message.get("success") is True
    if success and text == "pong":
        subs = message.get("subscriptions") or ()
        return Confirmation("pong", True, text, tuple(str(s) for s in subs))
    return Confirmation("confirmation", success, text)


@dataclass(slots=True)
class PendingRequest:
    """The one subscribe/unsubscribe in flight on a connection.

    A confirmation carries no request id, so requests are serialized per connection and a
    success is recognised by its ``channel#symbol`` text; a failure can only be the reply
    to the request in flight.
    """

    action: Action
    channel: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return subscription_key(self.channel, self.data)

    def matches(self, reply: Confirmation) -> bool:
        """True when ``reply`` answers this request (success with our text, or any failure)."""
        if reply.kind != "confirmation":
            return False
        if not reply.success:
            return True
        return reply.message.strip().lower() == confirmation_text(self.action, self.key).lower()

    def error(self, reply: Confirmation) -> Exception:
        """The exception for a failed confirmation of this request."""
        info = CHANNELS[self.channel]
        if "permission denied" in reply.message.lower():
            return PermissionDenied(
                f"{self.action} {info.name} refused: the API key lacks the permission "
                f"{info.permission!r} this channel needs (service said: {reply.message!r})"
            )
        return InvalidRequest(
            f"{self.action} {info.name} ({self.key}) refused by the service: {reply.message!r}"
        )


class Backoff:
    """Capped exponential backoff with jitter for reconnects.

    The n-th delay is ``min(maximum, initial * factor**n)`` scaled by a random factor in
    ``[1 - jitter, 1]`` so a fleet of clients does not reconnect in lockstep.
    """

    def __init__(
        self,
        initial: float = 0.5,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 0.5,
        rng: random.Random | None = None,
    ) -> None:
        if initial < 0 or maximum < 0 or factor < 1 or not 0 <= jitter <= 1:
            raise ValueError(
                "backoff needs initial >= 0, maximum >= 0, factor >= 1, 0 <= jitter <= 1"
            )
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._rng = rng or random.Random()
        self.attempt = 0

    def next_delay(self) -> float:
        base = min(self.maximum, self.initial * self.factor**self.attempt)
        self.attempt += 1
        return base * (1.0 - self.jitter * self._rng.random())

    def reset(self) -> None:
        self.attempt = 0

    def __iter__(self) -> Iterator[float]:
        while True:
            yield self.next_delay()
