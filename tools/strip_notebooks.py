"""Strip outputs, execution counts and volatile metadata from notebooks, so the ones in git
are documentation, never carry a run's data (or secrets); ``--check`` only reports."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
# cell metadata written by front ends on every run; keeping it makes noisy diffs
_VOLATILE_CELL_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")


def strip(nb: dict[str, Any]) -> bool:
    """Strip ``nb`` (nbformat 4 JSON) in place; True when something changed."""
    changed = False
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {})
        for key in _VOLATILE_CELL_METADATA:
            if key in meta:
                del meta[key]
                changed = True
        if cell.get("cell_type") != "code":
            continue
        if cell.get("outputs"):
            cell["outputs"] = []
            changed = True
        if cell.get("execution_count") is not None:
            cell["execution_count"] = None
            changed = True
    meta = nb.get("metadata", {})
    if "widgets" in meta:  # saved widget state is a run's output too
        del meta["widgets"]
        changed = True
    return changed


def has_outputs(nb: dict[str, Any]) -> list[int]:
    """Indexes of the cells that carry outputs or an execution count."""
    return [
        i
        for i, cell in enumerate(nb.get("cells", []))
        if cell.get("cell_type") == "code"
        and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: notebooks/)")
    parser.add_argument("--check", action="store_true", help="report, change nothing; exit 1")
    args = parser.parse_args(argv)
    paths: list[Path] = args.paths or sorted(NOTEBOOKS.glob("*.ipynb"))
    dirty = []
    for path in paths:
        nb = json.loads(path.read_text(encoding="utf-8"))
        if args.check:
            if has_outputs(nb) or "widgets" in nb.get("metadata", {}):
                dirty.append(path)
            continue
        if strip(nb):
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"stripped {path}")
    if dirty:
        for path in dirty:
            print(f"{path}: has outputs (run tools/strip_notebooks.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
