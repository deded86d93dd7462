"""Replay of a recording as the same typed events as the live stream, in recorded order,
so the OrderBook, the live views and the report take a recording as a live connection.

``replay(root)`` works both as ``async for`` and as ``for``; ``speed=None`` replays as
fast as possible, ``speed=1.0`` in real time (2.0 twice as fast), with an injectable clock.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any

from toolkit.errors import InvalidRequest
from toolkit.profile import DEFAULT_PROFILE, ServiceProfile
from toolkit.recording._badfiles import (
    BadFile,
    _partition,
    check_on_bad_file,
    recording_files,
    warn_skipped,
)
from toolkit.recording._layout import listed_again
from toolkit.recording._read import (
    FILE_COLUMN,
    TimeLike,
    _channels,
    _date,
    _timestamp_ns,
    file_profiles,
    read_table,
    recording_root,
)
from toolkit.recording._rows import SESSION_CHANNEL
from toolkit.stream._events import Event, SessionEvent, event_from_message

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["Replay", "events_from_table", "replay"]

_BATCH = 8_192
_INF = float("inf")
_COLUMNS = [
    "received_at",
    "connection_id",
    "seq",
    "channel",
    "kind",
    "detail",
    "gap_start",
    "gap_end",
    "raw",
]


def _ns_list(column: Any) -> list[int | None]:
    import pyarrow as pa

    return column.cast(pa.int64()).to_pylist()  # type: ignore[no-any-return]


def events_from_table(
    table: pa.Table,
    profile: ServiceProfile = DEFAULT_PROFILE,
    *,
    profiles: Mapping[str, ServiceProfile] | None = None,
) -> Iterator[Event]:
    """The events of recorded rows, in the table's order: data rows through
    ``event_from_message`` under ``profile`` (exactly as the live stream builds them),
    session rows as ``SessionEvent``s. A data row whose raw text is not a data message is
    skipped. ``profiles``: the profile of each file, for a table with the ``__filename``
    column of ``read_table(..., with_file=True)`` (``profile`` for a file not in it)."""
    by_file = profiles is not None and FILE_COLUMN in table.column_names
    columns = [*_COLUMNS, FILE_COLUMN] if by_file else _COLUMNS
    for batch in table.select(columns).to_batches(max_chunksize=_BATCH):
        received = _ns_list(batch.column("received_at"))
        conns = batch.column("connection_id").to_pylist()
        seqs = batch.column("seq").to_pylist()
        channels = batch.column("channel").to_pylist()
        kinds = batch.column("kind").to_pylist()
        details = batch.column("detail").to_pylist()
        gap_starts = _ns_list(batch.column("gap_start"))
        gap_ends = _ns_list(batch.column("gap_end"))
        raws = batch.column("raw").to_pylist()
        files = batch.column(FILE_COLUMN).to_pylist() if by_file else None
        for i in range(batch.num_rows):
            recv = received[i] or 0
            conn = conns[i] or ""
            seq = seqs[i] if seqs[i] is not None else 0
            if channels[i] == SESSION_CHANNEL:
                yield SessionEvent(
                    channel=SESSION_CHANNEL,
                    received_at_ns=recv,
                    connection_id=conn,
                    seq=seq,
                    raw=None,
                    kind=kinds[i],
                    detail=details[i] or "",
                    gap_start_ns=gap_starts[i],
                    gap_end_ns=gap_ends[i],
                )
                continue
            mapping = profile
            if files is not None and profiles is not None:
                mapping = profiles.get(files[i], profile)
            try:
                message = json.loads(raws[i])
                yield event_from_message(
                    message, received_at_ns=recv, connection_id=conn, seq=seq, profile=mapping
                )
            except (TypeError, ValueError):
                continue  # a row the live stream would have ignored too


class Replay:
    """An iterable of the recorded events of ``root``, sync (``for``) or async
    (``async for``); see :func:`replay`. Each iteration reads the recording afresh, one
    date partition at a time, so memory is bounded by a day of recording."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        speed: float | None = None,
        channels: str | Iterable[str] | None = None,
        start: TimeLike | None = None,
        end: TimeLike | None = None,
        symbols: Sequence[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] = time.sleep,
        asleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        profile: ServiceProfile | None = None,
        on_bad_file: str = "raise",
    ) -> None:
        if speed is not None and not (
            isinstance(speed, int | float) and not isinstance(speed, bool) and 0 < speed < _INF
        ):
            raise InvalidRequest(
                f"speed must be a finite number > 0, or None for as fast as possible; got {speed!r}"
            )
        self.root = recording_root(root)
        self.speed = speed
        self.channels = channels
        self.start = start
        self.end = end
        self.symbols = symbols
        self._clock = clock
        self._sleep = sleep
        self._asleep = asleep
        #: the payload mapping events are built with (None: the recording's own)
        self.profile = profile
        self.on_bad_file = check_on_bad_file(on_bad_file)
        #: the damaged or foreign files the last iteration left out (on_bad_file="skip")
        self.skipped_files: list[BadFile] = []

    def __repr__(self) -> str:
        return f"Replay({str(self.root)!r}, speed={self.speed!r})"

    def _files_by_date(self) -> dict[str, list[str]]:
        """The files to replay by date partition, checked first, all of them: a damaged
        or foreign one stops the replay before its first event (InvalidRequest naming it),
        or is left out, counted in ``skipped_files`` and warned about once."""
        good, bad = self._files()
        self.skipped_files = bad
        warn_skipped(self.root, bad, stacklevel=5)
        by_date: dict[str, list[str]] = {}
        for path in good:
            by_date.setdefault(_partition(path)[1], []).append(path)
        return dict(sorted(by_date.items()))

    def _files(self, dates: Sequence[str] | None = None) -> tuple[list[str], list[BadFile]]:
        """The files of the window (only the dates it spans, only the files whose names
        say they may hold a row of it), checked, and those left out."""
        start = None if self.start is None else _timestamp_ns(self.start)
        end = None if self.end is None else _timestamp_ns(self.end)
        return listed_again(
            lambda: recording_files(
                self.root,
                _channels(self.channels),
                dates,
                first_date=None if start is None else _date(start),
                last_date=None if end is None else _date(end),
                start_ns=start,
                end_ns=end,
                on_bad_file=self.on_bad_file,
            )
        )

    def _read_date(self, date: str, files: list[str]) -> pa.Table:
        """One date's rows; its files listed again when one is gone meanwhile (a
        compaction replaced it: the new listing finds the compacted file instead)."""
        given = [files]

        def read() -> pa.Table:
            if given:
                listed = given.pop()
            else:
                listed, bad = self._files([date])
                self.skipped_files.extend(b for b in bad if b not in self.skipped_files)
            return read_table(
                self.root,
                self.channels,
                start=self.start,
                end=self.end,
                symbols=self.symbols,
                columns=_COLUMNS,
                dates=[date],
                per_pair=False,
                with_file=self.profile is None,
                on_bad_file=self.on_bad_file,
                skipped=self.skipped_files,
                files=listed,
            )

        return listed_again(read)

    def _events(self) -> Iterator[Event]:
        import pyarrow.compute as pc

        for date, files in self._files_by_date().items():
            table = self._read_date(date, files)
            if self.profile is not None:
                yield from events_from_table(table, self.profile)
                continue
            data = pc.not_equal(table.column("channel"), SESSION_CHANNEL)
            paths = pc.unique(table.column(FILE_COLUMN).filter(data)).to_pylist()
            yield from events_from_table(table, profiles=file_profiles(paths))

    def _delays(self) -> Iterator[tuple[Event, float]]:
        """Each event with how long to wait before handing it out (0 when unpaced)."""
        first_ns: int | None = None
        started = 0.0
        for event in self._events():
            if self.speed is None:
                yield event, 0.0
                continue
            if first_ns is None:
                first_ns = event.received_at_ns
                started = self._clock()
            due = started + (event.received_at_ns - first_ns) / 1e9 / self.speed
            yield event, due - self._clock()

    def __iter__(self) -> Iterator[Event]:
        for event, delay in self._delays():
            if delay > 0:
                self._sleep(delay)
            yield event

    async def __aiter__(self) -> AsyncIterator[Event]:
        count = 0
        for event, delay in self._delays():
            if delay > 0:
                await self._asleep(delay)
            else:
                count += 1
                if count % 1024 == 0:
                    # unpaced replay of a long recording must not starve the loop
                    await asyncio.sleep(0)
            yield event


