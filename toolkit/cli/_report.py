"""``toolkit report``: the execution-quality report of an order export (what
``OrderFrames.to_parquet`` wrote), optionally with a ticker recording, as one HTML file."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from toolkit.cli._connect import check_output_dir, check_output_file, path_arg, seconds_arg


def share_arg(text: str) -> float:
    """An argparse type: a share in [0, 1] (``0.2``) or a percentage (``20%``)."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:  # nan fails both
        raise argparse.ArgumentTypeError(
            f"expected a share in [0, 1] (0.2) or a percentage (20%), got {text!r}"
        )
    return value


def count_arg(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def register(subparsers: Any) -> None:
    """Add the ``report`` subcommand to the ``toolkit`` parser."""
    p = subparsers.add_parser(
        "report",
        help="execution-quality report of exported orders, as one HTML file",
        description="Read an order export (orders.parquet, trades.parquet, "
        "evaluated_tickers.parquet, ... as OrderFrames.to_parquet writes them) and write the "
        "execution-quality report as one self-contained HTML file.",
    )
    p.add_argument(
        "--orders", type=path_arg, required=True, metavar="DIR", help="directory of the export"
    )
    p.add_argument(
        "--market",
        type=path_arg,
        metavar="ROOT",
        help="root of a recording with the watchticker channel (enables arrival slippage "
        "and markouts)",
    )
    p.add_argument("--out", type=path_arg, required=True, metavar="FILE", help="HTML file to write")
    p.add_argument(
        "--tables",
        type=path_arg,
        metavar="DIR",
        help="also write every metric table to DIR/<name>.parquet",
    )
    p.add_argument(
        "--max-quote-age",
        type=seconds_arg,
        default=60.0,
        metavar="SECONDS",
        help="older tickers are not used as the price at a moment (default 60)",
    )
    p.add_argument(
        "--min-coverage",
        type=share_arg,
        metavar="SHARE",
        help="a metric or chart resting on less than this share of the orders it applies to "
        "reads 'insufficient coverage (n of N)' (0.2 or 20%%; default 20%%)",
    )
    p.add_argument(
        "--min-orders",
        type=count_arg,
        metavar="N",
        help="likewise for fewer than N orders (default 30)",
    )
    p.set_defaults(func=run)


def load_frames(directory: Path) -> Any:
    """The export as ``OrderFrames`` when it is whole or has a manifest (which must then
    match); else (loose files) the frames present, read directly."""
    from toolkit.report._inputs import export_frames

    return export_frames(directory)


def _rule(args: argparse.Namespace) -> dict[str, Any]:
    # the report's own defaults unless given: the CLI does not import pandas to show help
    given = {"min_coverage": args.min_coverage, "min_orders": args.min_orders}
    return {k: v for k, v in given.items() if v is not None}


def run(args: argparse.Namespace) -> int:
    from toolkit.errors import InvalidRequest
    from toolkit.report import execution_report

    orders_dir = Path(args.orders)
    if not orders_dir.is_dir():
        raise InvalidRequest(f"--orders {orders_dir} is not a folder of exported frames")
    # both outputs are checked before the report is built or anything is written
    out = check_output_file(Path(args.out), "--out")
    if args.tables:
        tables = check_output_dir(Path(args.tables), "--tables")
        # the page is a file: the tables' folder can be neither it nor inside it
        if out.resolve() == tables.resolve() or out.resolve() in tables.resolve().parents:
            raise InvalidRequest(f"--tables {tables} is the --out file or inside it")
    market = None
    if args.market is not None:
        from toolkit.report._market import market_source

        # the root: the report's engine reads watchticker where it lies, watchtickers (one
        # row per pair) and the _session rows that say where the recording has gaps (a
        # damaged or foreign file among them is named)
        try:
            market = market_source(args.market)
        except InvalidRequest as exc:
            raise InvalidRequest(f"--market: {exc}") from None
    # the export's folder itself: the report reads it out of core, in chunks of orders
    report = execution_report(
        orders_dir,
        market,
        max_quote_age=args.max_quote_age,
        **_rule(args),
    )
    report.to_html(out)
    print(f"report: {out}  ({report.describe()})")
    if args.tables:
        print(f"tables: {report.to_parquet(args.tables)}")
    return 0
