"""MkDocs hook: search works when the built site is opened from disk (``file://``), with no
network, next to mkdocs-material's ``offline`` plugin (mkdocs.yml).

The plugin inlines the search index into ``search/search_index.js`` (a page from disk may
not fetch JSON), but the search itself runs in a Web Worker, which Chromium and Firefox
refuse to start from a ``file://`` URL; the plugin's answer is the ``iframe-worker`` shim,
which it loads from unpkg, so offline the search stays at "Initializing search". This hook
serves a pinned copy of that shim with the site instead (``PINNED``, fetched once with
``npm pack`` and checked, see npm.py) and fails the build if a page still loads it from
elsewhere.
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
CACHE = npm.CACHE / "iframe-worker"
PINNED = npm.Pinned(
    "iframe-worker",
    "1.0.4",
    # the registry's dist.integrity of that version
    "sha512-roeaaI+Lg1LJNfgpCjoRe/+WzEjy9+Z08LoEvu85MCPbBjwm+qXz8Ag5U05lHa6V1CysZyGzE0SOkAtSUA5q7Q==",
    re.compile(r"package/(LICENSE|shim/index\.js)"),
)
# where the shim is in the site (the plugin looks for "iframe-worker" in the polyfills)
ASSETS = "assets/iframe-worker"
SHIM = f"{ASSETS}/index.js"


class OfflineError(RuntimeError):
    """The site would not search from disk: the plugin is off, or a page loads the shim
    from elsewhere."""


def polyfills(current: list[Any]) -> list[Any]:
    """``current`` (``extra.polyfills``) with any other copy of the shim replaced by the
    site's own."""
    return [p for p in current if "iframe-worker" not in str(p)] + [SHIM]


def check_page(page_html: str, page_url: str) -> None:
    """Raise OfflineError unless ``page_html`` loads the site's copy of the shim (relative
    to ``page_url``) and no other."""
    src = posixpath.relpath(SHIM, posixpath.dirname(page_url) or ".")
    if f'<script src="{src}"></script>' not in page_html or "unpkg.com/iframe-worker" in page_html:
        raise OfflineError(
            f"{page_url}: the page does not load the site's search shim ({src}); the theme's "
            "polyfills block changed: update docs/tools/offline.py"
        )


# -- MkDocs hooks -----------------------------------------------------------------------


def on_config(config: Any, **_kw: Any) -> Any:
    from mkdocs.exceptions import PluginError

    if "material/offline" not in config["plugins"] and "offline" not in config["plugins"]:
        raise PluginError(
            "docs/tools/offline.py: the offline plugin is not enabled in mkdocs.yml (search "
            "from disk needs its inlined index)"
        )
    config["extra"]["polyfills"] = polyfills(list(config["extra"].get("polyfills", [])))
    return config


def on_post_page(output: str, page: Any, config: Any, **_kw: Any) -> str:
    from mkdocs.exceptions import PluginError

    try:
        check_page(output, page.url or "index.html")
    except OfflineError as exc:
        raise PluginError(str(exc)) from exc
    return output


def on_post_build(config: Any, **_kw: Any) -> None:
    from mkdocs.exceptions import PluginError

    try:
        npm.copy(npm.unpack(PINNED, CACHE, "index.js"), Path(config["site_dir"]) / ASSETS)
    except (NpmError, OSError, subprocess.SubprocessError) as exc:
        raise PluginError(f"search shim: {exc}") from exc
