"""The execution-quality report: the cost decomposition (routing gap, execution slippage,
fees), slippage, routing, contingencies, markouts, limit-order analytics, fees, fills,
latency, robust aggregates and data checks of a set of orders, as tables, figures, HTML and
Parquet (``tk.execution_report``).

May import ``toolkit.errors``, ``toolkit.protocol``, ``toolkit.profile``, ``toolkit.frames``,
``toolkit.recording`` (market data from a recording) and ``toolkit._atomic`` (every file
written whole or not at all); never the client, the stream or the views."""

from __future__ import annotations

from toolkit.report._api import ExecutionReport, execution_report
from toolkit.report._core import core_metrics

__all__ = ["ExecutionReport", "core_metrics", "execution_report"]
