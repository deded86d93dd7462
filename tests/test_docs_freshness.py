"""docs/tools/gen_pages.py shows a notebook's executed copy only while it was made from
today's notebook and code: a hash of both is stamped in the copy and compared at the next
build, so a change of the code alone (the notebook untouched) re-executes it."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def gen_pages() -> Any:
    spec = importlib.util.spec_from_file_location(
        "tk_gen_pages", ROOT / "docs" / "tools" / "gen_pages.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_executed_copy_is_stale_once_the_code_changes(tmp_path: Path) -> None:
    g = gen_pages()
    source = tmp_path / "nb.ipynb"
    code = tmp_path / "mod.py"
    executed = tmp_path / "executed.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), source)
    code.write_text("x = 1\n")
    nbformat.write(nbformat.v4.new_notebook(), executed)
    # a copy without a stamp (as the notebook tests write it), newer than its inputs
    os.utime(source, (1, 1))
    os.utime(code, (1, 1))
    stamp = g.inputs_hash(source, [code], root=tmp_path)
    assert g.is_fresh(executed, source, [code], stamp)
    assert nbformat.read(executed, as_version=4).metadata[g.STAMP_KEY] == stamp  # stamped
    # the code changes, its file's time set back: the stamp still tells
    code.write_text("x = 2\n")
    os.utime(code, (1, 1))
    changed = g.inputs_hash(source, [code], root=tmp_path)
    assert changed != stamp and not g.is_fresh(executed, source, [code], changed)
    # an unstamped copy older than a code file is stale too
    other = tmp_path / "other.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), other)
    os.utime(other, (0, 0))
    assert not g.is_fresh(other, source, [code], changed)
    assert not g.is_fresh(tmp_path / "missing.ipynb", source, [code], changed)
