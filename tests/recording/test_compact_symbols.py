"""Compaction sorts a day by symbol then time, in row groups of one symbol each (Parquet
statistics min = max), so ``scan_recording(..., symbols=)``, ``read_recording`` and
``replay`` read only the row groups of the pairs asked for (a file system that records
every byte range read says which), matching pairs whatever their case as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from _tick_recording import HOUR, SYMBOLS, T0, content, write_tick_files

from toolkit.recording import _bysymbol, compact_recording, read_recording, replay, scan_recording
from toolkit.recording._files import write_rows
from toolkit.recording._rows import row_from_message
from toolkit.stream._events import TickerEvent

LATER = T0 + 3 * 24 * HOUR  # "now": the day recorded is over
FILES, PER_FILE = 30, 500  # 5,000 rows of each of the three pairs
MIXED = ("stETH/BRL", "STETH/BRL")  # one pair as the service may spell it, two ways


def _now() -> int:
    return LATER


def _mixed_rows(start_ns: int) -> list[Any]:
    rows = []
    for i in range(2 * _bysymbol.MIN_ROW_GROUP):
        symbol = MIXED[i % 2]
        message = {
            "channel": "watchticker",
            "message": {"symbol": symbol, "bid": "1", "ask": "2", "last": "1.5"},
        }
        rows.append(
            row_from_message(message, received_at_ns=start_ns + i, connection_id="c2", seq=i)
        )
    return rows


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("day")
    write_tick_files(root, T0, FILES, PER_FILE, 10**9)
    write_rows(root, _mixed_rows(T0 + 20 * HOUR), "mixed")
    return root


@pytest.fixture(scope="module")
def compacted(day: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compacted")
    for path in day.rglob("*.parquet"):
        target = root / path.relative_to(day)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    compact_recording(root, clock_ns=_now)
    return root


def _tick_file(root: Path) -> Path:
    (path,) = root.glob("channel=watchticker/date=*/*.parquet")
    return path


def _groups(path: Path) -> list[tuple[str, str]]:
    """(min, max) of ``symbol`` of each row group of a file, from its statistics."""
    meta = pq.ParquetFile(path).metadata
    index = meta.schema.to_arrow_schema().get_field_index("symbol")
    out = []
    for i in range(meta.num_row_groups):
        stats = meta.row_group(i).column(index).statistics
        assert stats is not None and stats.has_min_max
        out.append((stats.min, stats.max))
    return out


def test_a_compacted_day_is_sorted_by_symbol_one_symbol_per_row_group(
    day: Path, compacted: Path
) -> None:
    groups = _groups(_tick_file(compacted))
    assert all(low == high for low, high in groups)
    # every pair, in order, each its own row groups
    assert list(dict.fromkeys(low for low, _ in groups)) == sorted([*SYMBOLS, *MIXED])
    # and nothing lost nor doubled, in the readers' order as before
    before = read_recording(day, columns="all")
    after = read_recording(compacted, columns="all")
    assert content(after.to_dict("records")) == content(before.to_dict("records"))
    assert after["received_at"].is_monotonic_increasing


def test_a_symbol_larger_than_a_group_streams_in_row_groups_in_time_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # groups of 1,875 rows at most: each pair (5,000 rows) a group of its own, spilled to
    # a temporary file in one pass, then streamed from it in row groups of 1,000
    monkeypatch.setattr(_bysymbol, "ROW_GROUP", 1_000)
    write_tick_files(tmp_path, T0, FILES, PER_FILE, 10**9)
    before = read_recording(tmp_path, "watchticker", columns="all")
    compact_recording(tmp_path, clock_ns=_now)
    path = _tick_file(tmp_path)
    assert [low for low, _ in _groups(path)] == [s for s in sorted(SYMBOLS) for _ in range(5)]
    table = pq.read_table(path, columns=["symbol", "received_at"])
    for symbol in SYMBOLS:
        times = table.filter(pa.compute.equal(table["symbol"], symbol))["received_at"]
        assert times.to_pylist() == sorted(times.to_pylist())
    after = read_recording(tmp_path, "watchticker", columns="all")
    assert content(after.to_dict("records")) == content(before.to_dict("records"))
    assert not list(tmp_path.rglob(".part-*"))  # the spill files are gone


def test_a_crash_while_spilling_leaves_the_files_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_bysymbol, "ROW_GROUP", 1_000)
    write_tick_files(tmp_path, T0, FILES, PER_FILE, 10**9)
    before = read_recording(tmp_path, columns="all")

    class Crash(BaseException):
        pass

    def crash(*args: Any) -> Any:
        raise Crash

    monkeypatch.setattr(_bysymbol, "_read_spill", crash)  # spilled, then killed
    with pytest.raises(Crash):
        compact_recording(tmp_path, clock_ns=_now)
    assert not list(tmp_path.rglob(".part-*"))
    assert len(list(tmp_path.glob("channel=watchticker/date=*/*.parquet"))) == FILES
    after = read_recording(tmp_path, columns="all")
    assert content(after.to_dict("records")) == content(before.to_dict("records"))


class _Spy(pafs.FileSystemHandler):
    """The local file system, recording every (path, offset, length) read."""

    def __init__(self) -> None:
        self.local = pafs.LocalFileSystem()
        self.reads: list[tuple[str, int, int]] = []

    def __eq__(self, other: object) -> bool:
        return other is self

    def __ne__(self, other: object) -> bool:
        return other is not self

    __hash__ = object.__hash__

    def get_type_name(self) -> str:
        return "spy"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return list(self.local.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return list(self.local.get_file_info(selector))

    def open_input_file(self, path: str) -> pa.NativeFile:
        spy = self

        class Reading:
            def __init__(self) -> None:
                self.file = open(path, "rb")  # noqa: SIM115 (closed by PythonFile)
                self.closed = False

            def read(self, n: int = -1) -> bytes:
                at = self.file.tell()
                data = self.file.read(n)
                spy.reads.append((path, at, len(data)))
                return data

            def seek(self, offset: int, whence: int = 0) -> int:
                return self.file.seek(offset, whence)

            def tell(self) -> int:
                return self.file.tell()

            def close(self) -> None:
                self.closed = True
                self.file.close()

            def readable(self) -> bool:
                return True

            def seekable(self) -> bool:
                return True

            def writable(self) -> bool:
                return False

        return pa.PythonFile(Reading(), mode="r")

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_input_file(path)

    def _refuse(self, *args: Any) -> Any:  # writing: never asked of a read
        raise NotImplementedError

    copy_file = create_dir = delete_dir = delete_dir_contents = delete_file = _refuse
    delete_root_dir_contents = move = open_append_stream = open_output_stream = _refuse


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Spy]:
    """Every dataset the readers make reads through the spy."""
    handler = _Spy()
    real = ds.dataset

    def dataset(source: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs["filesystem"] = pafs.PyFileSystem(handler)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ds, "dataset", dataset)
    yield handler


def _row_groups_read(path: Path, reads: list[tuple[str, int, int]]) -> set[int]:
    """The row groups of ``path`` whose column chunks a read touched; not the read of the
    footer (the file's last 64 KiB, whatever they hold: a small file's last row groups)."""
    meta = pq.ParquetFile(path).metadata
    size = path.stat().st_size
    reads = [(p, at, n) for p, at, n in reads if at + n != size]
    touched = set()
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        for c in range(group.num_columns):
            column = group.column(c)
            start = column.dictionary_page_offset or column.data_page_offset
            end = start + column.total_compressed_size
            if any(p == str(path) and at < end and start < at + n for p, at, n in reads):
                touched.add(i)
    return touched


def _groups_of(path: Path, symbols: set[str]) -> set[int]:
    return {i for i, (low, _) in enumerate(_groups(path)) if low in symbols}


@pytest.mark.parametrize("asked", [["eth/brl"], ["ETH/BRL", "Sol/Brl"], ["STETH/brl"]])
def test_a_scan_by_symbol_reads_only_the_row_groups_of_those_symbols(
    compacted: Path, spy: _Spy, asked: list[str]
) -> None:
    path = _tick_file(compacted)
    lazy = scan_recording(compacted, "watchticker", symbols=asked)
    table = lazy.to_table()
    wanted = {s for s in [*SYMBOLS, *MIXED] if s.upper() in {a.upper() for a in asked}}
    assert set(table.column("symbol").to_pylist()) == wanted
    assert _row_groups_read(path, spy.reads) == _groups_of(path, wanted)
    # the eager read and the replay take the same pruned path
    spy.reads.clear()
    frame = read_recording(compacted, "watchticker", symbols=asked)
    assert len(frame) == table.num_rows
    assert _row_groups_read(path, spy.reads) == _groups_of(path, wanted)
    spy.reads.clear()
    events = list(replay(compacted, channels="watchticker", symbols=asked))
    assert len([e for e in events if isinstance(e, TickerEvent)]) == table.num_rows
    assert _row_groups_read(path, spy.reads) == _groups_of(path, wanted)


def test_a_scan_without_symbols_reads_every_row_group(compacted: Path, spy: _Spy) -> None:
    # the spy sees what it should: without a symbol every row group is read
    path = _tick_file(compacted)
    assert scan_recording(compacted, "watchticker").to_table().num_rows == 3 * 5_000 + 8_192
    assert _row_groups_read(path, spy.reads) == set(range(len(_groups(path))))


def test_plan_groups_bounds_a_pass_and_keeps_the_order() -> None:
    rows = _bysymbol.ROW_GROUP
    counts: list[tuple[str | None, int]] = [
        ("A", 10),
        ("B", rows),
        ("C", 3 * rows),
        ("D", 5),
        (None, 7),
    ]
    groups = _bysymbol.plan_groups(counts)
    assert [g for group in groups for g in group] == counts
    assert [[s for s, _ in g] for g in groups] == [["A"], ["B"], ["C"], ["D", None]]
    # past GROUPS groups of a row group each, a group grows instead
    many: list[tuple[str | None, int]] = [(f"S{i:03d}", rows // 2) for i in range(100)]
    planned = _bysymbol.plan_groups(many)
    assert len(planned) <= 2 * _bysymbol.GROUPS  # consecutive groups hold > a limit
