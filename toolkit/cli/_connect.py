"""The connection options shared by the commands that talk to the service (``load``,
``record``, ``doctor``): the flags, an optional env file, and the client built from them;
and the argument types and output checks every command shares."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.errors import InvalidRequest

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.client import Client

ENV_HELP = (
    "Configured by TOOLKIT_ENV, TOOLKIT_BASE_URL, TOOLKIT_WS_URL, TOOLKIT_API_KEY, "
    "TOOLKIT_API_SECRET and TOOLKIT_PROFILE (options below win; the secret only via env)."
)


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """``--env-file``, ``--env``, ``--base-url``, ``--ws-url``, ``--api-key``, ``--profile``,
    ``--give-up-after``."""
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--env-file",
        type=Path,
        help="file of KEY=VALUE lines (variables already set in the environment win)",
    )
    group.add_argument("--env", choices=("local", "sandbox", "production"), help="TOOLKIT_ENV")
    group.add_argument("--base-url", help="REST base address (TOOLKIT_BASE_URL)")
    group.add_argument("--ws-url", help="WebSocket base address (TOOLKIT_WS_URL)")
    group.add_argument("--api-key", help="API key (TOOLKIT_API_KEY); the secret only via env")
    group.add_argument(
        "--profile",
        type=Path,
        metavar="FILE",
        help="service profile TOML (TOOLKIT_PROFILE; default: the built-in default profile)",
    )
    group.add_argument(
        "--give-up-after",
        type=seconds_arg,
        metavar="SECONDS",
        dest="give_up_after",
        help="stop with one error once every request has failed on the network for this "
        "long (the client's breaker_after_s; default: twice the request timeout; 0: never)",
    )


def _int_at_least(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= {minimum}, got {text!r}"
        ) from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (``--concurrency 0`` is refused, not ignored)."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    return _int_at_least(text, 0)


def _seconds(text: str, *, positive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise argparse.ArgumentTypeError(
            f"expected seconds (a finite number {bound}), got {text!r}"
        )
    return value


def seconds_arg(text: str) -> float:
    """An argparse type: a finite number of seconds >= 0 (``nan``, ``inf`` and negative
    values are refused when the arguments are read, not met later as a traceback or a
    silently odd result)."""
    return _seconds(text, positive=False)


def positive_seconds_arg(text: str) -> float:
    """An argparse type: a finite number of seconds > 0 (0 is refused too)."""
    return _seconds(text, positive=True)


def path_arg(text: str) -> Path:
    """An argparse type: a non-empty path (an empty one would silently mean the current
    directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give a file or folder name")
    return Path(text)


def check_output_dir(path: Path, flag: str) -> Path:
    """``path`` as the folder an export goes to, or ``InvalidRequest`` naming ``flag``
    before anything is sent or written: not an existing file, and either a folder this
    process may write in or a new one that can be made in a writable folder (a part of the
    path that is a file is refused). Creates nothing."""
    from toolkit.frames._frames import _export_dir

    try:
        root = _export_dir(path)
    except InvalidRequest as exc:
        raise InvalidRequest(f"{flag} {exc}") from None
    _check_writable_folder(root, flag, path)
    return root


def check_output_file(path: Path, flag: str, *, make_parents: bool = True) -> Path:
    """``path`` as a file to write (whole, by renaming a temporary file beside it), or
    ``InvalidRequest`` naming ``flag`` before anything is sent or written: not an existing
    folder, and its folder writable (or, with ``make_parents``, one that can be made in a
    writable folder). Creates nothing."""
    if path.is_dir():
        raise InvalidRequest(f"{flag} {path} is a folder; give a file name")
    if not make_parents and not path.parent.is_dir():
        raise InvalidRequest(f"{flag} {path}: {path.parent} is not a folder (none is made)")
    _check_writable_folder(path.parent, flag, path)
    return path


def _check_writable_folder(folder: Path, flag: str, target: Path) -> None:
    """The nearest existing part of ``folder`` (itself or a parent) is a folder this
    process may create files in."""
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise InvalidRequest(f"{flag} {target}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidRequest(
            f"{flag} {target}: cannot write in {folder} (no permission, or a read-only file "
            "system): choose a writable folder"
        )


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines (``#`` comments, optional ``export``, optional quotes)."""
    try:
        # utf-8-sig: a byte-order mark (Notepad's "UTF-8") is not part of the first name
        content = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        # the file holds secrets: name the place, never the bytes (nor chain them)
        raise InvalidRequest(
            f"--env-file {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None
    values: dict[str, str] = {}
    for number, line in enumerate(content.splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        text = text.removeprefix("export ").strip()
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            # the line may hold a secret: name the line, never print it
            raise InvalidRequest(f"{path}:{number}: expected KEY=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def client_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None, **options: Any
) -> Client:
    """The client the connection flags, the env file and the environment describe;
    ``options`` are further ``Settings`` values (e.g. ``concurrency``)."""
    from toolkit.client import Client
    from toolkit.profile import load_profile

    env: dict[str, str] = {}
    if getattr(args, "env_file", None) is not None:
        env.update(read_env_file(args.env_file))
    env.update(os.environ if environ is None else environ)
    for name, key in (
        ("environment", "env"),
        ("base_url", "base_url"),
        ("ws_url", "ws_url"),
        ("api_key", "api_key"),
    ):
        value = getattr(args, key, None)
        if value:
            options[name] = value
    if getattr(args, "profile", None) is not None:
        options["profile"] = load_profile(args.profile)
    if getattr(args, "give_up_after", None) is not None:
        options["breaker_after_s"] = args.give_up_after
    return Client.from_env(env, **options)
