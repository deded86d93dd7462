"""Live ipywidgets views of the stream: prices (``TickerView``) and orders moving through
their statuses (``OrderStatusView``), fed by a live client or by a recording.

May import ``toolkit.errors``, ``toolkit.protocol``, ``toolkit.stream`` and ``toolkit.recording``
(for replay); the client only as a duck-typed source."""

from __future__ import annotations

from toolkit.widgets._order_view import OrderStatusView
from toolkit.widgets._throttle import RepaintThrottle
from toolkit.widgets._ticker_view import TickerRow, TickerView

__all__ = ["OrderStatusView", "RepaintThrottle", "TickerRow", "TickerView"]
