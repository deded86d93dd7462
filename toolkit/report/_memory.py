"""Memory given back to the system between the steps of a large report: Arrow's pool and
glibc keep the blocks a step freed, and the process would otherwise grow by each step's
largest working set."""

from __future__ import annotations

__all__ = ["release_memory"]


def release_memory() -> None:
    """Return the memory freed so far to the system (Arrow's pool, then glibc's heap)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass
