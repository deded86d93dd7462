"""The store reads a recording's order notifications as the recording's own readers list
them: a compaction killed after renaming its file into place, before deleting the files
it replaces, leaves both on disk, and the store must not read the replaced ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolkit.recording import _compact
from toolkit.recording._compact import compact_recording
from toolkit.recording._files import write_rows
from toolkit.recording._rows import row_from_message
from toolkit.store import _recorded

T0 = 1_795_305_600 * 10**9  # 2026-11-22T00:00:00Z
MINUTE = 60 * 10**9


def _orders(root: Path) -> None:
    for n in range(3):
        message = {"channel": "watchorders", "message": {"id": f"o{n}", "status": "OPEN"}}
        row = row_from_message(message, received_at_ns=T0 + n * MINUTE, connection_id="c", seq=n)
        write_rows(root, [row], f"{T0 + n * MINUTE:020d}-2-{n:06d}")


def test_files_replaced_by_a_compacted_file_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _orders(tmp_path)
    assert len(_recorded._files(tmp_path)) == 3

    class Killed(BaseException):
        pass

    def killed(*_: Any, **__: Any) -> None:
        raise Killed

    monkeypatch.setattr(_compact, "_delete", killed)
    with pytest.raises(Killed):
        compact_recording(tmp_path, "watchorders", clock_ns=lambda: T0 + 10 * 86_400 * 10**9)
    on_disk = sorted(tmp_path.glob("channel=watchorders/date=*/*.parquet"))
    assert len(on_disk) == 4  # the compacted file and the three it replaces
    files = _recorded._files(tmp_path)
    assert len(files) == 1 and "-compact-" in files[0].name
    ids, _since = _recorded.recorded_ids([tmp_path])
    assert sorted(ids) == ["o0", "o1", "o2"]
