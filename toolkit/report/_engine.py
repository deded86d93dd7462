"""The report's out-of-core engine: a DuckDB connection that runs on every core (on one in
a chunk worker: :data:`THREADS`) and spills to a temporary folder under a memory limit,
over Parquet files or registered frames."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from toolkit.errors import InvalidRequest

if TYPE_CHECKING:  # pragma: no cover
    import duckdb
    import pandas as pd
    import pyarrow as pa

#: what the engine may hold in memory before it spills to disk (DuckDB's syntax)
DEFAULT_MEMORY_LIMIT = "2GB"
#: the environment variable that overrides it (``TOOLKIT_REPORT_MEMORY=6GB``)
MEMORY_ENV = "TOOLKIT_REPORT_MEMORY"


#: the threads of each connection (None: one per core); a report's chunk worker sets 1,
#: as its pool already runs a process per core (more would only contend for them)
THREADS: int | None = None


def memory_limit() -> str:
    """The engine's memory limit: ``$TOOLKIT_REPORT_MEMORY``, else ``DEFAULT_MEMORY_LIMIT``."""
    return os.environ.get(MEMORY_ENV, "").strip() or DEFAULT_MEMORY_LIMIT


@contextmanager
def connection(limit: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A private in-memory DuckDB connection with a spill folder removed on exit.

    Parameters
    ----------
    limit : str, optional
        Memory limit (``"2GB"``); default :func:`memory_limit`.

    Yields
    ------
    duckdb.DuckDBPyConnection

    Raises
    ------
    InvalidRequest
        A memory limit DuckDB does not read (named with where it came from).
    """
    import duckdb

    chosen = limit or memory_limit()
    with tempfile.TemporaryDirectory(prefix="toolkit-report-") as spill:
        try:
            con = duckdb.connect(
                ":memory:",
                config={
                    "threads": THREADS or os.cpu_count() or 1,
                    "memory_limit": chosen,
                    "temp_directory": spill,
                    # row order is ours to state (ORDER BY), so DuckDB need not keep it
                    "preserve_insertion_order": False,
                },
            )
        except duckdb.Error as exc:
            where = f"${MEMORY_ENV}" if limit is None and os.environ.get(MEMORY_ENV) else "limit"
            raise InvalidRequest(f"report engine memory {where}={chosen!r}: {exc}") from None
        try:
            # a long query would draw DuckDB's progress bar into the terminal or notebook
            con.execute("SET enable_progress_bar = false")
            yield con
        finally:
            con.close()


def arrow_text(values: pd.Series) -> pa.Array:
    """``values`` as an Arrow string array for the engine (missing: null), without a Python
    object per row: pandas' own strings are Arrow already."""
    import pyarrow as pa

    got = pa.array(values.astype("str"))
    return got.combine_chunks() if isinstance(got, pa.ChunkedArray) else got
