"""MkDocs hook: generate the reference pages and bring the executed notebooks before
MkDocs collects the files (see gen_pages.py)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any


def _gen_pages() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "tk_docs_gen_pages", Path(__file__).resolve().parent / "gen_pages.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_pre_build(config: Any, **_kw: Any) -> None:
    started = time.monotonic()
    _gen_pages().main()
    print(f"docs: pages generated in {time.monotonic() - started:.1f} s", file=sys.stderr)
