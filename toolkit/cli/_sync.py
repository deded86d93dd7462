"""``toolkit sync``: bring a local order store up to date (listing, recordings, given ids)
and say what it now covers, configured from the environment like ``Client.from_env()``."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from toolkit.cli._connect import (
    ENV_HELP,
    add_connection_arguments,
    client_from_args,
    path_arg,
    positive_int,
    seconds_arg,
)
from toolkit.cli._ids import read_ids_file
from toolkit.errors import InvalidRequest


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "sync",
        help="keep a local order store current (only what changed is fetched)",
        description="Sync the order store at --store: limit orders from the listing (newest "
        "first, stopping past what the store holds), market and other orders from the ids "
        "seen in recordings (--from-recording) and given by you (--ids), and every stored "
        "order that could still change. Finished orders are never fetched again. " + ENV_HELP,
    )
    parser.add_argument("--store", type=path_arg, required=True, metavar="DIR", help="store folder")
    parser.add_argument(
        "--from-recording",
        type=path_arg,
        action="append",
        default=[],
        metavar="ROOT",
        help="a recording (toolkit record --out ROOT) whose watchOrders ids to add; repeatable",
    )
    parser.add_argument(
        "--ids", type=path_arg, metavar="FILE", help="file with one order id per line (# comments)"
    )
    parser.add_argument(
        "--no-listing", action="store_true", help="skip the limit-order listing (route inactive)"
    )
    parser.add_argument(
        "--full-listing", action="store_true", help="page the whole listing, not only what is new"
    )
    parser.add_argument(
        "--overlap",
        type=seconds_arg,
        default=600.0,
        metavar="SECONDS",
        help="how far past the newest stored listed order to re-read the listing (default 600)",
    )
    add_connection_arguments(parser)
    parser.add_argument("--profile-id", help="profile id (TOOLKIT_PROFILE_ID)")
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        help="most requests in flight (default 16; adapts below it)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> int:
    """Sync the store and print what it did and what the store now covers; a mistake
    raises (``toolkit.cli`` prints it in one line)."""
    from toolkit.store import OrderStore
    from toolkit.store._checks import check_recording

    options: dict[str, object] = {}
    if args.profile_id:
        options["profile_id"] = args.profile_id
    if args.concurrency is not None:
        options["concurrency"] = args.concurrency
    ids = read_ids_file(args.ids, "--ids") if args.ids is not None else []
    for root in args.from_recording:
        try:
            check_recording(root)
        except InvalidRequest as exc:
            raise InvalidRequest(f"--from-recording: {exc}") from None
    store = OrderStore(args.store)
    with client_from_args(args, environ, **options) as client:
        result = store.sync(
            client,
            recordings=args.from_recording,
            ids=ids,
            listing=not args.no_listing,
            full_listing=args.full_listing,
            overlap_s=args.overlap,
        )
    coverage = store.coverage()
    print(result.summary())
    by_source = ", ".join(f"{n} from {s}" for s, n in coverage["by_source"].items() if n)
    by_type = ", ".join(f"{n} {t}" for t, n in sorted(coverage["by_type"].items()))
    print(
        f"store {args.store}: {coverage['orders']} orders ({by_type or 'none'}); "
        f"{by_source or 'nothing synced yet'}"
    )
    for warning in coverage["warnings"]:
        if f"warning: {warning}" not in result.summary():
            print(f"warning: {warning}")
    return 0
