"""Sans-I/O rules of the WebSocket channels: names, validation of subscriptions, the keys
the service confirms with, the text of confirmations, and the reconnect backoff schedule.

Nothing here touches a socket; ``toolkit.stream._session`` moves the bytes.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolkit.errors import InvalidRequest, PermissionDenied
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile, get_path

Action = Literal["subscribe", "unsubscribe"]

__all__ = [
    "CHANNELS",
    "Backoff",
    "ChannelInfo",
    "Confirmation",
    "PendingRequest",
    "classify_reply",
    "confirmation_text",
    "expected_confirmation",
    "inferred_confirmation",
    "keepalive_request",
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


def subscription_request(
    action: Action,
    channel: str,
    data: Mapping[str, Any],
    profile: ServiceProfile = DEFAULT_PROFILE,
) -> dict[str, Any]:
    """The JSON message of a subscribe or unsubscribe (spec 2.1); ``onlyPriority`` is sent
    as the profile's ``stream.only_priority_type`` (bool, 0/1 or "true"/"false")."""
    message: dict[str, Any] = {"action": action, "channel": channel}
    if data:
        out = dict(data)
        if isinstance(out.get("onlyPriority"), bool):
            only = out["onlyPriority"]
            kind = profile.stream.only_priority_type
            out["onlyPriority"] = (
                int(only) if kind == "int" else str(only).lower() if kind == "str" else only
            )
        message["data"] = out
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
    """The message of a successful confirmation for ``key`` under the default profile
    (spec 2.2, PRODUCT.md); ``expected_confirmation`` gives it for any profile."""
    return f"Successfully {_VERB[action]} channel: {key}"


def _symbol_token(data: Mapping[str, Any] | None) -> str:
    symbol = (data or {}).get("symbol")
    return str(symbol).replace("/", "").lower() if symbol else ""


def expected_confirmation(
    action: Action,
    channel: str,
    data: Mapping[str, Any] | None = None,
    profile: ServiceProfile = DEFAULT_PROFILE,
) -> str:
    """The success text ``profile`` announces for ``action`` on ``channel`` (lowercase
    channel, symbol lowercase without its slash)."""
    s = profile.stream
    name = channel.strip().lower()
    symbol = _symbol_token(data)
    if action == "subscribe":
        template = s.subscribed_text if symbol else s.subscribed_text_no_symbol
    else:
        template = s.unsubscribed_text if symbol else s.unsubscribed_text_no_symbol
    return template.format(channel=name, symbol=symbol)


def _names(text: str, word: str) -> bool:
    """``word`` appears in ``text`` as a whole token (``watchticker`` is not in
    ``watchtickers``)."""
    return re.search(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])", text) is not None


def inferred_confirmation(
    action: Action, channel: str, data: Mapping[str, Any] | None, text: str
) -> bool:
    """The safe inference for a success text that is not the profile's: it names the
    channel (and the symbol, when there is one) in lowercase, and its verb is not the
    opposite action's (a subscribe is never confirmed by an ``unsubscribed`` text, nor an
    unsubscribe by a bare ``subscribed`` one)."""
    name = channel.strip().lower()
    if not _names(text, name):
        return False
    symbol = _symbol_token(data)
    pair = str((data or {}).get("symbol", "")).lower()
    if symbol and not (_names(text, symbol) or _names(text, pair)):
        return False
    undoes = "unsub" in text.lower()
    if action == "subscribe":
        return not undoes
    return undoes or "subscri" not in text.lower()


ReplyKind = Literal["confirmation", "keepalive"]


@dataclass(frozen=True, slots=True)
class Confirmation:
    """A reply of the service that is not a data message: the confirmation of a
    subscribe/unsubscribe (``success`` + ``message``), or a keep-alive reply (recognised by
    the profile's ``keepalive_reply_field`` == ``keepalive_reply_value``)."""

    kind: ReplyKind
    success: bool
    message: str
    subscriptions: tuple[str, ...] = ()


def classify_reply(
    message: Mapping[str, Any], profile: ServiceProfile = DEFAULT_PROFILE
) -> Confirmation | None:
    """A Confirmation for a reply, None for a data message (or anything else).

    A keep-alive reply is recognised first, by the profile's field and value (``message``
    == ``pong`` by default; a dotted field reaches a nested one), whatever else it
    carries; a confirmation is an object with ``success`` and no top-level ``channel``."""
    s = profile.stream
    if s.keepalive_reply_field:
        value = get_path(message, s.keepalive_reply_field, None)
        if isinstance(value, str | int | bool) and str(value) == s.keepalive_reply_value:
            subs = message.get("subscriptions")
            listed = tuple(str(x) for x in subs) if isinstance(subs, list | tuple) else ()
            success = message.get("success") is not False
            text = message.get("message")
            return Confirmation("keepalive", success, str(value if text is None else text), listed)
    if "success" not in message or "channel" in message:
        return None
    text = message.get("message", "")
    return Confirmation("confirmation", message.get("success") is True, str(text))


