"""Profiles as TOML files: load (``tomllib``), dump (a small writer for the flat tables a
profile has), and the path given by ``TOOLKIT_PROFILE``."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolkit._atomic import atomic_write_text
from toolkit.errors import InvalidRequest
from toolkit.profile._model import DEFAULT_PROFILE, ServiceProfile, SettingError, located


def load_profile(path: str | os.PathLike[str]) -> ServiceProfile:
    """The profile in the TOML file at ``path``; errors name the file and the setting.

    Parameters
    ----------
    path : str or os.PathLike
        The TOML file; settings it leaves out keep their defaults.

    Returns
    -------
    ServiceProfile

    Raises
    ------
    InvalidRequest
        The file is missing, unreadable or not TOML, or a setting is unknown, of the wrong
        type or refused by the profile's checks.
    """
    p = Path(path)
    try:
        # utf-8-sig: Notepad's "UTF-8" starts the file with a byte-order mark
        text = p.read_text(encoding="utf-8-sig")
        data = tomllib.loads(text)
    except FileNotFoundError:
        raise InvalidRequest(f"profile file not found: {p}") from None
    except IsADirectoryError:
        raise InvalidRequest(f"profile {p} is a folder, not a TOML file") from None
    except UnicodeDecodeError as exc:
        raise InvalidRequest(
            f"profile {p}: not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise InvalidRequest(f"cannot read profile {p}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidRequest(f"profile {p} is not valid TOML: {exc}") from None
    try:
        profile = ServiceProfile.from_dict(data, source=str(p))
    except SettingError as exc:
        raise located(exc, str(p), setting_line(text, exc.settings)) from None
    return dataclasses.replace(profile, origin=str(p))


def _key(text: str) -> str:
    """A TOML key as dotted text: quotes dropped, spaces around the dots removed."""
    parts = re.split(r"\s*\.\s*", text.strip())
    return ".".join(part.strip().strip("\"'") for part in parts)


_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?")
_ASSIGN = re.compile(r"^\s*([A-Za-z0-9_\-.\"' ]+?)\s*=")


def setting_line(text: str, settings: Sequence[str]) -> tuple[int, str] | None:
    """Where the first of ``settings`` (dotted names, or a section) the TOML ``text``
    sets: (line number, setting); failing that, the line of a table that holds one (an
    inline table, a section), with the table's name. None when the text sets none of them (a check
    that refused a default against a value the file sets elsewhere names that one)."""
    found: dict[str, int] = {}
    table = ""
    quote: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if quote is not None:  # inside a multi-line string
            if line.count(quote) % 2:
                quote = None
            continue
        header = _HEADER.match(line)
        if header:
            table = _key(header.group(1))
            found.setdefault(table, number)
            continue
        assign = _ASSIGN.match(line)
        if assign:
            key = _key(assign.group(1))
            found.setdefault(f"{table}.{key}" if table else key, number)
            rest = line[assign.end() :]
            for mark in ('"""', "'''"):
                if rest.count(mark) % 2:
                    quote = mark
    for setting in settings:
        if setting in found:
            return found[setting], setting
    for setting in settings:
        # else the table that holds it (an inline table, a section)
        table = setting.rpartition(".")[0]
        while table:
            if table in found:
                return found[table], table
            table = table.rpartition(".")[0]
    return None


def profile_from_env(environ: Mapping[str, str] | None = None) -> ServiceProfile:
    """The profile named by ``TOOLKIT_PROFILE`` (a TOML path), or the default.

    Parameters
    ----------
    environ : mapping of str to str, optional
        The variables to read (default: ``os.environ``).

    Returns
    -------
    ServiceProfile
        ``DEFAULT_PROFILE`` when ``TOOLKIT_PROFILE`` is unset or empty; whitespace around
        the path is not part of it.

    Raises
    ------
    InvalidRequest
        As :func:`load_profile`, for the file the variable names; the message starts
        with ``TOOLKIT_PROFILE:``.
    """
    env = os.environ if environ is None else environ
    # a value pasted with its newline ("...toml\n") names the file without it
    path = (env.get("TOOLKIT_PROFILE") or "").strip()
    if not path:
        return DEFAULT_PROFILE
    try:
        return load_profile(path)
    except InvalidRequest as exc:  # say where the path came from
        raise InvalidRequest(f"TOOLKIT_PROFILE: {exc.message}") from None


