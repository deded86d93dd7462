"""The package's architecture, checked: each subpackage imports only the layers below it
(every import counts, also lazy and type-only ones), no cycle, no module over 600 lines."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "toolkit"

# unit -> the units it may import. A unit is a subpackage or a top-level module.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_lazy": set(),
    "_aio": set(),  # wait_for that keeps a cancel (3.11's asyncio.wait_for loses it)
    "_atomic": {"errors"},  # WriteError, InvalidRequest
    "protocol": {"errors"},
    "profile": {"errors", "protocol"},
    "frames": {"errors", "protocol", "profile", "_lazy"},
    "stream": {"errors", "protocol", "profile", "_lazy"},
    "client": {"errors", "protocol", "profile", "frames", "stream", "_lazy"},
    "recording": {"errors", "protocol", "profile", "stream", "client", "_lazy"},
    "widgets": {"errors", "protocol", "profile", "stream", "recording", "client", "_lazy"},
    "report": {"errors", "protocol", "profile", "frames", "recording", "_lazy"},
    "store": {
        "errors",
        "protocol",
        "profile",
        "frames",
        "client",
        "stream",
        "recording",
        "_lazy",
        "_atomic",
    },
    # the simulator serves any profile; it imports the client only for sim.client()
    "sim": {"errors", "protocol", "profile", "client"},
    "doctor": {"errors", "protocol", "profile", "stream", "client", "_lazy"},
    "demo": {
        "errors",
        "protocol",
        "profile",
        "frames",
        "stream",
        "client",
        "recording",
        "report",
        "store",
        "sim",
    },
    "cli": {
        "errors",
        "protocol",
        "profile",
        "doctor",
        "frames",
        "stream",
        "client",
        "recording",
        "report",
        "store",
        "widgets",
        "sim",
        "demo",
    },
    "__init__": {
        "errors",
        "protocol",
        "profile",
        "doctor",
        "frames",
        "stream",
        "client",
        "recording",
        "report",
        "store",
        "widgets",
        "sim",
        "_lazy",
    },
}
# every layer that writes a file writes it through toolkit._atomic (whole or not at all);
# every layer that waits with a timeout may use toolkit._aio
for _unit in ALLOWED:
    if _unit not in {"errors", "_lazy", "_atomic", "_aio"}:
        ALLOWED[_unit].add("_atomic")
        ALLOWED[_unit].add("_aio")
MAX_LINES = 600


def _modules(root: Path = PACKAGE) -> Iterator[Path]:
    yield from sorted(root.rglob("*.py"))


def _unit(path: Path, root: Path = PACKAGE) -> str:
    rel = path.relative_to(root)
    if len(rel.parts) == 1:
        return rel.stem
    return rel.parts[0]


def _module_name(path: Path, root: Path = PACKAGE) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(path: Path, root: Path = PACKAGE) -> Iterator[str]:
    """Every toolkit module ``path`` imports, wherever the import statement stands."""
    tree = ast.parse(path.read_text(), str(path))
    package = _module_name(path, root)
    package = package if path.name == "__init__.py" else package.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            yield name
            for alias in node.names:
                yield f"{name}.{alias.name}"
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("toolkit.")
            and " " not in node.value
        ):
            # importlib.import_module("toolkit.x") and lazy-export tables count too
            yield node.value


def _target_unit(name: str, root: Path = PACKAGE) -> str | None:
    parts = name.split(".")
    if parts[0] != "toolkit" or len(parts) < 2:
        return None
    candidate = root / parts[1]
    if candidate.is_dir() or candidate.with_suffix(".py").is_file():
        return parts[1]
    return None


def unit_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """unit -> the other units its modules import."""
    graph: dict[str, set[str]] = {}
    for path in _modules(root):
        unit = _unit(path, root)
        deps = graph.setdefault(unit, set())
        for name in _imported(path, root):
            target = _target_unit(name, root)
            if target is not None and target != unit:
                deps.add(target)
    return graph


def test_every_unit_is_declared() -> None:
    assert set(unit_graph()) <= set(ALLOWED), "a new subpackage needs its layer in ALLOWED"


@pytest.mark.parametrize("unit", sorted(ALLOWED))
def test_unit_imports_only_the_layers_below_it(unit: str) -> None:
    extra = unit_graph().get(unit, set()) - ALLOWED[unit]
    assert not extra, f"toolkit.{unit} imports {sorted(extra)}, outside its layer"


def find_cycle(graph: dict[str, set[str]]) -> None:
    """Raise AssertionError naming the first cycle found in ``graph``."""
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*trail, node, dep]))
            if dep not in state:
                visit(dep, [*trail, node])
        state[node] = 2

    for unit in sorted(graph):
        if unit not in state:
            visit(unit, [])


def test_no_import_cycle_between_units() -> None:
    find_cycle(unit_graph())


def test_the_simulator_is_imported_only_by_the_cli_and_the_demo() -> None:
    users = {u for u, deps in unit_graph().items() if "sim" in deps}
    assert users <= {"cli", "demo", "__init__"}


@pytest.mark.parametrize("path", list(_modules()), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_is_short_enough(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines; split it along its seams"


@pytest.mark.parametrize(
    "package", sorted(p.parent for p in PACKAGE.glob("*/__init__.py")), ids=lambda p: p.name
)
def test_subpackage_says_what_it_is_for(package: Path) -> None:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
    assert doc and len(doc.split()) >= 12, f"toolkit.{package.name} needs a docstring"


def test_the_layer_check_catches_a_cycle(tmp_path: Path) -> None:
    """The check itself can fail: a stream module importing the client, even lazily, is
    caught as a cycle (client -> stream -> client)."""
    root = tmp_path / "toolkit"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "stream" / "_probe.py").write_text(
        "def f():\n    from toolkit.client import Client\n    return Client\n"
    )
    graph = unit_graph(root)
    assert "client" in graph["stream"]
    with pytest.raises(AssertionError, match=r"import cycle: .*client -> stream -> client"):
        find_cycle(graph)
