"""``toolkit load``: load the account's orders into DataFrames and write them as Parquet or
CSV files, configured from the environment like ``Client.from_env()``."""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Mapping

from toolkit.cli._connect import (
    ENV_HELP,
    add_connection_arguments,
    check_output_dir,
    client_from_args,
    path_arg,
    positive_int,
)
from toolkit.cli._ids import read_ids_file as read_ids_file
from toolkit.errors import InvalidRequest


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "load",
        help="load orders into Parquet/CSV files",
        description="Load the account's limit orders (or the orders named in --ids-file, "
        "or every order seen in a recording with --ids-from) "
        "with fetchOrder and write orders, trades, fees, evaluated_tickers and fills. " + ENV_HELP,
    )
    parser.add_argument(
        "--status",
        action="append",
        help="status filter: one of the nine statuses, ACTIVE or FINALIZED, or a comma "
        "list; repeatable (default: all nine)",
    )
    parser.add_argument("--since", help="createdAt on or after (ISO date/datetime, UTC)")
    parser.add_argument("--until", help="createdAt before (ISO date/datetime, UTC)")
    parser.add_argument("--symbol", action="append", dest="symbols", help="BASE/QUOTE; repeatable")
    parser.add_argument(
        "--ids-file", type=path_arg, help="file with one order id per line (# comments)"
    )
    parser.add_argument(
        "--ids-from",
        type=path_arg,
        metavar="ROOT",
        help="a recording (toolkit record --out ROOT): load every order id seen in it",
    )
    add_connection_arguments(parser)
    parser.add_argument("--profile-id", help="profile id (TOOLKIT_PROFILE_ID)")
    parser.add_argument("--concurrency", type=positive_int, help="requests in flight (default 16)")
    parser.add_argument("--out", type=path_arg, required=True, help="output directory")
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    parser.add_argument("--exact", action="store_true", help="exact decimals (decimal128)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> int:
    from toolkit._atomic import refuse_non_files
    from toolkit.client._loaders import MissingOrdersWarning
    from toolkit.frames._schema import FRAME_NAMES

    # a bad --out is refused before the load (possibly many requests), not after it
    check_output_dir(args.out, "--out")
    try:
        refuse_non_files(args.out, [f"{name}.{args.format}" for name in FRAME_NAMES])
    except InvalidRequest as exc:
        raise InvalidRequest(f"--out {exc}") from None
    options: dict[str, object] = {}
    if args.profile_id:
        options["profile_id"] = args.profile_id
    if args.concurrency is not None:
        options["concurrency"] = args.concurrency
    status = ",".join(args.status) if args.status else None
    ids = read_ids_file(args.ids_file, "--ids-file") if args.ids_file is not None else None
    if args.ids_from is not None:
        from toolkit.recording._read import order_ids_in_recording, recording_root

        try:
            recording_root(args.ids_from)
            # a damaged or foreign file among its watchorders files is named
            recorded = order_ids_in_recording(args.ids_from)
        except InvalidRequest as exc:
            raise InvalidRequest(f"--ids-from: {exc}") from None
        ids = [*(ids or []), *recorded]
    started = time.perf_counter()
    with client_from_args(args, environ, **options) as client, warnings.catch_warnings():
        # the orders not found are logged in one line and counted in the summary: the
        # warning would repeat them, naming a line of the library
        warnings.simplefilter("ignore", MissingOrdersWarning)
        frames = client.load_orders(
            status=status,
            since=args.since,
            until=args.until,
            symbols=args.symbols,
            ids=ids,
            exact=args.exact,
            progress=not args.no_progress,
        )
        source = client.settings.base_url
    elapsed = time.perf_counter() - started
    writer = frames.to_parquet if args.format == "parquet" else frames.to_csv
    writer(args.out)
    missing = f", {len(frames.missing)} missing" if frames.missing else ""
    print(
        f"loaded {len(frames.orders)} orders ({len(frames.trades)} trades, "
        f"{len(frames.fills)} fills{missing}) from {source} in {elapsed:.1f}s "
        f"-> {args.out} ({args.format})"
    )
    return 0
