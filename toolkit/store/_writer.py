"""The writer of a store sync: fetched bodies buffered and written month by month in
chunks (in a thread, while the loop keeps fetching), and kept on a failure or interrupt."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.client._items import ListItems
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.store._checks import moment, read_body, status_field, text_field
from toolkit.store._files import Entry, StoreFiles, month_of, schema
from toolkit.store._tables import Tables, part_token

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

logger = logging.getLogger("toolkit.store")


class Writer:
    """Bodies buffered and written every ``chunk`` orders (in a thread: the event loop
    keeps fetching): new orders as a new part file per month, changed ones replaced in
    the part file that holds them (``index``)."""

    def __init__(
        self, files: StoreFiles, profile: ServiceProfile, chunk: int, index: Mapping[str, Entry]
    ) -> None:
        self.files = files
        self.tables = Tables(files, profile)
        self.index = index
        self.chunk = chunk
        self.reader = ListItems(
            DEFAULT_PROFILE.listing, profile.orders.timestamp_unit, order_bodies=True
        )
        self.buffer: dict[str, list[dict[str, Any]]] = {}
        self.buffered = 0
        self.months: set[str] = set()
        self.files_written = 0
        #: orders written so far (before the flush in progress)
        self.written = 0
        self._lock = asyncio.Lock()

    def row(self, oid: str, body: bytes, source: str, synced_ms: int) -> tuple[str, dict[str, Any]]:
        """The month and the row of order ``oid``'s fetchOrder ``body``; InvalidResponse
        naming the order and the field for a body the store could not read back."""
        text, order = read_body(oid, body)
        reader = self.reader
        created = moment(oid, order, reader, "createdAt", required=True)
        assert created is not None
        kind = text_field(oid, order, "type", required=False)
        return month_of(created), {
            "id": reader.order_id(order),
            # spec 2.4: market by default; so it is re-read by id while not final
            "type": kind.lower() if kind is not None else "market",
            "symbol": text_field(oid, order, "symbol", required=False),
            "status": status_field(oid, order),
            "createdAt": created,
            "updatedAt": moment(oid, order, reader, "updatedAt", required=False),
            "_source": source,
            "_synced_at": synced_ms,
            "body": text,
        }

    async def add(self, month: str, row: dict[str, Any]) -> None:
        self.buffer.setdefault(month, []).append(row)
        self.buffered += 1
        if self.buffered >= self.chunk:
            await self.flush()

    async def flush(self) -> None:
        async with self._lock:
            pending, self.buffer, count = self.buffer, {}, self.buffered
            self.buffered = 0
            if pending:
                await asyncio.to_thread(self._write, pending)
                self.written += count

    def _write(self, pending: Mapping[str, list[dict[str, Any]]]) -> None:
        for month, rows in sorted(pending.items()):
            new = [r for r in rows if r["id"] not in self.index]
            changed: dict[str, list[dict[str, Any]]] = {}
            for r in rows:
                if r["id"] in self.index:
                    changed.setdefault(self.index[r["id"]].file, []).append(r)
            # each part file, then its typed tables (derived from the orders written only)
            if new:
                part = self.files.add_part(month, _table(new))
                self.tables.refresh(part)
                self.files_written += 1
            for path, part_rows in sorted(changed.items()):
                before = part_token(path)
                self.files.replace_in_part(Path(path), _table(part_rows))
                self.tables.refresh(Path(path), before, [r["id"] for r in part_rows])
                self.files_written += 1
            self.months.add(month)


async def keep(writer: Writer) -> int:
    """Write what ``writer`` holds after a failure or an interrupt; returns how many
    orders this sync wrote in all. The write runs to its end even when the task is
    cancelled again meanwhile (it is one chunk at most; files appear whole or not at all:
    ``toolkit._atomic``)."""
    flush = asyncio.ensure_future(writer.flush())
    while not flush.done():
        try:
            await asyncio.shield(flush)
        except asyncio.CancelledError:
            continue  # the bodies are written first; the interrupt is raised after
        except Exception:
            break
    if not flush.cancelled() and flush.exception() is not None:
        logger.warning(
            "could not keep the orders fetched before the failure: %s", flush.exception()
        )
    return writer.written


def _table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    import pyarrow as pa

    columns = {name: [r[name] for r in rows] for name in schema().names}
    return pa.table(
        {
            n: pa.array(
                v, type=pa.int64() if n in ("createdAt", "updatedAt", "_synced_at") else None
            )
            for n, v in columns.items()
        }
    )
