"""``OrderStore("")`` is refused before anything is made: an empty path would be the
current folder, which a sync would fill with a store (docs/src/guide/errors.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import InvalidRequest
from toolkit.store import OrderStore


@pytest.mark.parametrize("root", ["", "   "], ids=["empty", "blank"])
def test_an_empty_store_path_is_refused_before_anything_is_made(
    root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidRequest, match="needs a folder path"):
        OrderStore(root)
    assert list(tmp_path.iterdir()) == []
