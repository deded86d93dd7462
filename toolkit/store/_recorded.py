"""Order bodies a recording already holds: a ``watchOrders`` notification has the same
schema and formatter as the fetchOrder answer (spec 2.4), so the latest notification of
an order is its body at that ``updatedAt``. A sync takes it instead of fetching the order
again when it is the order's current state:

- a final state (it never changes again), newer than the stored one; or
- the state the listing shows for a limit order (same status and ``updatedAt``).

Only recordings made with the store's own account are read for bodies (each file names
the account it was recorded with, ``toolkit.recording._rows.META_ACCOUNT``): another
account's notifications, or a recording of an older version that names none, give ids
only, and those are fetched as before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.errors import InvalidRequest

logger = logging.getLogger("toolkit.store")

__all__ = ["Recorded", "recorded_bodies", "recorded_ids"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """The latest recorded notification of one order: its ``updatedAt`` (Unix ms, as the
    recording read it), its status as sent, and the order object as JSON text."""

    updated_ms: int
    status: str
    body: bytes


def recorded_ids(roots: Iterable[str | Path]) -> tuple[dict[str, None], int | None]:
    """Every order id seen on ``watchorders`` in the recordings at ``roots`` (first-seen
    order) and the earliest receive time of those messages (Unix ms), or None."""
    from toolkit.recording._read import read_recording_table

    ids: dict[str, None] = {}
    since: int | None = None
    for root in roots:
        path = Path(root)
        if not path.is_dir():
            raise InvalidRequest(f"no recording at {path} (a folder written by toolkit record)")
        table = read_recording_table(
            path, "watchorders", columns=["order_id", "received_at"], per_pair=False
        )
        for oid in table.column("order_id").to_pylist():
            if oid:
                ids.setdefault(oid, None)
        if table.num_rows:
            import pyarrow as pa
            import pyarrow.compute as pc

            first = pc.min(table.column("received_at").cast(pa.int64())).as_py()
            if first is not None:
                ms = int(first) // 1_000_000
                since = ms if since is None else min(since, ms)
    return ids, since


def _files(root: Path) -> list[Path]:
    """The recording's watchorders files, as its own readers list them: the files a
    compacted file replaces (a compaction renamed into place, not yet done deleting, or
    killed in between) are left out, so no notification is read twice."""
    from toolkit.recording._layout import list_files

    return [Path(p) for p in list_files(root, ["watchorders"])]


def recorded_bodies(
    roots: Iterable[str | Path], account: Mapping[str, Any] | None
) -> dict[str, Recorded]:
    """The latest notification of every order in the recordings at ``roots`` made with
    ``account`` (``toolkit.client._identity.account_of``), by ``updatedAt`` and then by
    arrival; nothing without an account. A file that cannot be read gives nothing (its
    ids still come from the recording's id pass) and is logged."""
    if not account:
        return {}
    import pyarrow.parquet as pq

    from toolkit.recording._rows import account_from_metadata

    wanted = dict(account)
    best: dict[str, tuple[int, int, str]] = {}
    skipped = 0
    for root in roots:
        for path in _files(Path(root)):
            try:
                parquet = pq.ParquetFile(path)
                if account_from_metadata(parquet.schema_arrow.metadata) != wanted:
                    skipped += 1
                    continue
                batches = parquet.iter_batches(
                    columns=["order_id", "updated_at", "received_at", "raw"]
                )
                for batch in batches:
                    _keep_latest(batch, best)
            except Exception as exc:  # a damaged file: its orders are fetched instead
                logger.warning("recorded order bodies not read from %s: %s", path, exc)
    if skipped:
        logger.info(
            "%d recording file(s) of another account (or of an older version, which names "
            "none): their orders are fetched, not taken from the recording",
            skipped,
        )
    out: dict[str, Recorded] = {}
    for oid, (updated, _received, raw) in best.items():
        found = _message(raw)
        if found is None:
            continue
        status, body = found
        out[oid] = Recorded(updated, status, body)
    return out


def _keep_latest(batch: Any, best: dict[str, tuple[int, int, str]]) -> None:
    import pyarrow as pa

    ids = batch.column("order_id").to_pylist()
    updated = batch.column("updated_at").cast(pa.int64()).to_pylist()
    received = batch.column("received_at").cast(pa.int64()).to_pylist()
    raws = batch.column("raw")
    for i, oid in enumerate(ids):
        upd = updated[i]
        if not oid or upd is None:
            continue
        key = (upd, received[i])
        held = best.get(oid)
        if held is None or key >= held[:2]:
            raw = raws[i].as_py()
            if raw:
                best[oid] = (upd, received[i], raw)


def _message(raw: str) -> tuple[str, bytes] | None:
    """The order object of a ``{"channel", "message"}`` text and its status; None when
    it is not one (such a notification is fetched instead)."""
    try:
        frame = json.loads(raw)
    except ValueError:
        return None
    message = frame.get("message") if isinstance(frame, dict) else None
    status = message.get("status") if isinstance(message, dict) else None
    if not isinstance(status, str) or not status:
        return None
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        return status, text.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError):
        return None
