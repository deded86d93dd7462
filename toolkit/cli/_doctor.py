"""``toolkit doctor``: check the live service read-only against the service profile, print
the table, and optionally write the profile observed. Configured from the environment like
``toolkit load`` (TOOLKIT_ENV, TOOLKIT_BASE_URL, TOOLKIT_WS_URL, TOOLKIT_API_KEY,
TOOLKIT_API_SECRET, TOOLKIT_PROFILE).

Exit status: 0 when nothing differs and every step ran (settings that cannot be observed
read-only, or that were not observed, are "unknown" and do not count), 1 when any setting
differs from the profile or a step failed (the summary says INCOMPLETE and names it: a
failed sign-in never passes for a match), 2 for a mistake of the user or the environment
(one line on stderr, no traceback)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from toolkit.cli._connect import (
    add_connection_arguments,
    check_output_file,
    client_from_args,
    positive_seconds_arg,
    seconds_arg,
)
from toolkit.cli._errors import describe
from toolkit.errors import ToolkitError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check the live service against the service profile (read-only)",
        description="Check the live service read-only (sign-in, GET of the listing and "
        "fetchOrder, WebSocket subscribe/unsubscribe; never creates or cancels an order) "
        "against the service profile, print what matches, differs or could not be seen, "
        "and optionally write the profile observed. Configured by TOOLKIT_ENV, "
        "TOOLKIT_BASE_URL, TOOLKIT_WS_URL, TOOLKIT_API_KEY, TOOLKIT_API_SECRET, "
        "TOOLKIT_PROFILE. Exit status: 0 nothing differs and every step ran, 1 something "
        "differs or a step failed (INCOMPLETE), 2 error.",
    )
    parser.add_argument(
        "--write-profile", type=Path, metavar="FILE", help="write the observed profile here"
    )
    add_connection_arguments(parser)
    parser.add_argument(
        "--wait",
        type=seconds_arg,
        default=10.0,
        metavar="SECONDS",
        help="seconds to wait for the first payload of each channel (default 10)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds_arg,
        metavar="SECONDS",
        help="seconds for each request's whole answer (default 10, the client's timeout)",
    )
    parser.add_argument(
        "--deadline",
        type=positive_seconds_arg,
        metavar="SECONDS",
        help="seconds for the whole check: the step running then stops, those left are "
        "not run (default 120 plus --wait)",
    )
    parser.add_argument(
        "--probe-cancel",
        action="store_true",
        help="also learn where a cancel's profileId travels, from two cancels of an order "
        "id that does not exist (profileId, TOOLKIT_PROFILE_ID's or a made-up one, in "
        "the body, then in the query), and the batch cancel's route, id field and largest "
        "batch "
        "from batch cancels of ids that do not exist: nothing in the account can change, "
        "and the rows say what was sent",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> int:
    from toolkit.doctor._run import diagnose
    from toolkit.profile import dump_profile

    try:
        if args.write_profile is not None:
            # refused before the checks run, not after them
            check_output_file(args.write_profile, "--write-profile", make_parents=False)
        with client_from_args(args, environ) as client:
            diagnosis = diagnose(
                client,
                payload_timeout=args.wait,
                timeout=args.timeout,
                deadline=args.deadline,
                probe_cancel=args.probe_cancel,
            )
        print(diagnosis.to_text())
        if args.write_profile is not None:
            path = dump_profile(
                diagnosis.profile(), args.write_profile, comments=diagnosis.comments()
            )
            print(f"observed profile written to {path}")
    except (ToolkitError, OSError) as exc:
        if getattr(args, "debug", False):
            raise
        print(f"toolkit doctor: error: {describe(exc)}", file=sys.stderr)
        return 2
    return 0 if diagnosis.ok else 1
