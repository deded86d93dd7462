"""The docs hook that lets the site search from disk (docs/tools/offline.py), without a
browser: the shim it serves instead of the theme's unpkg one, and its loud failures."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml
from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
UNPKG = "https://unpkg.com/iframe-worker/shim"


def _offline() -> Any:
    spec = importlib.util.spec_from_file_location(
        "tk_docs_offline", ROOT / "docs" / "tools" / "offline.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


offline = _offline()


def test_the_site_is_configured_to_search_from_disk() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert "offline" in config["plugins"] and "search" in config["plugins"]
    assert "docs/tools/offline.py" in config["hooks"]
    assert config["use_directory_urls"] is False  # pages link to files, as a disk has them


def test_the_themes_unpkg_shim_is_replaced_by_the_sites_copy() -> None:
    assert offline.polyfills([UNPKG, "other.js"]) == ["other.js", offline.SHIM]
    assert offline.polyfills([]) == [offline.SHIM]
    assert offline.polyfills([offline.SHIM]) == [offline.SHIM]


def test_on_config_puts_the_shim_in_the_polyfills() -> None:
    config: dict[str, Any] = {"plugins": {"material/search": 1, "material/offline": 1}}
    config["extra"] = {"polyfills": [UNPKG]}
    assert offline.on_config(config)["extra"]["polyfills"] == [offline.SHIM]


def test_a_site_without_the_offline_plugin_fails_the_build() -> None:
    with pytest.raises(PluginError, match="offline plugin is not enabled"):
        offline.on_config({"plugins": {"material/search": 1}, "extra": {}})


@pytest.mark.parametrize(
    ("url", "src"),
    [
        ("index.html", "assets/iframe-worker/index.js"),
        ("notebooks/02.html", "../assets/iframe-worker/index.js"),
    ],
)
def test_a_page_loading_the_sites_shim_passes(url: str, src: str) -> None:
    offline.check_page(f'<head><script src="{src}"></script></head>', url)


@pytest.mark.parametrize(
    "page",
    [
        f'<script src="{UNPKG}"></script>',
        "<head></head>",
        '<script src="assets/iframe-worker/index.js"></script>',
    ],
    ids=["unpkg", "no shim", "wrong depth"],
)
def test_a_page_without_the_sites_shim_fails_the_build(page: str) -> None:
    with pytest.raises(offline.OfflineError, match="search shim"):
        offline.check_page(page, "guide/a.html")


def test_a_shim_tarball_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / offline.PINNED.tarball_name
    bad.write_bytes(b"not the package")
    with pytest.raises(offline.NpmError, match="sha512"):
        offline.npm.tarball(offline.PINNED, tmp_path)
    assert not bad.exists()
