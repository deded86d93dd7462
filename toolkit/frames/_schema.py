"""The known fields of an order (docs/contracts.md "Order") with their kinds, and the column
lists of the frames built from them; the single place that says which field is what.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, Union

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
