"""``toolkit doctor``: check the live service read-only against the service profile, print
the table, and optionally write the profile observed. Configured from the environment like
``toolkit load`` (TOOLKIT_ENV, TOOLKIT_BASE_URL, TOOLKIT_WS_URL, TOOLKIT_API_KEY,
TOOLKIT_API_SECRET, TOOLKIT_PROFILE).

Exit status: 0 when nothing differs (settings that cannot be observed read-only, or that
were not observed, are "unknown" and do not count), 1 when any setting differs from the
profile, 2 for a mistake of the user or the environment (one line on stderr, no traceback)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

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
        "TOOLKIT_PROFILE. Exit status: 0 nothing differs, 1 something differs, 2 error.",
    )
    parser.add_argument(
        "--profile", type=Path, help="profile TOML to check (default: TOOLKIT_PROFILE or default)"
    )
    parser.add_argument(
        "--write-profile", type=Path, metavar="FILE", help="write the observed profile here"
    )
    parser.add_argument(
        "--env-file",
        type=Path,
        help="file of KEY=VALUE lines (variables already set in the environment win)",
    )
    parser.add_argument("--env", choices=("local", "sandbox", "production"), help="TOOLKIT_ENV")
    parser.add_argument("--base-url", help="REST base address (TOOLKIT_BASE_URL)")
    parser.add_argument("--ws-url", help="WebSocket address (TOOLKIT_WS_URL)")
    parser.add_argument("--api-key", help="API key (TOOLKIT_API_KEY); the secret only via env")
    parser.add_argument(
        "--wait",
        type=float,
        default=10.0,
        help="seconds to wait for the first payload of each channel (default 10)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> int:
    from toolkit.cli._load import read_env_file
    from toolkit.client._client import Client
    from toolkit.doctor._run import diagnose
    from toolkit.profile import dump_profile, load_profile

    env: dict[str, str] = {}
    try:
        if args.env_file is not None:
            env.update(read_env_file(args.env_file))
        env.update(os.environ if environ is None else environ)
        options: dict[str, object] = {}
        if args.env:
            options["environment"] = args.env
        if args.base_url:
            options["base_url"] = args.base_url
        if args.ws_url:
            options["ws_url"] = args.ws_url
        if args.api_key:
            options["api_key"] = args.api_key
        if args.profile is not None:
            options["profile"] = load_profile(args.profile)
        with Client.from_env(env, **options) as client:
            diagnosis = diagnose(client, payload_timeout=args.wait)
        print(diagnosis.to_text())
        if args.write_profile is not None:
            path = dump_profile(
                diagnosis.profile(), args.write_profile, comments=diagnosis.comments()
            )
            print(f"observed profile written to {path}")
    except (ToolkitError, OSError) as exc:
        print(f"toolkit doctor: error: {exc}", file=sys.stderr)
        return 2
    return 0 if diagnosis.ok else 1
