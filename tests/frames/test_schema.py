"""Tests for toolkit/frames/_schema.py: the known fields of an order and the column lists derived
from them, checked against docs/contracts.md "Order" and "Frames"."""

from __future__ import annotations

from toolkit.frames._schema import (
    EVALUATED_TICKER,
    FILL_CONTEXT,
    FRAME_NAMES,
    ORDER,
    TRADE,
    ListOf,
    Struct,
    columns_of_kind,
    flat_kinds,
)


def test_flat_kinds_dots_nested_objects_and_skips_lists() -> None:
    kinds = flat_kinds(ORDER)
    assert kinds["fee.tierService.currentTierFeeRate"] == "dec"
    assert kinds["RFQ.quoteId"] == "str"
    assert kinds["RFQ.validUntil"] == "ts"
    assert "trades" not in kinds and "evaluatedTickers" not in kinds
    assert not any(name.startswith(("trades.", "evaluatedTickers.")) for name in kinds)


def test_known_decimals_and_timestamps_of_the_contract() -> None:
    decimals = columns_of_kind(ORDER, "dec")
    for name in (
        "amount",
        "quoteAmount",
        "quoteAmountOriginal",
        "remainingQuoteAmount",
        "average",
        "operationalFees",
        "amountOriginal",
        "remainingAmount",
        "filled",
        "remaining",
        "cost",
        "price",
        "limitPrice",
        "fee.cost",
        "fee.rate",
        "fee.cripto",
        "fee.tierService.currentTierFeeFiat",
        "RFQ.quotedPrice",
    ):
        assert name in decimals, name
    timestamps = columns_of_kind(ORDER, "ts")
    for name in (
        "createdAt",
        "updatedAt",
        "executedAt",
        "expiresAt",
        "cancelRequestedAt",
        "triggeredAt",
        "RFQ.quotedAt",
        "RFQ.validUntil",
    ):
        assert name in timestamps, name
    assert columns_of_kind(TRADE, "dec") == {
        "price",
        "amount",
        "cost",
        "fee.cost",
        "fee.rate",
        "fee.cripto",
    }
    assert columns_of_kind(TRADE, "ts") == {"timestamp"}
    assert columns_of_kind(EVALUATED_TICKER, "dec") == {"price"}
    assert columns_of_kind(EVALUATED_TICKER, "ts") == {"quotedAt"}
    assert not decimals & timestamps


def test_lists_and_frames() -> None:
    assert isinstance(ORDER["trades"], ListOf) and ORDER["trades"].item is TRADE
    assert isinstance(ORDER["evaluatedTickers"], ListOf)
    assert isinstance(ORDER["fee"], Struct)
    assert FRAME_NAMES == ("orders", "trades", "fees", "evaluated_tickers", "fills")
    assert [target for _, target in FILL_CONTEXT] == [
        "symbol",
        "exchange",
        "executedExchange",
        "rule",
        "channel",
        "orderType",
        "orderStatus",
    ]
