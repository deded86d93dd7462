"""How each cell of the report's tables is written: shares as %, amounts with thousands
separators and their quote currency, bp with two decimals, counts as whole numbers,
durations in human units (12 h 8 min), times in UTC, and never exponent notation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from toolkit.report._labels import duration

TEXT = frozenset(
    {
        "metric",
        "unit",
        "type",
        "currency",
        "symbol",
        "venue",
        "exchange",
        "rule",
        "reason",
        "outcome",
        "stage",
        "basis",
        "bucket",
        "dimension",
        "group",
        "check",
        "detail",
        "orderId",
        "excluded_venue",
    }
)
COUNTS = frozenset(
    {
        "orders",
        "executed",
        "trades",
        "maker_trades",
        "quotes",
        "contingencies",
        "orders_above_tier",
        "eligible",
        "a_orders",
        "b_orders",
        "market_orders",
        "limit_orders",
    }
)
AMOUNTS = frozenset(
    {
        "notional",
        "requested_notional",
        "fee_cost",
        "fee_cripto_fiat",
        "venue_fee",
        "operational_fees",
        "fee_amount",
        "routing_gap",
        "execution",
        "fees",
        "total",
        "cost",
        "total_cost_amount",
        "unfilled_notional",
        "opportunity_cost_amount",
        "ci_low_amount",
        "ci_high_amount",
    }
)
RATES = frozenset({"fee_rate", "tier_rate"})
SHARES = frozenset({"share", "rate", "coverage", "fill_probability"})
PRICES = frozenset({"average", "quote", "best_quote", "arrival_mid", "limit_price"})
#: tables whose value columns are in the unit their row's ``unit`` column says
BY_UNIT = frozenset(
    {
        "value",
        "market",
        "limit",
        "a",
        "b",
        "b_minus_a",
        "ci_low",
        "ci_high",
        "a_ci_low",
        "a_ci_high",
        "b_ci_low",
        "b_ci_high",
    }
)


def cell_kind(table: str, column: str) -> str:
    """What a column holds: text, count, share, rate, bp, amount, crypto, seconds, price,
    by_unit (its row's unit column says) or number."""
    if column in TEXT:
        return "text"
    if column in BY_UNIT and table != "data_checks":
        return "by_unit"
    if column in COUNTS:
        return "count"
    if column in RATES:
        return "rate"
    if column in SHARES or column.startswith("share_") or column.endswith(("_share", "_rate")):
        return "share"
    if column.endswith("_bp"):
        return "bp"
    if column in AMOUNTS:
        return "amount"
    if column == "fee_cripto":
        return "crypto"
    if column == "horizon_s":
        return "horizon"
    if column.endswith("_s"):
        return "seconds"
    if column in PRICES:
        return "price"
    return "number"


def table_currency(df: pd.DataFrame, default: str) -> str | list[str]:
    """The currency of each row (its ``currency`` column), else ``default`` for all."""
    if "currency" not in df.columns:
        return default
    return [c if isinstance(c, str) and c else default for c in df["currency"].tolist()]


def _plain(v: float, decimals: int) -> str:
    text = f"{v:,.{decimals}f}"
    # -0.00 is 0.00: a sign on a zero only distracts
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def _number(v: float) -> str:
    a = abs(v)
    if v.is_integer() and a < 1e15:
        return f"{v:,.0f}"  # counts stored as float (a metric column mixes units)
    if a >= 1:
        return _plain(v, 2)
    # below 1: four significant digits, positional (0.0001234, never 1.234e-04)
    return np.format_float_positional(v, precision=4, unique=False, fractional=False, trim="-")


def format_cell(v: object, kind: str, currency: str) -> str:
    """``v`` written as its ``kind`` says (see :func:`cell_kind`); NaN as an en dash."""
    if v is None or v is pd.NaT:
        return "–"
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if isinstance(v, pd.Timestamp):
        return v.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if v.tzinfo is not None else "")
    if isinstance(v, str):
        return v
    if not isinstance(v, int | float | np.integer | np.floating):
        return str(v)
    x = float(v)
    if math.isnan(x):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if kind == "share":
        return f"{x * 100:.1f} %" if abs(x) >= 0.001 or x == 0 else f"{x * 100:.3f} %"
    if kind == "rate":
        return f"{x * 100:.3f} %"
    if kind == "bp":
        return _plain(x, 2)
    if kind == "amount":
        return f"{_plain(x, 2)} {currency}".strip()
    if kind == "crypto":
        return _plain(x, 8)
    if kind == "seconds":
        return duration(x)
    if kind == "count":
        return f"{x:,.0f}"
    if kind == "horizon":
        return f"{x:+,.0f} s"
    if kind == "price":
        return _plain(x, 2 if abs(x) >= 1000 else 4 if abs(x) >= 1 else 8)
    return _number(x)
