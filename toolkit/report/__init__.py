"""The execution-quality report: slippage, routing, fees, fills, latency and data checks
of a set of orders, as tables, figures, HTML and Parquet (``tk.execution_report``).

May import ``toolkit.errors``, ``toolkit.protocol``, ``toolkit.frames`` and ``toolkit.recording``
(market data from a recording); never the client, the stream or the views."""

from __future__ import annotations

from toolkit.report._api import ExecutionReport, execution_report

__all__ = ["ExecutionReport", "execution_report"]
