"""The REST side of the service: settings, sign-in and token auth, the transport with its
retries, pagination, cancel results, the loaders and the ``Client`` facade with sync twins.

May import ``toolkit.errors``, ``toolkit.protocol``, ``toolkit.frames`` and (for
``Client.stream()``) ``toolkit.stream``; never the recorder, views, report or simulator."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_exports

__all__ = [
    "CancelOutcome",
    "CancelResult",
    "Client",
    "ClientState",
    "Environment",
    "MissingOrdersWarning",
    "Settings",
    "TokenAuth",
]

_EXPORTS = {
    "Client": "toolkit.client._client",
    "ClientState": "toolkit.client._client",
    "Settings": "toolkit.client._settings",
    "Environment": "toolkit.client._settings",
    "CancelResult": "toolkit.client._cancel",
    "CancelOutcome": "toolkit.client._cancel",
    "TokenAuth": "toolkit.client._auth",
    "MissingOrdersWarning": "toolkit.client._loaders",
}

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client._auth import TokenAuth
    from toolkit.client._cancel import CancelOutcome, CancelResult
    from toolkit.client._client import Client, ClientState
    from toolkit.client._loaders import MissingOrdersWarning
    from toolkit.client._settings import Environment, Settings

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
