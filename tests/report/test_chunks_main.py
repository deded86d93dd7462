"""A script without a ``__main__`` guard builds its report's parts in a pool once: the
workers never run the script again (toolkit/report/_chunks.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from _parts_cases import CASES, export

SCRIPT = """
import sys
sys.path[:0] = {paths!r}
from toolkit.report import _chunks
from toolkit.report._parts import order_parts

_chunks.POOL_MIN_ORDERS = 0
print("started", flush=True)
parts = order_parts({folder!r}, chunk_orders=1)
print("parts", len(parts.per_order), parts.orders, flush=True)
parts.close()
"""


def test_a_script_without_a_main_guard_runs_once(tmp_path: Path) -> None:
    frames = next(c for c in CASES if c.name == "routing").frames()
    folder = export(frames, tmp_path / "export")
    script = tmp_path / "report_script.py"
    code = SCRIPT.format(paths=[p for p in sys.path if p], folder=str(folder))
    script.write_text(textwrap.dedent(code))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    orders = frames.orders["id"].nunique()
    assert done.stdout.splitlines() == ["started", f"parts {orders} {orders}"]
