"""How the simulator's canonical data looks on the wire under a ``ServiceProfile``: timestamp
unit, list-item and ``evaluatedTickers`` field names, ticker and balance payloads, error bodies,
the sign-in response. Internally everything stays canonical (Unix ms, default names)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolkit.profile import (
    DEFAULT_PROFILE,
    EACH,
    ServiceProfile,
    get_path,
    keyed_container,
    set_path,
)

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.sim._knobs import Knobs

#: Unix timestamps at the top level of an order body (spec 2.4 and the limit fields)
ORDER_TIMES = ("createdAt", "updatedAt", "executedAt", "expiresAt", "triggeredAt")
#: further Unix timestamps: the cancel stamp and the inner ones of RFQ
CANCEL_TIME = "cancelRequestedAt"
RFQ_TIMES = ("quotedAt", "validUntil")
#: canonical list-item fields (PRODUCT.md) -> the ``listing.*_field`` naming each
_ITEM_FIELDS = (
    ("id", "id_field"),
    ("symbol", "symbol_field"),
    ("side", "side_field"),
    ("type", "type_field"),
    ("status", "status_field"),
    ("limitPrice", "limit_price_field"),
    ("expiresAt", "expires_at_field"),
    ("createdAt", "created_at_field"),
    ("updatedAt", "updated_at_field"),
)
_ITEM_TIMES = frozenset({"expiresAt", "createdAt", "updatedAt"})


def build(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """An object from (dotted path, value) pairs."""
    out: dict[str, Any] = {}
    for path, value in pairs:
        set_path(out, path, value)
    return out


def seconds(ms: int | float | None) -> float | None:
    """Unix ms as seconds with millisecond precision (``1763000000.123``)."""
    return None if ms is None else round(ms / 1000, 3)


def iso(ms: int | float) -> str:
    """Unix ms as ISO-8601 UTC text with milliseconds (``2026-11-27T09:23:40.637Z``)."""
    moment = datetime.fromtimestamp(int(ms) // 1000, UTC).replace(microsecond=int(ms) % 1000 * 1000)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms) % 1000:03d}Z"


def _keyed(path: str, items: Sequence[tuple[str, dict[str, Any]]]) -> Any:
    """The keyed object ``{key: item}`` at the container of list setting ``path``
    (``wallet.*``; ``*`` alone: the message itself)."""
    container = keyed_container(path) or ""
    keyed = dict(items)
    return build(((container, keyed),)) if container else keyed


def _amount(ms: float) -> int | float:
    """A duration or moment in seconds from ms: an integer when whole, else 3 decimals."""
    value = round(ms / 1000, 3)
    return int(value) if value == int(value) else value


class Shape:
    """The wire shapes of one profile. Every ``render`` takes canonical data and returns
    it as the profile shows it; under the default profile most of them return their input."""

    def __init__(
        self, profile: ServiceProfile = DEFAULT_PROFILE, knobs: Knobs | None = None
    ) -> None:
        self.profile = profile
        #: the simulator's knobs, read live (``payload_time_format``); None: Unix times
        self.knobs = knobs
        p = profile
        self.in_seconds = p.orders.timestamp_unit == "s"
        self.active = frozenset(p.listing.active_statuses)
        self.finalized = frozenset(p.listing.finalized_statuses)
        self.error_field = p.rest.error_message_field or "message"
        o = p.orders
        self._quote_names = {
            "exchange": o.quote_venue_field,
            "price": o.quote_price_field,
            "quotedAt": o.quote_time_field,
            "reason": o.quote_reason_field,
        }
        self._plain_quotes = all(k == v for k, v in self._quote_names.items())
        self._item_names = tuple((k, getattr(p.listing, f)) for k, f in _ITEM_FIELDS)
        self._plain_items = not self.in_seconds and all(k == v for k, v in self._item_names)
        self.payloads = p.payloads

    # ---------------------------------------------------------------- time
    def ts(self, ms: int | None) -> int | float | None:
        """A canonical Unix-ms value in the profile's unit (``s``: float seconds)."""
        return seconds(ms) if self.in_seconds else ms

    @property
    def iso_payloads(self) -> bool:
        """Whether ticker, balance and quote times go out as ISO-8601 text (the knob
        ``payload_time_format``)."""
        return self.knobs is not None and self.knobs.payload_time_format == "iso"

    def payload_ts(self, ms: int | None) -> int | float | str | None:
        """A payload time (ticker, balance, ``evaluatedTickers``): ISO-8601 text under
        ``payload_time_format = "iso"``, else :meth:`ts`."""
        if ms is not None and self.iso_payloads:
            return iso(ms)
        return self.ts(ms)

    def ms_from_input(self, value: Any) -> int | None:
        """A client's Unix timestamp in the profile's unit as ms; None when not a number.
        Under ``s`` a value too large to be seconds is read as ms (inferred by magnitude)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if not self.in_seconds:
            return value if isinstance(value, int) else None
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return int(value) if abs(value) >= 100_000_000_000 else round(value * 1000)

    # ---------------------------------------------------------------- orders
    def order(self, body: dict[str, Any]) -> dict[str, Any]:
        """A canonical order body (fetchOrder == watchOrders) in the profile's shape."""
        if self._plain_quotes and not self.in_seconds and not self.iso_payloads:
            return body
        if self.in_seconds:
            for key in (*ORDER_TIMES, CANCEL_TIME):
                if body.get(key) is not None:
                    body[key] = seconds(body[key])
            for trade in body.get("trades") or ():
                trade["timestamp"] = seconds(trade.get("timestamp"))
            rfq = body.get("RFQ")
            if isinstance(rfq, dict):
                for key in RFQ_TIMES:
                    if rfq.get(key) is not None:
                        rfq[key] = seconds(rfq[key])
        quotes = body.get("evaluatedTickers")
        if quotes:
            body["evaluatedTickers"] = [self.quote(q) for q in quotes]
        return body

    def quote(self, quote: Mapping[str, Any]) -> dict[str, Any]:
        names = self._quote_names
        return build(
            (names.get(k, k), self.payload_ts(v) if k == "quotedAt" else v)
            for k, v in quote.items()
        )

    def list_item(self, item: dict[str, Any]) -> dict[str, Any]:
        """A canonical list item with the ``listing.*_field`` names (dotted -> nested)."""
        if self._plain_items:
            return item
        return build(
            (name, self.ts(item.get(key)) if key in _ITEM_TIMES else item.get(key))
            for key, name in self._item_names
        )

    def stamp(self, body: dict[str, Any], key: str = CANCEL_TIME) -> dict[str, Any]:
        """``body`` with its ``key`` timestamp in the profile's unit."""
        if self.in_seconds and body.get(key) is not None:
            body[key] = seconds(body[key])
        return body

    # ---------------------------------------------------------------- payloads
    def ticker(self, t: Mapping[str, Any]) -> dict[str, Any]:
        """A canonical ticker (``symbol bid ask last timestamp``) as ``payloads.ticker_*``;
        a ``ticker_symbol`` of ``*`` (the key of a keyed tickers message) leaves the
        symbol out."""
        pl = self.payloads
        fields = (
            (pl.ticker_bid, t["bid"]),
            (pl.ticker_ask, t["ask"]),
            (pl.ticker_last, t["last"]),
            (pl.ticker_time, self.payload_ts(t["timestamp"])),
        )
        if pl.ticker_symbol == EACH:
            return build(fields)
        return build(((pl.ticker_symbol, t["symbol"]), *fields))

    def tickers(self, rendered: list[dict[str, Any]], symbols: Sequence[str] = ()) -> Any:
        """The watchTickers message around already rendered tickers; a ``tickers_list``
        ending in ``*`` keys each by its symbol (``symbols``, in the same order, or the
        one each carries)."""
        path = self.payloads.tickers_list
        if keyed_container(path) is not None:
            keys = list(symbols) or [str(self.ticker_symbol(t)) for t in rendered]
            return _keyed(path, list(zip(keys, rendered, strict=True)))
        return build(((path, rendered),)) if path else rendered

    def ticker_symbol(self, rendered: Any) -> Any:
        return get_path(rendered, self.payloads.ticker_symbol)

    def only(self, message: Any, symbols: frozenset[str]) -> Any:
        """A rendered watchTickers message keeping the tickers of ``symbols`` only."""
        container = keyed_container(self.payloads.tickers_list)
        if container is not None:
            keyed = get_path(message, container)
            if not isinstance(keyed, dict):
                return message
            kept = [(k, t) for k, t in keyed.items() if k in symbols]
            return _keyed(self.payloads.tickers_list, kept)
        listed = get_path(message, self.payloads.tickers_list)
        if not isinstance(listed, list):
            return message
        kept = [t for t in listed if self.ticker_symbol(t) in symbols]
        if not self.payloads.tickers_list:
            return kept
        out = dict(message)
        # copy the objects on the way to the list, so the shared message stays whole
        *outer, last = self.payloads.tickers_list.split(".")
        node = out
        for step in outer:
            node[step] = dict(node[step])
            node = node[step]
        node[last] = kept
        return out

    def balance(self, message: Mapping[str, Any]) -> Any:
        """A canonical balance message (``balances`` rows, ``timestamp``) as
        ``payloads.balance_*``; an empty list path makes the message the list itself, one
        ending in ``*`` an object keyed by asset (whose rows carry no asset field when
        ``balance_asset`` is ``*``)."""
        pl = self.payloads
        rows = []
        for r in message["balances"]:
            fields = (
                (pl.balance_free, r["free"]),
                (pl.balance_locked, r["locked"]),
                (pl.balance_total, r["total"]),
            )
            asset = () if pl.balance_asset == EACH else ((pl.balance_asset, r["asset"]),)
            rows.append(build((*asset, *fields)))
        if not pl.balance_list:
            return rows
        stamp = (pl.balance_time, self.payload_ts(message["timestamp"]))
        container = keyed_container(pl.balance_list)
        if container is None:
            return build(((pl.balance_list, rows), stamp))
        keyed = dict(zip((r["asset"] for r in message["balances"]), rows, strict=True))
        return build(((container, keyed), stamp)) if container else keyed

    # ---------------------------------------------------------------- REST plumbing
    def error(self, text: str) -> dict[str, Any]:
        return build(((self.error_field, text),))

    def signin(self, token: str, expires_at_ms: int, now_ms: int) -> dict[str, Any]:
        """The sign-in response: the token and its expiry at the ``signin.*`` fields."""
        si = self.profile.signin
        ms = expires_at_ms if si.expiry_kind == "absolute" else max(expires_at_ms - now_ms, 0)
        expiry: int | float = _amount(ms) if si.expiry_unit == "s" else int(ms)
        return build(((si.token_field, token), (si.expiry_field, expiry)))
