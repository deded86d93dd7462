"""``toolkit demo``: the offline end-to-end demo (simulator, activity, recording, exports
and the execution-quality report), the README's first command."""

from __future__ import annotations

import argparse
from typing import Any

from toolkit.cli._connect import non_negative_int, path_arg, seconds_arg


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo",
        help="run the offline demo: simulator -> activity -> recording -> exports -> report",
        description="Start the local simulator, create activity through the toolkit, record "
        "the streams, sync an order store (listing, recorded ids, the simulator's account "
        "list), write Parquet/CSV exports and the HTML report. --out is cleared when it holds "
        "a previous demo run; a folder with other files gets a new timestamped subfolder.",
    )
    parser.add_argument(
        "--out",
        type=path_arg,
        default="out/demo",
        help="output folder (default out/demo); a previous demo run there is cleared",
    )
    parser.add_argument("--seed", type=int, default=7, help="simulator seed (default 7)")
    parser.add_argument(
        "--seconds", type=seconds_arg, default=8.0, help="how long to record (default 8)"
    )
    parser.add_argument(
        "--history",
        type=non_negative_int,
        default=2000,
        help="orders in the seeded history (default 2000)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from toolkit.demo import run_demo

    result = run_demo(
        args.out, seed=args.seed, record_seconds=args.seconds, history_orders=args.history
    )
    print(result.summary())
    return 0
