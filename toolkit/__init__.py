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
    "Simulator": "toolkit.sim",
}

__all__ = sorted([*_EXPORTS, "__version__"])

if TYPE_CHECKING:  # pragma: no cover
    from toolkit._client import Client
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
