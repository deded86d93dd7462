"""The ``Client`` docstring (rendered in docs/src/api/client.md) documents the real
signature: every parameter, in order, with a type that says when it has a default."""

from __future__ import annotations

import inspect

from toolkit.client import Client


def _documented(doc: str) -> list[tuple[str, str]]:
    lines = inspect.cleandoc(doc).splitlines()
    start = lines.index("Parameters") + 2  # the title and its rule
    out: list[tuple[str, str]] = []
    for line in lines[start:]:
        if line.strip() and set(line.strip()) == {"-"}:
            out.pop()  # the next section's title
            break
        if line.strip() and not line[0].isspace():
            name, _, kind = line.partition(" : ")
            out.append((name.strip(), kind.strip()))
    return out


def test_the_client_docstring_documents_its_real_parameters() -> None:
    doc = inspect.getdoc(Client) or ""
    assert "Parameters" in doc.splitlines()
    documented = _documented(doc)
    real = [
        ("**" if p.kind is p.VAR_KEYWORD else "") + p.name
        for p in inspect.signature(Client).parameters.values()
    ]
    assert [name for name, _ in documented] == real
    defaults = {
        p.name for p in inspect.signature(Client).parameters.values() if p.default is not p.empty
    }
    for name, kind in documented:
        assert kind, name
        if name in defaults:
            assert "optional" in kind or "default" in kind, name
