"""The docs hook that serves the pinned HTML manager (docs/tools/widgets.py), without a
browser: how it rewrites a notebook page, and its loud failures."""

from __future__ import annotations

from pathlib import Path

import pytest
from _browser import docs_widgets

widgets = docs_widgets()

LOADER = """<script>
(function() {
  function addWidgetsRenderer() {
    var widgetRendererSrc = 'https://unpkg.com/@jupyter-widgets/html-manager@*/dist/embed-amd.js';
    scriptElement.src = widgetRendererSrc;
  }
  document.addEventListener('DOMContentLoaded', addWidgetsRenderer);
}());
</script>"""
VIEW = '<script type="application/vnd.jupyter.widget-view+json">{"model_id": "x"}</script>'


@pytest.mark.parametrize(
    ("url", "src"),
    [("notebooks/02.html", "../assets/widgets/embed.js"), ("02.html", "assets/widgets/embed.js")],
)
def test_a_page_with_widget_outputs_loads_the_sites_copy(url: str, src: str) -> None:
    out = widgets.rewrite(f"<p>a</p>{LOADER}<p>b</p>{VIEW}", url)
    assert "unpkg" not in out and "addWidgetsRenderer" not in out
    assert f'<p>a</p><script defer src="{src}" data-tk-widgets="1.0.15"></script><p>b</p>' in out


def test_a_page_without_widget_outputs_is_left_alone() -> None:
    assert widgets.rewrite(f"<p>{LOADER}</p>", "a.html") == f"<p>{LOADER}</p>"


def test_a_page_whose_loader_is_not_found_fails_the_build() -> None:
    with pytest.raises(widgets.WidgetsError, match="template changed"):
        widgets.rewrite(f"<script src='https://unpkg.com/x'></script>{VIEW}", "n/a.html")


def test_a_tarball_that_is_not_the_pinned_one_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(widgets, "CACHE", tmp_path)
    bad = tmp_path / widgets.TARBALL
    bad.write_bytes(b"not the package")
    with pytest.raises(widgets.NpmError, match="sha512"):
        widgets.tarball()
    assert not bad.exists()
