"""Profiles as TOML files: load (``tomllib``), dump (a small writer for the flat tables a
profile has), and the path given by ``TOOLKIT_PROFILE``."""

from __future__ import annotations

import json
import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolkit.errors import InvalidRequest
from toolkit.profile._model import DEFAULT_PROFILE, ServiceProfile


def load_profile(path: str | os.PathLike[str]) -> ServiceProfile:
    """The profile in the TOML file at ``path``; errors name the file and the setting."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidRequest(f"profile file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"cannot read profile {p}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidRequest(f"profile {p} is not valid TOML: {exc}") from None
    return ServiceProfile.from_dict(data, source=str(p))


def profile_from_env(environ: Mapping[str, str] | None = None) -> ServiceProfile:
    """The profile named by ``TOOLKIT_PROFILE`` (a TOML path), or the default."""
    env = os.environ if environ is None else environ
    path = env.get("TOOLKIT_PROFILE")
    return load_profile(path) if path else DEFAULT_PROFILE


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise InvalidRequest(f"a profile number must be finite, not {v}")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise InvalidRequest(f"cannot write {v!r} to a profile")


def dumps_profile(profile: ServiceProfile, *, comments: Mapping[str, str] | None = None) -> str:
    """The profile as TOML text; ``comments`` (dotted name -> text) go above a setting."""
    data = profile.to_dict()
    lines = [f"name = {_value(data.pop('name'))}"]
    for section, table in data.items():
        lines += ["", f"[{section}]"]
        for key, value in table.items():
            note = (comments or {}).get(f"{section}.{key}")
            if note:
                lines += [f"# {line}" for line in note.splitlines()]
            lines.append(f"{key} = {_value(value)}")
    return "\n".join(lines) + "\n"


def dump_profile(
    profile: ServiceProfile,
    path: str | os.PathLike[str],
    *,
    comments: Mapping[str, str] | None = None,
) -> Path:
    """Write ``profile`` to ``path`` whole or not at all (temporary file, fsync, rename)."""
    target = Path(path)
    if not str(path).strip() or target.is_dir():
        raise InvalidRequest(f"profile path must name a file, not {str(path)!r}")
    text = dumps_profile(profile, comments=comments)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target
