"""The execution-quality report: slippage, routing, fees, fills, latency and data checks
of a set of orders, as tables, figures, HTML and Parquet (``tk.execution_report``)."""

from __future__ import annotations

from toolkit._report._api import ExecutionReport, execution_report

__all__ = ["ExecutionReport", "execution_report"]
