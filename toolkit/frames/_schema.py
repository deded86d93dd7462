"""The known fields of an order (docs/contracts.md "Order") with their kinds, and the column
lists of the frames built from them; the single place that says which field is what.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias, Union

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.profile import ServiceProfile

Kind: TypeAlias = Literal["str", "dec", "ts"]
# a field is a scalar kind, a nested object (name -> field), or a list of such objects
Field: TypeAlias = Union[Kind, "Struct", "ListOf"]


class Struct(dict[str, Field]):
    """A nested JSON object of known fields, in the order the columns appear."""


class ListOf:
    """A JSON array of objects (trades, evaluatedTickers)."""

    __slots__ = ("item",)

    def __init__(self, item: Struct) -> None:
        self.item = item

    def __repr__(self) -> str:
        return f"ListOf({self.item!r})"


FEE = Struct(cost="dec", rate="dec", cripto="dec")

TRADE = Struct(
    id="str",
    takerOrMaker="str",
    type="str",
    side="str",
    price="dec",
    amount="dec",
    cost="dec",
    timestamp="ts",
    fee=FEE,
)

EVALUATED_TICKER = Struct(exchange="str", price="dec", quotedAt="ts", reason="str")

#: every known field of an order, base then extended then limit-only, in column order
ORDER = Struct(
    id="str",
    exchange="str",
    symbol="str",
    side="str",
    type="str",
    status="str",
    errorMessage="str",
    amount="dec",
    quoteAmount="dec",
    quoteAmountOriginal="dec",
    remainingQuoteAmount="dec",
    average="dec",
    createdAt="ts",
    updatedAt="ts",
    executedAt="ts",
    channel="str",
    rule="str",
    operationalFees="dec",
    executedExchange="str",
    evaluatedTickers=ListOf(EVALUATED_TICKER),
    account="str",
    orderPoolId="str",
    filledStatus="str",
    amountOriginal="dec",
    remainingAmount="dec",
    filled="dec",
    remaining="dec",
    cost="dec",
    price="dec",
    info="str",
    fee=Struct(
        cost="dec",
        rate="dec",
        cripto="dec",
        tierService=Struct(
            currentTierFeeRate="dec",
            currentTierFeeFiat="dec",
            currentTierFeeCripto="dec",
        ),
    ),
    trades=ListOf(TRADE),
    RFQ=Struct(quoteId="str", quotedPrice="dec", quotedAt="ts", validUntil="ts"),
    limitPrice="dec",
    expiresAt="ts",
    statusGroup="str",
    statusReason="str",
    triggerPrice="dec",
    triggerExchange="str",
    triggeredAt="ts",
    cancelRequestedAt="ts",
)

#: the list fields of an order that become frames of their own instead of columns
LIST_FRAMES: dict[str, str] = {"trades": "trades", "evaluatedTickers": "evaluated_tickers"}

FRAME_NAMES: tuple[str, ...] = ("orders", "trades", "fees", "evaluated_tickers", "fills")

#: order columns copied onto each fill, as (order column, fill column)
FILL_CONTEXT: tuple[tuple[str, str], ...] = (
    ("symbol", "symbol"),
    ("exchange", "exchange"),
    ("executedExchange", "executedExchange"),
    ("rule", "rule"),
    ("channel", "channel"),
    ("type", "orderType"),
    ("status", "orderStatus"),
)


def flat_kinds(struct: Struct, prefix: str = "") -> dict[str, Kind]:
    """Dotted column name -> kind for every scalar field reachable without crossing a list."""
    out: dict[str, Kind] = {}
    for name, field in struct.items():
        if isinstance(field, Struct):
            out.update(flat_kinds(field, f"{prefix}{name}."))
        elif isinstance(field, str):
            out[f"{prefix}{name}"] = field
    return out


def columns_of_kind(struct: Struct, kind: Kind) -> frozenset[str]:
    """Dotted column names of ``struct`` whose kind is ``kind``."""
    return frozenset(name for name, k in flat_kinds(struct).items() if k == kind)


@dataclass(frozen=True)
class QuoteFields:
    """The names of the ``evaluatedTickers`` element fields (spec 2.4: structure not shown),
    as the profile's ``orders.quote_*_field`` settings give them. The evaluated_tickers frame
    keeps these names as its columns; the report reads the quotes through them."""

    venue: str = "exchange"
    price: str = "price"
    time: str = "quotedAt"
    reason: str = "reason"

    #: the profile setting of each meaning, for messages that tell the user what to change
    SETTINGS: ClassVar[dict[str, str]] = {
        "venue": "orders.quote_venue_field",
        "price": "orders.quote_price_field",
        "time": "orders.quote_time_field",
        "reason": "orders.quote_reason_field",
    }

    @classmethod
    def from_profile(cls, profile: ServiceProfile) -> QuoteFields:
        o = profile.orders
        return cls(
            venue=o.quote_venue_field,
            price=o.quote_price_field,
            time=o.quote_time_field,
            reason=o.quote_reason_field,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> QuoteFields:
        """From ``to_dict``'s output; missing or non-text entries keep the default."""
        if not isinstance(data, Mapping):
            return cls()
        names = {k: v for k, v in data.items() if k in cls.SETTINGS and isinstance(v, str) and v}
        return cls(**names)

    def to_dict(self) -> dict[str, str]:
        return {"venue": self.venue, "price": self.price, "time": self.time, "reason": self.reason}

    def kinds(self) -> list[tuple[str, Kind]]:
        """(field name, kind) of each element field, in column order."""
        return [(self.venue, "str"), (self.price, "dec"), (self.time, "ts"), (self.reason, "str")]


def _insert(struct: Struct, dotted: str, kind: Kind) -> None:
    head, _, rest = dotted.partition(".")
    if not rest:
        struct[head] = kind
        return
    sub = struct.get(head)
    if not isinstance(sub, Struct):
        sub = struct[head] = Struct()
    _insert(sub, rest, kind)


@lru_cache(maxsize=32)
def quote_struct(fields: QuoteFields) -> Struct:
    """The ``evaluatedTickers`` element under ``fields`` (dotted names become nested)."""
    struct = Struct()
    for name, kind in fields.kinds():
        _insert(struct, name, kind)
    return struct


@lru_cache(maxsize=32)
def order_spec(fields: QuoteFields) -> Struct:
    """``ORDER`` with the ``evaluatedTickers`` element named by ``fields``."""
    if fields == QuoteFields():
        return ORDER
    return Struct(
        (name, ListOf(quote_struct(fields)) if name == "evaluatedTickers" else spec)
        for name, spec in ORDER.items()
    )
