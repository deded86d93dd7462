"""The typed columns of the report's tables and the helpers that read and conform them:
a missing column reads as NaN/NaT/empty, and every table leaves with its exact dtypes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from toolkit.report._definitions import MARKOUT_HORIZONS_S

UTC_NS = "datetime64[ns, UTC]"
NONE_LABEL = "(none)"


LIMIT_COLUMNS: dict[str, str] = {
    "limit_price": "float64",
    "creation_mid": "float64",
    "end_mid": "float64",
    "limit_distance_bp": "float64",
    "time_to_expiry_s": "float64",
    "trigger_delay_s": "float64",
    "trigger_slippage_bp": "float64",
    "limit_respected": "float64",
    "unfilled_notional": "float64",
    "opportunity_cost_bp": "float64",
    "opportunity_cost_amount": "float64",
    "cancel_latency_s": "float64",
    "endedAt": UTC_NS,
}


PER_ORDER_COLUMNS: dict[str, str] = {
    "orderId": "str",
    "symbol": "str",
    "currency": "str",
    "side": "str",
    "sign": "float64",
    "type": "str",
    "status": "str",
    "outcome": "str",
    "exchange": "str",
    "venue": "str",
    "rule": "str",
    "channel": "str",
    "month": "str",
    "hour": "str",
    "size_bucket": "str",
    "createdAt": UTC_NS,
    "executedAt": UTC_NS,
    "triggeredAt": UTC_NS,
    "executed": "bool",
    "average": "float64",
    "average_source": "str",
    "notional": "float64",
    "requested_notional": "float64",
    "quote": "float64",
    "quote_reason": "str",
    "quote_slippage_bp": "float64",
    "quote_age_s": "float64",
    "best_quote": "float64",
    "best_venue": "str",
    "overall_best_quote": "float64",
    "overall_best_venue": "str",
    "overall_best_reason": "str",
    "best_quote_slippage_bp": "float64",
    "routing_outcome": "str",
    "best_venue_hit": "float64",
    "quotes_seen": "float64",
    "contingencies": "float64",
    "decomposed": "bool",
    "routing_gap_bp": "float64",
    "execution_bp": "float64",
    "fees_bp": "float64",
    "total_cost_bp": "float64",
    "routing_gap_amount": "float64",
    "execution_amount": "float64",
    "fee_amount": "float64",
    "total_cost_amount": "float64",
    "arrival_mid": "float64",
    "arrival_spread_bp": "float64",
    "arrival_slippage_bp": "float64",
    "arrival_slippage_half_spreads": "float64",
    "markout_anchor": UTC_NS,
    **{f"markout_{h}s_bp": "float64" for h in MARKOUT_HORIZONS_S},
    "fee_cost": "float64",
    "fee_cripto": "float64",
    "fee_cripto_fiat": "float64",
    "venue_fee": "float64",
    "venue_fee_source": "str",
    "operational_fees": "float64",
    "venue_fee_bp": "float64",
    "operational_bp": "float64",
    "fee_total_bp": "float64",
    "fee_rate": "float64",
    "tier_rate": "float64",
    "fee_rate_vs_tier_bp": "float64",
    "fill_rate": "float64",
    "fill_basis": "str",
    "fully_filled": "float64",
    "tte_s": "float64",
    "tte_basis": "str",
    "reject_reason": "str",
    **LIMIT_COLUMNS,
}

# metric -> weight column of its aggregates (notional unless the definition says otherwise)
WEIGHTS: dict[str, str] = {
    "quote_slippage_bp": "notional",
    "routing_gap_bp": "notional",
    "total_cost_bp": "notional",
    "best_quote_slippage_bp": "notional",
    "arrival_slippage_bp": "notional",
    "fee_total_bp": "notional",
    "fill_rate": "requested_notional",
    "best_venue_hit": "_one",
}


# ---------------------------------------------------------------- column helpers


def empty(columns: Mapping[str, str]) -> pd.DataFrame:
    """An empty table with the given typed columns."""
    return pd.DataFrame({c: pd.Series(dtype=_pandas_dtype(t)) for c, t in columns.items()})


def _pandas_dtype(name: str) -> Any:
    return name


def _num(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype="float64")
    col = df[name]
    try:
        # exact frames hold pyarrow decimals: float64 is what the metrics need
        return col.astype("float64")
    except (TypeError, ValueError):
        return pd.to_numeric(col.astype(object), errors="coerce").astype("float64")


def _text(df: pd.DataFrame, name: str, default: str = "") -> pd.Series:
    if name not in df.columns:
        return pd.Series(default, index=df.index, dtype="str")
    return df[name].astype("str").fillna(default)


def _time(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df.columns:
        return pd.Series(pd.NaT, index=df.index, dtype=UTC_NS)
    col = df[name]
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        return epoch_to_utc(col)
    if pd.api.types.is_datetime64_any_dtype(col):
        return pd.to_datetime(col, utc=True).astype(_pandas_dtype(UTC_NS))
    # text: Unix numbers as text (any unit), else ISO dates
    as_number = pd.to_numeric(col, errors="coerce")
    parsed = pd.to_datetime(col.where(as_number.isna()), utc=True, errors="coerce", format="mixed")
    parsed = parsed.astype(_pandas_dtype(UTC_NS))
    return epoch_to_utc(as_number).where(as_number.notna(), parsed)


#: (upper bound of |value|, nanoseconds per unit): a Unix time below 1e11 is in seconds
#: (until the year 5138), below 1e14 in milliseconds, below 1e17 in microseconds
_EPOCH_UNITS: tuple[tuple[float, float], ...] = (
    (1e11, 1e9),
    (1e14, 1e6),
    (1e17, 1e3),
    (np.inf, 1.0),
)


def epoch_to_utc(values: pd.Series) -> pd.Series:
    """Unix times to UTC timestamps, the unit inferred per value from its magnitude
    (seconds, milliseconds, microseconds or nanoseconds): a column may mix them."""
    v = pd.to_numeric(values, errors="coerce").astype("float64").to_numpy()
    a = np.abs(v)
    scale = np.select([a < b for b, _ in _EPOCH_UNITS], [u for _, u in _EPOCH_UNITS], np.nan)
    ns = np.round(v * scale)
    ok = np.isfinite(ns)
    out = np.full(len(v), np.datetime64("NaT"), dtype="datetime64[ns]")
    out[ok] = ns[ok].astype("int64").view("datetime64[ns]")
    return pd.Series(out, index=values.index).dt.tz_localize("UTC").astype(_pandas_dtype(UTC_NS))


def _conform(df: pd.DataFrame, columns: Mapping[str, str]) -> pd.DataFrame:
    out = pd.DataFrame(index=df.index)
    for name, dtype in columns.items():
        if name in df.columns:
            out[name] = df[name].astype(_pandas_dtype(dtype))
        else:
            out[name] = pd.Series(np.nan, index=df.index).astype(_pandas_dtype(dtype))
    return out.reset_index(drop=True)
