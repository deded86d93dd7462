"""Chunk work that fails, for the pool tests (imported by the worker processes, so it is
a module of its own, not a test's local function)."""

from __future__ import annotations

import multiprocessing
import os

from toolkit.errors import InvalidRequest
from toolkit.report._chunks import ChunkOut, ChunkSetting, ChunkTask, chunk_work


def second_chunk_fails(setting: ChunkSetting, task: ChunkTask) -> ChunkOut:
    """The real chunk work, except that chunk 2 (index 1) raises, naming its process."""
    if task.index == 1:
        raise InvalidRequest(f"chunk 2 is broken (in process {os.getpid()})")
    return chunk_work(setting, task)


def worker_dies(setting: ChunkSetting, task: ChunkTask) -> ChunkOut:
    """Chunk 2's worker ends at once, as one the system kills (out of memory); never the
    test's own process (no pool: an error instead)."""
    if task.index == 1:
        if multiprocessing.parent_process() is None:
            raise RuntimeError("chunk 2 ran in the test's process, not in a worker")
        os._exit(9)
    return chunk_work(setting, task)
