"""Measure the per-order table built out of core in chunks (``order_parts``) against today's
in-memory path (``per_order(load_frames(export), root)``): wall time and peak RSS (the child
process's VmHWM), each run in a fresh process, the median of ``--rounds``.

    python tools/measure_parts.py /tmp/engine-bench/o1m8 --chunks 100000 250000 500000
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

_CHILD = r"""
import json, sys, time, warnings
from pathlib import Path
warnings.simplefilter("ignore")
base, what = Path(sys.argv[1]), sys.argv[2]
export, root = base / "export", base / "recording"
start = time.perf_counter()
if what == "today":
    from toolkit.report._inputs import export_frames
    from toolkit.report._market import market_source
    from toolkit.report._per_order import per_order
    rows = len(per_order(export_frames(export), market_source(root)))
else:
    from toolkit.report._parts import order_parts
    parts = order_parts(export, root, chunk_orders=int(what))
    rows = parts.orders
    parts.close()
took = time.perf_counter() - start
hwm = next(
    int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM")
)
print(json.dumps({"seconds": took, "peak_mib": hwm / 1024, "rows": rows}))
"""


def run(base: Path, what: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(base), what],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="a folder with export/ and recording/")
    parser.add_argument("--chunks", type=int, nargs="+", default=[100_000, 250_000, 500_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-today", action="store_true", help="skip today's path")
    args = parser.parse_args()
    runs = ([] if args.no_today else ["today"]) + [str(c) for c in args.chunks]
    for what in runs:
        got = []
        for _ in range(args.rounds):
            started = time.time()
            got.append(run(args.base, what))
            print(f"  {what}: {got[-1]} (at {started:.0f})", flush=True)
        seconds = statistics.median(g["seconds"] for g in got)
        peak = statistics.median(g["peak_mib"] for g in got)
        label = "per_order(load_frames)" if what == "today" else f"order_parts chunk={what}"
        print(f"{label}: median {seconds:.1f} s, peak RSS {peak:.0f} MiB ({args.rounds} rounds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
