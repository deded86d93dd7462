"""Run every benchmark of bench/ in turn (``make bench``); each prints its own ratios
against a baseline measured in the same run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHES = (
    "bench_normalize.py",
    "bench_load.py",
    "bench_record.py",
    "bench_subscribe.py",
    "bench_book.py",
    "bench_widgets.py",
    "bench_report.py",
    "bench_faults.py",
)


def main() -> int:
    here = Path(__file__).parent
    failed = []
    for name in BENCHES:
        print(f"\n=== {name} ===", flush=True)
        if subprocess.run([sys.executable, str(here / name)]).returncode:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
