"""The orders of a report with their per-order metrics on disk (``OrderParts``): the
contract between the per-order build and the report's tables (owned by the parts
engineer; this is only the dataclass the tables read, until their module lands)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


@dataclass
class OrderParts:
    """The orders of a report with their per-order metrics on disk."""

    per_order: list[Path]  # Parquet files. Read in list order and concatenated
    # (pd.concat(..., ignore_index=True)) they ARE
    # per_order(deduplicate(frames), market, max_quote_age=...):
    # same columns in the same order, same dtypes after
    # _columns._conform / the reader, SAME ROW ORDER.
    makers: list[Path]  # Parquet: maker_by_order(trades).reset_index() of the same
    # orders (orderId, trades, maker_trades, cost, maker_cost),
    # concatenated in list order; an order in at most one part.
    quotes: list[Path]  # Parquet: canonical_quotes(d) rows of the same orders
    # (for worst_order_quotes / order charts of a few ids).
    checks: pd.DataFrame  # every data_checks row EXCEPT the slippage outliers
    # (_checks._outliers), CHECK_COLUMNS, in data_checks' order.
    contingencies: pd.DataFrame  # contingencies(canonical_quotes(d))[0], whole set
    contingency_reasons: pd.DataFrame  # ...[1]
    warnings: list[str]  # the RuntimeWarning messages all_tables emits today
    orders: int  # rows of per_order in total
    folder: Path | None  # a temporary folder owning the files (None: nothing to remove)

    def close(self) -> None:
        """Remove ``folder`` (idempotent)."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