def replay(
    root: str | os.PathLike[str],
    speed: float | None = None,
    *,
    channels: str | Iterable[str] | None = None,
    start: TimeLike | None = None,
    end: TimeLike | None = None,
    symbols: Sequence[str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Any] = time.sleep,
    asleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    profile: ServiceProfile | None = None,
    on_bad_file: str = "raise",
) -> Replay:
    """The recorded events of ``root`` in their order (received_at, then connection id
    and seq), as the typed events of the live stream (``TickerEvent``, ``OrderEvent``, ...,
    and ``SessionEvent`` for connects, gaps and drops).

    ``async for event in tk.replay(root): ...`` or ``for event in tk.replay(root): ...``.
    ``speed=None`` hands events out as fast as possible; ``speed=1.0`` keeps the recorded
    spacing (``2.0`` halves it), waiting with ``sleep`` (sync) or ``asleep`` (async) on
    ``clock`` (monotonic seconds) - tests inject a fake clock. ``channels``, ``start``,
    ``end`` and ``symbols`` filter as in ``read_recording``. Each event is built under the
    profile its file was written under (the file's metadata), or ``profile``.
    InvalidRequest at once when ``root`` is empty, does not exist or is no recording
    (no ``channel=*/`` folders nor ``_wal/``), or for a ``speed`` that is not > 0.

    A damaged or foreign file among those replayed (empty, truncated, not Parquet,
    another dataset's) stops the replay before its first event with InvalidRequest
    naming it; ``on_bad_file="skip"`` replays the rest, warns once (how many, the first)
    and lists them in ``skipped_files`` of the returned :class:`Replay`.
    """
    return Replay(
        root,
        speed=speed,
        channels=channels,
        start=start,
        end=end,
        symbols=symbols,
        clock=clock,
        sleep=sleep,
        asleep=asleep,
        profile=profile,
        on_bad_file=on_bad_file,
    )
