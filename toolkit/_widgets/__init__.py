"""Live ipywidgets views of the stream: prices (``TickerView``) and orders moving through
their statuses (``OrderStatusView``), fed by a live client or by a recording."""

from __future__ import annotations

from toolkit._widgets._order_view import OrderStatusView
from toolkit._widgets._throttle import RepaintThrottle
from toolkit._widgets._ticker_view import TickerRow, TickerView

__all__ = ["OrderStatusView", "RepaintThrottle", "TickerRow", "TickerView"]
