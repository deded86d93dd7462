"""An ``OrderParts`` of in-memory frames for the tests of the report's tables from parts:
today's per-order table (and makers, quotes, checks) split into N Parquet parts, so the
tables from parts can be held against ``all_tables`` (the parts engineer's
``parts_from_frames`` / ``order_parts`` replace it at merge)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from toolkit.report._breakdowns import contingencies
from toolkit.report._checks import data_checks, order_field_problems, slippage_outliers
from toolkit.report._coverage import frame_notes
from toolkit.report._fills import maker_by_order
from toolkit.report._parts import OrderParts
from toolkit.report._per_order import deduplicate, per_order
from toolkit.report._quotes import canonical_quotes, quote_problems
from toolkit.report._stored_checks import StoredChecks


def _split(df: pd.DataFrame, n: int, folder: Path, stem: str) -> list[Path]:
    out = []
    for i, rows in enumerate(np.array_split(np.arange(len(df)), n)):
        path = folder / f"{stem}-{i:03d}.parquet"
        df.iloc[rows].to_parquet(path, index=False)
        out.append(path)
    return out


def _stored(checks: pd.DataFrame, folder: Path) -> StoredChecks:
    """The checks on disk, as the parts keep them: one file, or none when there is none."""
    if not len(checks):
        return StoredChecks()
    path = folder / "checks.parquet"
    checks.reset_index(drop=True).to_parquet(path, index=False)
    return StoredChecks((path,))


def split_parts(
    frames: Any,
    market: Any = None,
    *,
    parts: int = 1,
    folder: Path | None = None,
    max_quote_age: float | None = 60.0,
) -> OrderParts:
    """``frames``' report inputs as ``parts`` Parquet parts of consecutive orders (a part
    may be empty) in ``folder`` (default: a new temporary folder the parts own)."""
    owned = folder is None
    where = Path(tempfile.mkdtemp(prefix="tk-parts-")) if folder is None else folder
    d = deduplicate(frames)
    po = per_order(d, market, max_quote_age=max_quote_age)
    problems = quote_problems(frames)
    messages = [m for _, m in problems] + [p.message for p in order_field_problems(po)]
    checks = data_checks(
        po,
        d.orders,
        d.trades,
        quote_problems=problems,
        duplicates=d.duplicate_orders,
        coverage=frame_notes(frames),
    )
    outliers = sum(len(f) for f in slippage_outliers(po))
    quotes = canonical_quotes(d)
    cont, reasons = contingencies(quotes)
    makers = maker_by_order(d.trades).reset_index()
    quote_parts = [] if quotes is None else _split(quotes, parts, where, "quotes")
    return OrderParts(
        per_order=_split(po, parts, where, "per_order"),
        makers=_split(makers, parts, where, "makers"),
        quotes=quote_parts,
        checks=_stored(checks.iloc[: len(checks) - outliers], where),
        contingencies=cont,
        contingency_reasons=reasons,
        warnings=messages,
        orders=len(po),
        folder=where if owned else None,
    )
