"""toolkit: load, record, watch and report on the orders of the trading service, from
Jupyter or the command line; ``toolkit.sim`` is a faithful local simulator of it.

Heavy modules (pandas, pyarrow, ipywidgets, matplotlib) load on first use of the name that
needs them, so ``import toolkit`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "Client": "toolkit._client",
    "Settings": "toolkit._config",
    "Simulator": "toolkit.sim",
    "OrderFrames": "toolkit._frames",
    "build_frames": "toolkit._frames",
    "CancelResult": "toolkit._cancel",
    "CancelOutcome": "toolkit._cancel",
    "StreamSession": "toolkit._stream",
    "TickerEvent": "toolkit._events",
    "TickersEvent": "toolkit._events",
    "OrderEvent": "toolkit._events",
    "BalanceEvent": "toolkit._events",
    "SessionEvent": "toolkit._events",
    "OrderBook": "toolkit._orderbook",
    "Recorder": "toolkit._recorder",
    "read_recording": "toolkit._recording",
    "replay": "toolkit._replay",
    "TickerView": "toolkit._widgets",
    "OrderStatusView": "toolkit._widgets",
    "execution_report": "toolkit._report",
    "ExecutionReport": "toolkit._report",
    "ToolkitError": "toolkit._exceptions",
    "InvalidRequest": "toolkit._exceptions",
    "PaginationLoop": "toolkit._exceptions",
    "TransportError": "toolkit._exceptions",
    "ServiceError": "toolkit._exceptions",
    "InvalidResponse": "toolkit._exceptions",
    "BadRequest": "toolkit._exceptions",
    "AuthenticationError": "toolkit._exceptions",
    "PermissionDenied": "toolkit._exceptions",
    "OrderNotFound": "toolkit._exceptions",
    "RouteNotActive": "toolkit._exceptions",
    "Conflict": "toolkit._exceptions",
    "RateLimited": "toolkit._exceptions",
    "ServiceUnavailable": "toolkit._exceptions",
}

__all__ = [
    "AuthenticationError",
    "BadRequest",
    "BalanceEvent",
    "CancelOutcome",
    "CancelResult",
    "Client",
    "Conflict",
    "ExecutionReport",
    "InvalidRequest",
    "InvalidResponse",
    "OrderBook",
    "OrderEvent",
    "OrderFrames",
    "OrderNotFound",
    "OrderStatusView",
    "PaginationLoop",
    "PermissionDenied",
    "RateLimited",
    "Recorder",
    "RouteNotActive",
    "ServiceError",
    "ServiceUnavailable",
    "SessionEvent",
    "Settings",
    "Simulator",
    "StreamSession",
    "TickerEvent",
    "TickerView",
    "TickersEvent",
    "ToolkitError",
    "TransportError",
    "__version__",
    "build_frames",
    "execution_report",
    "read_recording",
    "replay",
]

if TYPE_CHECKING:  # pragma: no cover
    from toolkit._cancel import CancelOutcome, CancelResult
    from toolkit._client import Client
    from toolkit._config import Settings
    from toolkit._events import BalanceEvent, OrderEvent, SessionEvent, TickerEvent, TickersEvent
    from toolkit._exceptions import (
        AuthenticationError,
        BadRequest,
        Conflict,
        InvalidRequest,
        InvalidResponse,
        OrderNotFound,
        PaginationLoop,
        PermissionDenied,
        RateLimited,
        RouteNotActive,
        ServiceError,
        ServiceUnavailable,
        ToolkitError,
        TransportError,
    )
    from toolkit._frames import OrderFrames, build_frames
    from toolkit._orderbook import OrderBook
    from toolkit._recorder import Recorder
    from toolkit._recording import read_recording
    from toolkit._replay import replay
    from toolkit._report import ExecutionReport, execution_report
    from toolkit._stream import StreamSession
    from toolkit._widgets import OrderStatusView, TickerView
    from toolkit.sim import Simulator


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'toolkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
