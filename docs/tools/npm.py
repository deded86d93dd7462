"""Pinned npm packages the documentation site serves itself, so it reads with no network:
each is fetched once with ``npm pack`` into ``out/.cache/``, its sha512 checked against the
registry's ``dist.integrity``, and only the files the site needs are kept and copied into it.

Used by the docs hooks widgets.py (the ipywidgets HTML manager) and offline.py (the Web
Worker shim that lets search run from disk); loaded by path, like the hooks themselves.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "out" / ".cache"


class NpmError(RuntimeError):
    """A pinned package could not be fetched, or is not the package that was pinned."""


@dataclass(frozen=True)
class Pinned:
    """One version of an npm package, and the files of its tarball the site serves."""

    name: str
    version: str
    #: the registry's dist.integrity (``npm view NAME@VERSION dist.integrity``)
    integrity: str
    #: the tarball members kept (full match on their path, ``package/...``)
    keep: re.Pattern[str]

    @property
    def tarball_name(self) -> str:
        return f"{self.name.lstrip('@').replace('/', '-')}-{self.version}.tgz"


def integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def tarball(pinned: Pinned, cache: Path, timeout: float = 300) -> Path:
    """``pinned``'s tarball in ``cache``, fetched with ``npm pack`` once; one whose sha512
    is not the pinned one is deleted and refused."""
    path = cache / pinned.tarball_name
    spec = f"{pinned.name}@{pinned.version}"
    if not path.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise NpmError(
                f"npm is needed once to fetch {spec} (served with the docs site); install "
                f"Node.js, or put {pinned.tarball_name} in {cache}"
            )
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="tk-npm-", dir=cache) as tmp:
            done = subprocess.run(
                [npm, "pack", spec, "--pack-destination", tmp],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                env={**os.environ, "npm_config_audit": "false", "npm_config_fund": "false"},
            )
            fetched = Path(tmp) / pinned.tarball_name
            if done.returncode != 0 or not fetched.exists():
                raise NpmError(f"npm pack {spec} failed: {done.stderr.strip()[-800:]}")
            fetched.replace(path)
    found = integrity(path.read_bytes())
    if found != pinned.integrity:
        path.unlink()
        raise NpmError(
            f"{pinned.tarball_name}: sha512 is {found}, expected {pinned.integrity}; deleted"
        )
    return path


def unpack(pinned: Pinned, cache: Path, needed: str) -> Path:
    """The folder (``cache/VERSION``) of the kept files, flattened to their names; made
    once from the tarball. ``needed`` is the file without which the package is refused."""
    target = cache / pinned.version
    if (target / needed).exists():
        return target
    source = tarball(pinned, cache)
    with tempfile.TemporaryDirectory(prefix="tk-npm-unpack-", dir=cache) as tmp:
        with tarfile.open(source) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and pinned.keep.fullmatch(m.name)]
            tar.extractall(tmp, members=members, filter="data")
        out = Path(tmp) / "out"
        out.mkdir()
        for member in members:
            shutil.move(Path(tmp) / member.name, out / Path(member.name).name)
        if not (out / needed).exists():
            raise NpmError(f"{pinned.tarball_name} has no {needed}")
        try:
            out.replace(target)
        except OSError:
            if not (target / needed).exists():  # else another build made it meanwhile
                raise
    return target


def copy(source: Path, target: Path) -> Path:
    """Copy the files of ``source`` into ``target`` (only what changed); returns it."""
    target.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        dest = target / path.name
        if not dest.exists() or dest.stat().st_size != path.stat().st_size:
            shutil.copyfile(path, dest)
    return target
