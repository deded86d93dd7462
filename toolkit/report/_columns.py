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


PER_ORDER_COLUMNS: dict[str, str] = {
    "orderId": "str",
    "symbol": "str",
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
    "createdAt": UTC_NS,
    "executedAt": UTC_NS,
    "triggeredAt": UTC_NS,
    "executed": "bool",
    "average": "float64",
    "notional": "float64",
    "requested_notional": "float64",
    "quote": "float64",
    "quote_reason": "str",
    "quote_slippage_bp": "float64",
    "best_quote": "float64",
    "best_venue": "str",
    "best_quote_slippage_bp": "float64",
    "routing_outcome": "str",
    "best_venue_hit": "float64",
    "quotes_seen": "float64",
    "contingencies": "float64",
    "arrival_mid": "float64",
    "arrival_slippage_bp": "float64",
    **{f"markout_{h}s_bp": "float64" for h in MARKOUT_HORIZONS_S},
    "fee_cost": "float64",
    "fee_cripto": "float64",
    "fee_cripto_fiat": "float64",
    "venue_fee": "float64",
    "operational_fees": "float64",
    "fee_cost_bp": "float64",
    "fee_cripto_bp": "float64",
    "venue_fee_bp": "float64",
    "operational_bp": "float64",
    "fee_total_bp": "float64",
    "fee_rate": "float64",
    "tier_rate": "float64",
    "fee_rate_vs_tier_bp": "float64",
    "fill_rate": "float64",
    "tte_s": "float64",
    "tte_basis": "str",
    "reject_reason": "str",
}

# metric -> weight column of its aggregates (notional unless the definition says otherwise)
WEIGHTS: dict[str, str] = {
    "quote_slippage_bp": "notional",
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
        col = pd.to_datetime(col, unit="ms", utc=True, errors="coerce")
    else:
        col = pd.to_datetime(col, utc=True, errors="coerce")
    return col.astype(_pandas_dtype(UTC_NS))


def _conform(df: pd.DataFrame, columns: Mapping[str, str]) -> pd.DataFrame:
    out = pd.DataFrame(index=df.index)
    for name, dtype in columns.items():
        if name in df.columns:
            out[name] = df[name].astype(_pandas_dtype(dtype))
        else:
            out[name] = pd.Series(np.nan, index=df.index).astype(_pandas_dtype(dtype))
    return out.reset_index(drop=True)
