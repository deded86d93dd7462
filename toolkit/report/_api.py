"""``execution_report`` and ``ExecutionReport``: the execution-quality report of a set of
orders as pandas tables, matplotlib figures, a notebook view, HTML and Parquet."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from toolkit.report import _figures, _html, _metrics
from toolkit.report._definitions import DEFINITIONS, SECTIONS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DEFAULT_TITLE = "Execution-quality report"


class ExecutionReport:
    """Every metric table of the report (``tables``, by name), its figures (drawn on first
    use from the tables alone), and the definition of each metric.

    ``tables["per_order"]`` holds the per-order metrics every other table derives from;
    ``report["venues"]`` is ``report.tables["venues"]``."""

    def __init__(self, tables: Mapping[str, pd.DataFrame], *, title: str = DEFAULT_TITLE):
        missing = [n for n in _table_names() if n not in tables]
        if missing:
            raise ValueError(f"report tables missing: {', '.join(missing)}")
        self.tables: dict[str, pd.DataFrame] = dict(tables)
        self.title = title

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self.tables[name]

    @property
    def summary(self) -> pd.DataFrame:
        return self.tables["summary"]

    @property
    def definitions(self) -> dict[str, str]:
        """Metric title -> its definition, as printed in the report."""
        return {d.title: d.text for d in DEFINITIONS.values()}

    @cached_property
    def figures(self) -> dict[str, Figure]:
        """Figure name -> matplotlib Figure (Agg canvas, never shown)."""
        return _figures.all_figures(self.tables)

    def describe(self) -> str:
        """One line saying what the report covers."""
        po = self.tables["per_order"]
        n, ex = len(po), int(po["executed"].sum()) if len(po) else 0
        span = ""
        if po["createdAt"].notna().any():
            lo, hi = po["createdAt"].min(), po["createdAt"].max()
            span = f", created {lo:%Y-%m-%d %H:%M} to {hi:%Y-%m-%d %H:%M} UTC"
        market = po["arrival_mid"].notna().any() if n else False
        return f"{n} orders ({ex} executed){span}; market recording: {'used' if market else 'none'}"

    @cached_property
    def _figure_pngs(self) -> dict[str, str]:
        # encoded once: the notebook view and every to_html share them
        return {name: _html.figure_png_base64(fig) for name, fig in self.figures.items()}

    def to_html(self, path: str | os.PathLike[str] | None = None, *, figures: bool = True) -> str:
        """The whole report as one self-contained HTML page (figures as embedded PNG, or
        left out with ``figures=False``); written to ``path`` if given."""
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        body = _html.body_html(
            self.tables,
            self._figure_pngs if figures else None,
            self.title,
            f"{self.describe()}. Generated {stamp}.",
        )
        page = _html.document_html(body, self.title)
        if path is not None:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(page, encoding="utf-8")
        return page

    def _repr_html_(self) -> str:
        body = _html.body_html(self.tables, self._figure_pngs, self.title, self.describe())
        return _html.fragment_html(body)

    def __repr__(self) -> str:
        return f"<ExecutionReport: {self.describe()}; tables: {', '.join(self.tables)}>"

    def to_parquet(self, directory: str | os.PathLike[str]) -> Path:
        """Write every table to ``directory/<name>.parquet``; returns the directory."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        for name, df in self.tables.items():
            df.to_parquet(out / f"{name}.parquet", index=False)
        return out

    @classmethod
    def read_parquet(
        cls, directory: str | os.PathLike[str], *, title: str = DEFAULT_TITLE
    ) -> ExecutionReport:
        """A report from the tables ``to_parquet`` wrote (figures are drawn again)."""
        d = Path(directory)
        tables = {p.stem: pd.read_parquet(p) for p in sorted(d.glob("*.parquet"))}
        return cls(tables, title=title)


def _table_names() -> list[str]:
    names = {t for s in SECTIONS for t in s.tables}
    return sorted(names | {"per_order"})


def execution_report(
    frames: _metrics.FramesLike,
    market: pd.DataFrame | str | os.PathLike[str] | None = None,
    *,
    max_quote_age: float | None = 60.0,
    title: str = DEFAULT_TITLE,
) -> ExecutionReport:
    """The execution-quality report of ``frames`` (an ``OrderFrames``).

    ``market``: a ticker recording (columns ``symbol, bid, ask, last, timestamp`` and
    ``received_at``), or the root of a recording dataset read with
    ``read_recording(root, channel="watchticker")``; it enables arrival slippage and
    markouts. ``max_quote_age`` (seconds, None = no limit): an older ticker is not a
    price at that moment and is not used."""
    if market is not None and not isinstance(market, pd.DataFrame):
        from toolkit.recording._read import read_recording

        market = read_recording(market, channel="watchticker")
    tables = _metrics.all_tables(frames, market, max_quote_age=max_quote_age)
    return ExecutionReport(tables, title=title)
