"""The public API's docstrings are numpydoc (the project standard): every public callable of
the packages in ``PACKAGES`` (their ``__all__``, and each class's public methods) has a
docstring whose ``Parameters`` section names exactly its real parameters, in order, each
with a type (and ``optional`` or ``default ...`` when it has a default). A package joins
the check by adding its name to ``PACKAGES``.

numpydoc is not a dependency, so its ``Parameters`` block is read by the small parser
below. A dataclass may document its fields (its constructor's parameters) under
``Attributes`` instead, as the records the toolkit returns do."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

PACKAGES = ["toolkit.profile", "toolkit.doctor"]

_RULE = re.compile(r"-{3,}")


def sections(doc: str) -> dict[str, list[str]]:
    """Section title -> its lines, for a numpydoc docstring (a title is a line followed by
    a line of dashes; the summary before the first title is not a section)."""
    lines = inspect.cleandoc(doc).splitlines()
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and _RULE.fullmatch(lines[i + 1].strip()):
            current = out.setdefault(lines[i].strip(), [])
            i += 2
            continue
        if current is not None:
            current.append(lines[i])
        i += 1
    return out


def entries(block: list[str]) -> list[tuple[str, str]]:
    """(name, type) of each entry of a Parameters-like block: an unindented line
    ``name : type`` (``a, b : type`` names two); the indented lines are descriptions."""
    out: list[tuple[str, str]] = []
    for line in block:
        if not line.strip() or line[0].isspace():
            continue
        names, _, kind = line.partition(" : ")
        out += [(name.strip(), kind.strip()) for name in names.split(",")]
    return out


def real_parameters(obj: Callable[..., Any]) -> list[tuple[str, bool]]:
    """(name as numpydoc writes it, has a default) of each parameter, ``self``/``cls``
    left out; ``*args`` and ``**kwargs`` keep their stars."""
    out: list[tuple[str, bool]] = []
    for p in inspect.signature(obj).parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.kind is p.VAR_POSITIONAL:
            out.append((f"*{p.name}", False))
        elif p.kind is p.VAR_KEYWORD:
            out.append((f"**{p.name}", False))
        else:
            out.append((p.name, p.default is not p.empty))
    return out


def mismatches(obj: Callable[..., Any], doc: str | None, *, record: bool = False) -> list[str]:
    """What is wrong with ``doc`` as the numpydoc docstring of ``obj`` (empty: nothing).
    ``record``: ``obj`` is a dataclass, which may list its fields under Attributes."""
    if not doc or not doc.strip():
        return ["no docstring"]
    params = real_parameters(obj)
    found = sections(doc)
    block = found.get("Parameters")
    if block is None and record:
        block = found.get("Attributes")
    if block is None:
        return ["no Parameters section"] if params else []
    documented = entries(block)
    problems = []
    names = [name for name, _ in params]
    if [name for name, _ in documented] != names:
        problems.append(f"documents {[n for n, _ in documented]}, signature has {names}")
    kinds = dict(documented)
    for name, has_default in params:
        kind = kinds.get(name)
        if kind == "":
            problems.append(f"{name} has no type")
        elif kind and has_default and "optional" not in kind and "default" not in kind:
            problems.append(f"{name} has a default its type line does not mention")
    return problems


def _public_methods(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods and properties of ``cls``, inherited ones from toolkit classes too."""
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        owner = next((k for k in cls.__mro__ if name in k.__dict__), None)
        if owner is None or not owner.__module__.startswith("toolkit"):
            continue
        yield name, owner.__dict__[name]


def targets(package: str) -> Iterator[tuple[str, Callable[..., Any] | None, str | None, bool]]:
    """(qualified name, callable or None for a property, docstring, is a record) of every
    public callable of ``package``."""
    module = importlib.import_module(package)
    for name in module.__all__:
        obj = getattr(module, name)
        qual = f"{package}.{name}"
        if inspect.isclass(obj):
            if issubclass(obj, BaseException | enum.Enum):
                yield qual, None, inspect.getdoc(obj), False
                continue
            yield qual, obj, inspect.getdoc(obj), dataclasses.is_dataclass(obj)
            for attr, raw in _public_methods(obj):
                if isinstance(raw, property):
                    yield f"{qual}.{attr}", None, inspect.getdoc(raw), False
                elif isinstance(raw, staticmethod | classmethod) or inspect.isfunction(raw):
                    method = getattr(obj, attr)
                    yield f"{qual}.{attr}", method, inspect.getdoc(method), False
        elif callable(obj):
            yield qual, obj, inspect.getdoc(obj), False


CASES = [case for package in PACKAGES for case in targets(package)]


@pytest.mark.parametrize(("qual", "obj", "doc", "record"), CASES, ids=[c[0] for c in CASES])
def test_public_callable_has_numpydoc_parameters(
    qual: str, obj: Callable[..., Any] | None, doc: str | None, record: bool
) -> None:
    if obj is None:  # a property, an exception or an enum: a docstring is enough
        assert doc and doc.strip(), f"{qual}: no docstring"
        return
    assert mismatches(obj, doc, record=record) == [], qual


def test_every_listed_package_has_callables() -> None:
    for package in PACKAGES:
        assert any(c[0].startswith(package + ".") for c in CASES), package


# -- the checker itself ---------------------------------------------------------------------


def _sample(a: int, b: str = "x", *rest: int, **extra: Any) -> None:
    """Something.

    Parameters
    ----------
    a : int
        First.
    b : str, default "x"
        Second.
    *rest : int
        More.
    **extra : Any
        Keywords.

    Returns
    -------
    None
    """


def test_checker_accepts_a_matching_docstring() -> None:
    assert mismatches(_sample, _sample.__doc__) == []


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        (None, "no docstring"),
        ("Something.", "no Parameters section"),
        (  # b left out
            "S.\n\nParameters\n----------\na : int\n*rest : int\n**extra : Any\n",
            "documents ['a', '*rest', '**extra']",
        ),
        (  # a parameter the signature lacks
            "S.\n\nParameters\n----------\na : int\nb : str, optional\nc : int\n"
            "*rest : int\n**extra : Any\n",
            "documents ['a', 'b', 'c', '*rest', '**extra']",
        ),
        (  # out of order
            "S.\n\nParameters\n----------\nb : str, optional\na : int\n*rest : int\n"
            "**extra : Any\n",
            "documents ['b', 'a', '*rest', '**extra']",
        ),
        (  # no type
            "S.\n\nParameters\n----------\na\nb : str, optional\n*rest : int\n**extra : Any\n",
            "a has no type",
        ),
        (  # a default not said
            "S.\n\nParameters\n----------\na : int\nb : str\n*rest : int\n**extra : Any\n",
            "b has a default",
        ),
        (  # the section of another name does not count for a function
            "S.\n\nAttributes\n----------\na : int\nb : str, optional\n",
            "no Parameters section",
        ),
    ],
)
def test_checker_finds_each_kind_of_mismatch(doc: str | None, problem: str) -> None:
    found = mismatches(_sample, doc)
    assert any(p.startswith(problem) for p in found), found


def test_checker_reads_a_records_attributes() -> None:
    @dataclasses.dataclass
    class Record:
        """A record.

        Attributes
        ----------
        x : int
            One.
        y : str, default ""
            Two.
        """

        x: int
        y: str = ""

    assert mismatches(Record, Record.__doc__, record=True) == []
    assert mismatches(Record, Record.__doc__) == ["no Parameters section"]
