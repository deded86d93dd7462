"""MkDocs hook: the notebooks' widget outputs (the live views) render on the site with no
network, from a pinned copy of the ipywidgets HTML manager served with the site.

mkdocs-jupyter's pages load ``@jupyter-widgets/html-manager@*`` from unpkg (unpinned, and
nothing renders offline), as ``embed-amd.js`` that needs a RequireJS the page does not load.
This hook fetches ``HTML_MANAGER`` once with ``npm pack`` (into ``out/.cache/``, its sha512
checked against ``INTEGRITY``), copies its standalone ``embed.js`` (controls included, no
RequireJS) and the fonts it uses into ``site/assets/widgets/``, and points every notebook
page with widget outputs at that copy. A page it cannot rewrite fails the build.
The browser tests render their embedded views with the same bundle (tests/_browser.py).
"""

from __future__ import annotations

import base64
import hashlib
import os
import posixpath
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "out" / ".cache" / "html-manager"
PACKAGE = "@jupyter-widgets/html-manager"
HTML_MANAGER = "1.0.15"  # the ipywidgets 8 manager (widget state 2.x)
# the registry's dist.integrity of that version (``npm view PACKAGE@VERSION dist.integrity``)
INTEGRITY = (
    "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//"
    "SABeNz1yp47bCrJ3CQA=="
)
TARBALL = f"jupyter-widgets-html-manager-{HTML_MANAGER}.tgz"
# where the bundle is in the site
ASSETS = "assets/widgets"
EMBED = f"{ASSETS}/embed.js"
# what of the package's dist/ the site needs: the bundle, its licences, its fonts
_WANTED = re.compile(
    r"package/(LICENSE|dist/(embed\.js|embed\.js\.LICENSE\.txt|\w+\.(woff2?|ttf|eot|svg)))"
)
# nbconvert's widget loader as mkdocs-jupyter writes it into a notebook page
LOADER = re.compile(
    r"<script>\s*\(function\(\) \{\s*function addWidgetsRenderer\(\).*?\}\(\)\);\s*</script>",
    re.S,
)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class WidgetsError(RuntimeError):
    """The HTML manager could not be fetched, or a page could not be pointed at it."""


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def tarball(timeout: float = 300) -> Path:
    """The pinned HTML manager's package, fetched with ``npm pack`` once and checked."""
    path = CACHE / TARBALL
    if not path.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise WidgetsError(
                f"npm is needed once to fetch {PACKAGE}@{HTML_MANAGER} (the docs' widget "
                f"renderer, served with the site); install Node.js, or put {TARBALL} in {CACHE}"
            )
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="tk-npm-", dir=CACHE) as tmp:
            done = subprocess.run(
                [npm, "pack", f"{PACKAGE}@{HTML_MANAGER}", "--pack-destination", tmp],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                env={**os.environ, "npm_config_audit": "false", "npm_config_fund": "false"},
            )
            fetched = Path(tmp) / TARBALL
            if done.returncode != 0 or not fetched.exists():
                raise WidgetsError(
                    f"npm pack {PACKAGE}@{HTML_MANAGER} failed: {done.stderr.strip()[-800:]}"
                )
            fetched.replace(path)
    found = _integrity(path.read_bytes())
    if found != INTEGRITY:
        path.unlink()
        raise WidgetsError(f"{TARBALL}: sha512 is {found}, expected {INTEGRITY}; deleted")
    return path


def bundle() -> Path:
    """The folder of the bundle and its assets (``embed.js``, licences, fonts)."""
    target = CACHE / HTML_MANAGER
    if (target / "embed.js").exists():
        return target
    source = tarball()
    with tempfile.TemporaryDirectory(prefix="tk-html-manager-", dir=CACHE) as tmp:
        with tarfile.open(source) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and _WANTED.fullmatch(m.name)]
            tar.extractall(tmp, members=members, filter="data")
        out = Path(tmp) / "out"
        out.mkdir()
        for member in members:
            shutil.move(Path(tmp) / member.name, out / Path(member.name).name)
        if not (out / "embed.js").exists():
            raise WidgetsError(f"{TARBALL} has no dist/embed.js")
        try:
            out.replace(target)
        except OSError:
            if not (target / "embed.js").exists():  # else another build made it meanwhile
                raise
    return target


def vendor(site_dir: Path) -> Path:
    """Copy the bundle into ``site_dir`` (only what changed); returns the folder."""
    source, target = bundle(), site_dir / ASSETS
    target.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        copy = target / path.name
        if not copy.exists() or copy.stat().st_size != path.stat().st_size:
            shutil.copyfile(path, copy)
    return target


def rewrite(page_html: str, page_url: str) -> str:
    """``page_html`` with its widget loader replaced by the site's bundle (relative to
    ``page_url``, so the site reads from a folder too). A page without widget outputs
    comes back unchanged; one whose loader is not found raises WidgetsError."""
    if WIDGET_VIEW not in page_html:
        return page_html
    src = posixpath.relpath(EMBED, posixpath.dirname(page_url) or ".")
    # embed.js renders every widget-state script of the page on window "load"
    script = f'<script defer src="{src}" data-tk-widgets="{HTML_MANAGER}"></script>'
    page_html, found = LOADER.subn(lambda _m: script, page_html)
    if found != 1 or "unpkg.com" in page_html:
        raise WidgetsError(
            f"{page_url}: the widget loader of mkdocs-jupyter was not found once ({found}); "
            "its template changed: update docs/tools/widgets.py"
        )
    return page_html


# -- MkDocs hooks -----------------------------------------------------------------------


def on_post_page(output: str, page: Any, config: Any, **_kw: Any) -> str:
    from mkdocs.exceptions import PluginError

    try:
        return rewrite(output, page.url or "index.html")
    except WidgetsError as exc:
        raise PluginError(str(exc)) from exc


def on_post_build(config: Any, **_kw: Any) -> None:
    from mkdocs.exceptions import PluginError

    try:
        vendor(Path(config["site_dir"]))
    except (WidgetsError, OSError, subprocess.SubprocessError) as exc:
        raise PluginError(f"widget renderer: {exc}") from exc
