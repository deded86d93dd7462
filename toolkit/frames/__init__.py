"""Raw order bodies to typed pandas frames (orders, trades, fees, evaluatedTickers, fills),
their schema, and the Parquet and CSV exports.

May import ``toolkit.errors`` and ``toolkit.protocol`` only (plus pandas and pyarrow)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_exports

__all__ = [
    "OrderFrames",
    "RawOrder",
    "build_frames",
]

_EXPORTS = {
    "OrderFrames": "toolkit.frames._frames",
    "build_frames": "toolkit.frames._frames",
    "RawOrder": "toolkit.frames._frames",
}

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.frames._frames import OrderFrames, RawOrder, build_frames

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
