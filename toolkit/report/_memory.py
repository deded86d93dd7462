"""The memory of a large report's steps: what a step freed given back to the system (Arrow's
pool and glibc keep it otherwise, and the process grows by each step's largest working
set), and the share of the engine's limit a connection opened beside another one takes."""

from __future__ import annotations

import re

__all__ = ["half_limit", "release_memory"]


def release_memory() -> None:
    """Return the memory freed so far to the system (Arrow's pool, then glibc's heap)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


#: bytes per unit of a DuckDB memory limit
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def half_limit(limit: str) -> str | None:
    """Half of a DuckDB memory limit (``"2GB"`` -> ``"1000MB"``); None for a limit of
    another form (a share, ``"80%"``, or one DuckDB will refuse, named by it)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*", limit)
    unit = m.group(2).upper() if m else None
    if m is None or unit not in _UNITS:
        return None
    return f"{max(1, int(float(m.group(1)) * _UNITS[unit] / 2 / 10**6))}MB"
