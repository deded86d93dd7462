"""toolkit: load, record, watch and report on the orders of the trading service, from
Jupyter or the command line; ``toolkit.sim`` is a faithful local simulator of it.

Heavy modules (pandas, pyarrow, ipywidgets, matplotlib) load on first use of the name that
needs them, so ``import toolkit`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "Client": "toolkit.client",
    "Settings": "toolkit.client",
    "Simulator": "toolkit.sim",
    "ServiceProfile": "toolkit.profile",
    "OrderFrames": "toolkit.frames",
    "build_frames": "toolkit.frames",
    "CancelResult": "toolkit.client",
    "CancelOutcome": "toolkit.client",
    "StreamSession": "toolkit.stream",
    "TickerEvent": "toolkit.stream",
    "TickersEvent": "toolkit.stream",
    "OrderEvent": "toolkit.stream",
    "BalanceEvent": "toolkit.stream",
    "SessionEvent": "toolkit.stream",
    "OrderBook": "toolkit.stream",
    "Recorder": "toolkit.recording",
    "read_recording": "toolkit.recording",
    "replay": "toolkit.recording",
    "scan_recording": "toolkit.recording",
    "compact_recording": "toolkit.recording",
    "TickerView": "toolkit.widgets",
    "OrderStatusView": "toolkit.widgets",
    "execution_report": "toolkit.report",
    "OrderStore": "toolkit.store",
    "diagnose": "toolkit.doctor",
    "ExecutionReport": "toolkit.report",
    "ToolkitError": "toolkit.errors",
    "InvalidRequest": "toolkit.errors",
    "PaginationLoop": "toolkit.errors",
    "TransportError": "toolkit.errors",
    "ServiceError": "toolkit.errors",
    "InvalidResponse": "toolkit.errors",
    "BadRequest": "toolkit.errors",
    "AuthenticationError": "toolkit.errors",
    "PermissionDenied": "toolkit.errors",
    "OrderNotFound": "toolkit.errors",
    "RouteNotActive": "toolkit.errors",
    "Conflict": "toolkit.errors",
    "RateLimited": "toolkit.errors",
    "ServiceUnavailable": "toolkit.errors",
    "WriteError": "toolkit.errors",
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
    "OrderStore",
    "PaginationLoop",
    "PermissionDenied",
    "RateLimited",
    "Recorder",
    "RouteNotActive",
    "ServiceError",
    "ServiceProfile",
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
    "WriteError",
    "__version__",
    "build_frames",
    "compact_recording",
    "diagnose",
    "execution_report",
    "read_recording",
    "replay",
    "scan_recording",
]

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client import CancelOutcome, CancelResult, Client, Settings
    from toolkit.doctor import diagnose
    from toolkit.errors import (
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
        WriteError,
    )
    from toolkit.frames import OrderFrames, build_frames
    from toolkit.profile import ServiceProfile
    from toolkit.recording import (
        Recorder,
        compact_recording,
        read_recording,
        replay,
        scan_recording,
    )
    from toolkit.report import ExecutionReport, execution_report
    from toolkit.sim import Simulator
    from toolkit.store import OrderStore
    from toolkit.stream import (
        BalanceEvent,
        OrderBook,
        OrderEvent,
        SessionEvent,
        StreamSession,
        TickerEvent,
        TickersEvent,
    )
    from toolkit.widgets import OrderStatusView, TickerView


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