_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _is_control(char: str) -> bool:
    """C0 and C1 control characters and DEL: TOML forbids most of them raw."""
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: quotes and backslashes escaped, every C0/C1 control
    character and DEL as ``\\uXXXX`` (a JSON string is not always valid TOML: DEL).
    InvalidRequest for a lone surrogate, which no TOML file (UTF-8) can hold."""
    out: list[str] = []
    for char in text:
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif _is_control(char):
            out.append(f"\\u{ord(char):04X}")
        elif 0xD800 <= ord(char) <= 0xDFFF:
            raise InvalidRequest(f"a lone surrogate (U+{ord(char):04X}) cannot be written")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _comment(line: str) -> str:
    """One line of a note made safe for a TOML comment: control characters (but tab) and
    lone surrogates shown as ``\\uXXXX`` text."""
    unsafe = [c for c in line if (_is_control(c) and c != "\t") or 0xD800 <= ord(c) <= 0xDFFF]
    for c in set(unsafe):
        line = line.replace(c, f"\\u{ord(c):04X}")
    return line


def _value(v: Any, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise InvalidRequest(f"profile {where}: a number must be finite, not {v}")
        return repr(v)
    if isinstance(v, str):
        try:
            return toml_string(v)
        except InvalidRequest as exc:
            raise InvalidRequest(f"profile {where}: {exc}") from None
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x, where) for x in v) + "]"
    raise InvalidRequest(f"profile {where}: cannot write {v!r} to a profile")


def dumps_profile(profile: ServiceProfile, *, comments: Mapping[str, str] | None = None) -> str:
    """The profile as TOML text; ``comments`` (dotted name -> text) go above a setting.

    Strings are escaped as TOML requires (control characters and DEL as ``\\uXXXX``);
    control characters in a comment are shown as ``\\uXXXX`` text.

    Parameters
    ----------
    profile : ServiceProfile
        The profile to write, every setting included.
    comments : mapping of str to str, optional
        Dotted setting -> a note, written as ``#`` lines above it (one per line of the
        note).

    Returns
    -------
    str
        The TOML text: ``name``, then one table per section.

    Raises
    ------
    InvalidRequest
        A value TOML cannot hold: a number that is not finite, a string with a lone
        surrogate, a value of a type no setting has.
    """
    data = profile.to_dict()
    lines = [f"name = {_value(data.pop('name'), 'name')}"]
    for section, table in data.items():
        lines += ["", f"[{section}]"]
        for key, value in table.items():
            note = (comments or {}).get(f"{section}.{key}")
            if note:
                lines += [f"# {_comment(line)}" for line in note.splitlines()]
            lines.append(f"{key} = {_value(value, f'{section}.{key}')}")
    return "\n".join(lines) + "\n"


def dump_profile(
    profile: ServiceProfile,
    path: str | os.PathLike[str],
    *,
    comments: Mapping[str, str] | None = None,
) -> Path:
    """Write ``profile`` to ``path`` whole or not at all (temporary file, fsync, rename).
    The text is read back before the rename: a file :func:`load_profile` would refuse is
    never written (InvalidRequest instead).

    Parameters
    ----------
    profile : ServiceProfile
        The profile to write.
    path : str or os.PathLike
        The file to write (replaced if it exists).
    comments : mapping of str to str, optional
        Dotted setting -> a note, as for :func:`dumps_profile`.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    InvalidRequest
        ``path`` is empty or a directory, a value cannot be written (as for
        :func:`dumps_profile`), or the text would not read back as the same profile;
        nothing is written then.
    WriteError
        The disk refused the file (full, read-only, no permission), naming it.
    OSError
        The file cannot be written otherwise (its folder missing).
    """
    target = Path(path)
    if not str(path).strip() or target.is_dir():
        raise InvalidRequest(f"profile path must name a file, not {str(path)!r}")
    text = dumps_profile(profile, comments=comments)
    try:
        again = ServiceProfile.from_dict(tomllib.loads(text), source=str(target))
    except tomllib.TOMLDecodeError as exc:
        raise InvalidRequest(f"profile for {target} would not be valid TOML: {exc}") from None
    if again.to_dict() != profile.to_dict():
        changed = ", ".join(k for k, _a, _b in profile.diff(again)) or "name"
        raise InvalidRequest(f"profile for {target} would not read back the same: {changed}")
    return atomic_write_text(target, text)
