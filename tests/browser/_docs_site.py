"""What the documentation-site tests share: a small site built the way ``make docs`` builds
the real one (mkdocs.yml's theme, stylesheets, plugins and hooks, minus the reference-page
generator and the API plugin), notebooks holding a live view's and a report's output, and
docs_probe.mjs, which opens a page from disk in headless Chromium with no network."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from _browser import playwright

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("docs_probe.mjs")
SITE = ROOT / "out" / "site"
SCREENSHOTS = ROOT / "out" / "screenshots"
NODE = shutil.which("node")
CHROMIUM = Path("/usr/bin/chromium")
T0 = 1_790_000_000_000
# what of mkdocs.yml a small site leaves out: the reference pages and executed notebooks
# (docs/tools/hooks.py runs gen_pages.py) and the API reference plugin
LEFT_OUT_HOOKS = ("docs/tools/hooks.py",)
LEFT_OUT_PLUGINS = ("mkdocstrings",)


def probe(name: str, page: Path, **job: Any) -> list[dict[str, Any]]:
    """Run docs_probe.mjs on ``page`` (one result per colour scheme of ``job``); its
    screenshots are ``out/screenshots/NAME-SCHEME.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    schemes = job.setdefault("schemes", ["light"])
    shots = [SCREENSHOTS / f"{name}-{scheme}.png" for scheme in schemes]
    for shot in shots:
        shot.unlink(missing_ok=True)
    assert NODE is not None
    with tempfile.TemporaryDirectory(prefix="tk-chromium-") as profile:
        job = {"url": page.as_uri(), "shot": str(SCREENSHOTS / name), **job}
        done = subprocess.run(
            [NODE, str(PROBE), str(playwright()), profile, json.dumps(job)],
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    results: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    assert [r["scheme"] for r in results] == schemes, results
    for result in results:
        assert result["error"] is None, result
        assert (SCREENSHOTS / f"{name}-{result['scheme']}.png").exists()
    return results


def site_config() -> dict[str, Any]:
    """mkdocs.yml as a small site takes it: the same theme, stylesheets, markdown, plugins
    and hooks (by absolute path), without the reference pages' generator, the API plugin
    and the nav."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    plugins = [
        p
        for p in config["plugins"]
        if (p if isinstance(p, str) else next(iter(p))) not in LEFT_OUT_PLUGINS
    ]
    hooks = [str(ROOT / h) for h in config["hooks"] if h not in LEFT_OUT_HOOKS]
    return {
        "site_name": "docs test",
        "docs_dir": "docs",
        "site_dir": "site",
        "strict": True,
        "use_directory_urls": config["use_directory_urls"],
        "theme": config["theme"],
        "extra_css": config.get("extra_css", []),
        "markdown_extensions": config["markdown_extensions"],
        "plugins": plugins,
        "hooks": hooks,
    }


def build(root: Path, pages: dict[str, str | Path]) -> Path:
    """Build a small site in ``root`` from ``pages`` (path under docs/ -> Markdown text, or a
    notebook file to copy) with site_config(); returns its site folder."""
    docs = root / "docs"
    for name, content in pages.items():
        target = docs / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, target)
        else:
            target.write_text(content, encoding="utf-8")
    for css in site_config()["extra_css"]:
        (docs / css).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / "docs" / "src" / css, docs / css)
    (root / "mkdocs.yml").write_text(yaml.safe_dump(site_config()), encoding="utf-8")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(root), "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root / "site"


def views() -> list[Any]:
    """A TickerView and an OrderStatusView fed by hand, stopped as notebook 02 leaves them."""
    from toolkit.stream._events import OrderEvent, TickerEvent, TickersEvent
    from toolkit.widgets import OrderStatusView, TickerView

    def tick(symbol: str, last: float, seq: int) -> TickerEvent:
        return TickerEvent(
            "watchtickers", T0 * 10**6, "c1", seq, None, symbol, last - 1, last + 1, last, T0 + seq
        )

    def order(oid: str, status: str, at: int) -> OrderEvent:
        body = {"id": oid, "symbol": "BTC/BRL", "side": "buy", "type": "limit", "status": status,
                "updatedAt": at, "createdAt": T0, "limitPrice": "100.00"}  # fmt: skip
        return OrderEvent("watchorders", at * 10**6, "c1", at, None, oid, status, status, at, body)

    prices = TickerView([], autostart=False)
    for k in range(3):
        prices.apply(TickersEvent("watchtickers", T0 * 10**6, "c1", k, None, (
            tick("BTC/BRL", 350_000.0 + k, k), tick("ETH/BRL", 18_000.0 - k, k))))  # fmt: skip
    orders = OrderStatusView([], autostart=False)
    for k, status in enumerate(["OPEN", "TRIGGERED", "PROCESSING", "EXECUTED"]):
        orders.apply(order("l-000001-aaaa", status, T0 + k))
    orders.apply(order("l-000002-bbbb", "OPEN", T0 + 10))
    for view in (prices, orders):
        view.repaint(force=True)
        view.stop()  # as notebook 02 leaves them: frozen on their last state
    return [prices, orders]


def _notebook(path: Path, outputs: list[dict[str, Any]], widgets: dict[str, Any] | None) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    if widgets is not None:
        nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": widgets}
    nb.cells.append(nbformat.v4.new_markdown_cell("# Outputs"))
    for i, bundle in enumerate(outputs):
        cell = nbformat.v4.new_code_cell(f"output{i}", execution_count=i + 1)
        cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
        nb.cells.append(cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def views_notebook(path: Path) -> None:
    """A notebook whose outputs are the views of views(), with their widget state."""
    from ipywidgets.embed import embed_data

    shown = views()
    data = embed_data(views=[v.widget for v in shown])
    outputs = [
        {"application/vnd.jupyter.widget-view+json": spec, "text/plain": repr(view)}
        for view, spec in zip(shown, data["view_specs"], strict=True)
    ]
    _notebook(path, outputs, data["manager_state"])


def report_notebook(path: Path) -> None:
    """A notebook whose output is an execution report of synthetic orders, as notebook 04
    shows one (its ``_repr_html_``)."""
    bench = str(ROOT / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    from _synthetic import mixed_orders

    from toolkit.frames._frames import build_frames
    from toolkit.report import execution_report

    report = execution_report(build_frames(mixed_orders(120, seed=9)))
    _notebook(path, [{"text/html": report._repr_html_(), "text/plain": repr(report)}], None)