def keepalive_request(profile: ServiceProfile = DEFAULT_PROFILE) -> dict[str, Any] | None:
    """The keep-alive action of ``profile`` as sent, or None when the service has none."""
    action = profile.stream.keepalive_action
    return {"action": action} if action else None


RequestKind = Literal["subscribe", "unsubscribe", "keepalive"]


@dataclass(slots=True)
class PendingRequest:
    """The one action in flight on a connection: a subscribe, an unsubscribe or a
    keep-alive.

    Replies carry no request id, so actions are serialised per connection and a reply
    answers the one outstanding action only: a success confirmation answers a subscribe
    or unsubscribe when its text is the profile's for that channel (any case), or names
    the channel and symbol (``inferred_confirmation``); a keep-alive reply answers only a
    keep-alive; a failure (``success: false``) answers whatever is outstanding.
    """

    action: RequestKind
    channel: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    profile: ServiceProfile = field(default=DEFAULT_PROFILE, repr=False)

    @property
    def key(self) -> str:
        if self.action == "keepalive":
            return "keepalive"
        return subscription_key(self.channel, self.data)

    def message(self) -> dict[str, Any]:
        """The JSON object sent for this action."""
        if self.action == "keepalive":
            msg = keepalive_request(self.profile)
            if msg is None:
                raise ValueError("this profile has no keep-alive action (stream.keepalive_action)")
            return msg
        return subscription_request(self.action, self.channel, self.data, self.profile)

    def matches(self, reply: Confirmation) -> bool:
        """True when ``reply`` answers this request (see the class docstring)."""
        if self.action == "keepalive":
            return reply.kind == "keepalive" or not reply.success
        if reply.kind != "confirmation":
            return False
        if not reply.success:
            return True
        text = reply.message.strip()
        expected = expected_confirmation(self.action, self.channel, self.data, self.profile)
        if text.lower() == expected.strip().lower():
            return True
        return inferred_confirmation(self.action, self.channel, self.data, text)

    def error(self, reply: Confirmation) -> Exception:
        """The exception for a failed confirmation of this request."""
        info = CHANNELS.get(self.channel)
        name = info.name if info else self.action
        if info is not None and "permission denied" in reply.message.lower():
            return PermissionDenied(
                f"{self.action} {info.name} refused: the API key lacks the permission "
                f"{info.permission!r} this channel needs (service said: {reply.message!r})"
            )
        return InvalidRequest(
            f"{self.action} {name} ({self.key}) refused by the service: {reply.message!r}"
        )


class Backoff:
    """Capped exponential backoff with jitter for reconnects.

    The n-th delay is ``min(maximum, initial * factor**n)`` scaled by a random factor in
    ``[1 - jitter, 1]`` so a fleet of clients does not reconnect in lockstep.

    The schedule is kept across reconnects: a connection that opens and drops soon after
    (a service that accepts and then drops) does not bring the delay back to
    ``initial``. ``connection_lost(up_for)`` starts it again only when the connection
    stayed up at least ``healthy_after`` seconds (default: ``maximum``).
    """

    def __init__(
        self,
        initial: float = 0.5,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 0.5,
        rng: random.Random | None = None,
        healthy_after: float | None = None,
    ) -> None:
        # written as "not ok" so that NaN is refused too
        if not (initial >= 0 and maximum >= 0 and factor >= 1 and 0 <= jitter <= 1):
            raise InvalidRequest(
                "backoff needs initial >= 0, maximum >= 0, factor >= 1, 0 <= jitter <= 1; got "
                f"initial={initial!r}, maximum={maximum!r}, factor={factor!r}, jitter={jitter!r}"
            )
        if healthy_after is not None and not healthy_after >= 0:
            raise InvalidRequest(f"backoff needs healthy_after >= 0, got {healthy_after!r}")
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self.healthy_after = maximum if healthy_after is None else healthy_after
        self._rng = rng or random.Random()
        self.attempt = 0
        # factor**attempt overflows a float after ~1024 doublings (some 8 hours of outage at
        # a 30 s maximum): the exponent stops where factor**n is still finite, far past the
        # point where the delay reached ``maximum``
        self._max_exponent = max(1, int(1000 / math.log2(factor))) if factor > 1 else 0

    def next_delay(self) -> float:
        grown = self.initial * self.factor ** min(self.attempt, self._max_exponent)
        base = min(self.maximum, grown)
        self.attempt += 1
        return base * (1.0 - self.jitter * self._rng.random())

    def reset(self) -> None:
        self.attempt = 0

    def connection_lost(self, up_for: float) -> None:
        """A connection dropped after ``up_for`` seconds: the schedule starts again from
        ``initial`` when that is at least ``healthy_after``, else it goes on growing."""
        if up_for >= self.healthy_after:
            self.reset()

    def __iter__(self) -> Iterator[float]:
        while True:
            yield self.next_delay()
