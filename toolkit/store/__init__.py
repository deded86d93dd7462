"""The local order store (``tk.OrderStore``): order bodies as Hive-partitioned Parquet kept
current by sync, fed live by followers. May import errors, protocol, profile, frames,
client, stream, recording, _lazy, _atomic."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_exports

__all__ = ["Follower", "OrderStore", "StoreLocked", "SyncResult"]

_EXPORTS = {
    "Follower": "toolkit.store._follow",
    "OrderStore": "toolkit.store._store",
    "StoreLocked": "toolkit.store._files",
    "SyncResult": "toolkit.store._sync",
}

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.store._files import StoreLocked
    from toolkit.store._follow import Follower
    from toolkit.store._store import OrderStore
    from toolkit.store._sync import SyncResult

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
