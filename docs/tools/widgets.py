"""MkDocs hook: the notebooks' widget outputs (the live views) render on the site with no
network, from a pinned copy of the ipywidgets HTML manager served with the site.

mkdocs-jupyter's pages load ``@jupyter-widgets/html-manager@*`` from unpkg (unpinned, and
nothing renders offline), as ``embed-amd.js`` that needs a RequireJS the page does not load.
This hook fetches ``HTML_MANAGER`` once (``PINNED``: ``npm pack`` into ``out/.cache/``, its
sha512 checked; see npm.py), copies its standalone ``embed.js`` (controls included, no
RequireJS) and the fonts it uses into ``site/assets/widgets/``, and points every notebook
page with widget outputs at that copy. A page it cannot rewrite fails the build.
The browser tests render their embedded views with the same bundle (tests/_browser.py).
"""

from __future__ import annotations

import importlib.util
import posixpath
import re
import subprocess
import sys
from pathlib import Path
from typing import Any


def _npm() -> Any:
    """docs/tools/npm.py (the pinned npm packages served with the site), loaded by path."""
    name = "tk_docs_npm"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("npm.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # the dataclass machinery looks its module up
        spec.loader.exec_module(module)
    return sys.modules[name]


npm = _npm()
NpmError = npm.NpmError
CACHE = npm.CACHE / "html-manager"
PACKAGE = "@jupyter-widgets/html-manager"
HTML_MANAGER = "1.0.15"  # the ipywidgets 8 manager (widget state 2.x)
PINNED = npm.Pinned(
    PACKAGE,
    HTML_MANAGER,
    # the registry's dist.integrity of that version
    "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//"
    "SABeNz1yp47bCrJ3CQA==",
    # what of the package's dist/ the site needs: the bundle, its licences, its fonts
    re.compile(
        r"package/(LICENSE|dist/(embed\.js|embed\.js\.LICENSE\.txt|\w+\.(woff2?|ttf|eot|svg)))"
    ),
)
TARBALL = PINNED.tarball_name
# where the bundle is in the site
ASSETS = "assets/widgets"
EMBED = f"{ASSETS}/embed.js"
# nbconvert's widget loader as mkdocs-jupyter writes it into a notebook page
LOADER = re.compile(
    r"<script>\s*\(function\(\) \{\s*function addWidgetsRenderer\(\).*?\}\(\)\);\s*</script>",
    re.S,
)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class WidgetsError(RuntimeError):
    """A notebook page could not be pointed at the site's HTML manager."""


def tarball(timeout: float = 300) -> Path:
    """The pinned HTML manager's package, fetched with ``npm pack`` once and checked."""
    return Path(npm.tarball(PINNED, CACHE, timeout))


def bundle() -> Path:
    """The folder of the bundle and its assets (``embed.js``, licences, fonts)."""
    return Path(npm.unpack(PINNED, CACHE, "embed.js"))


def vendor(site_dir: Path) -> Path:
    """Copy the bundle into ``site_dir`` (only what changed); returns the folder."""
    return Path(npm.copy(bundle(), site_dir / ASSETS))


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
    except (NpmError, OSError, subprocess.SubprocessError) as exc:
        raise PluginError(f"widget renderer: {exc}") from exc
