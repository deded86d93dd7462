"""Generate the reference pages of the documentation from the code, and put the executed
notebooks beside them; run by the MkDocs hook (docs/tools/hooks.py) before every build,
or alone: ``python docs/tools/gen_pages.py``.

Pages (under docs/src/generated/, not in git): the column dictionary (from the frames'
schema), the service profile reference (from ``toolkit/profile/_model.py``), the report's
metric definitions (from ``toolkit/report/_definitions.py``) and the CLI reference (from
``--help``). Notebooks (docs/src/notebooks/, not in git): the executed copies in
out/notebooks/ (tests/test_notebooks.py leaves them there) when they were made from the
notebook and the code as they are now, else each notebook is executed here against its
own simulator. An executed copy made here carries a hash of its inputs (the notebook, the
package's code, the profiles) in its metadata, compared on the next build; a copy without
it counts only when it is newer than every input, and is then stamped."""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import re
import shutil
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "docs" / "src"
GENERATED = SRC / "generated"
NOTEBOOKS_OUT = SRC / "notebooks"
EXECUTED = ROOT / "out" / "notebooks"
# what must never reach a page (the simulator's secrets, a token in a URL)
SECRETS = ("demo-secret", "market-only-secret", "orders-only-secret", "other-secret")
TOKEN = re.compile(r"token=(?!\*|<|x\b|REDACTED)[^&\s\"'<]{6,}", re.IGNORECASE)

HERE = Path(__file__).resolve().parent
#: what an executed notebook's outputs depend on besides the notebook itself
CODE_GLOBS = ("toolkit/**/*.py", "profiles/*.toml")
#: the executed copy's metadata key holding the hash of the inputs it was made from
STAMP_KEY = "toolkit_docs_inputs"


def write(path: Path, text: str) -> bool:
    """Write ``text`` when it differs (so ``mkdocs serve`` does not rebuild forever)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def _cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell."""
    return text.replace("|", "\\|")


# -- service profile ------------------------------------------------------------------------

_PAYLOAD = {
    "ticker": "the watchTicker payload (and each element of watchTickers)",
    "tickers": "the watchTickers payload",
    "balance": "the watchBalance payload (and each balance of its list)",
}
_EXTRA = {
    "listing.page_default": "page size when none is given",
    "listing.page_min": "smallest page size the service accepts (smaller: 400)",
    "listing.page_max": "largest page size the service accepts (larger: 400)",
}


def _field_notes(klass: type) -> dict[str, str]:
    """Field -> its ``#:`` comment; a comment covers the fields that follow it up to the
    next comment or blank line (as in the model's source)."""
    import inspect

    lines, _ = inspect.getsourcelines(klass)
    notes: dict[str, str] = {}
    current: list[str] = []
    pending = False
    for line in lines:
        text = line.strip()
        if text.startswith("#:"):
            if not pending:
                current = []
            current.append(text[2:].strip())
            pending = True
            continue
        pending = False
        if not text:
            current = []
            continue
        match = re.match(r"(\w+)\s*:", text)
        if match and current and "(" not in text.split(":")[0]:
            notes[match.group(1)] = " ".join(current)
    return notes


def profile_page() -> str:
    from dataclasses import fields

    from toolkit.profile import DEFAULT_PROFILE
    from toolkit.profile._model import SECTIONS
    from toolkit.profile._toml import _value

    lines = [
        "# Service profile reference",
        "",
        "Everything the service's specification leaves unshown is one setting of a",
        "`ServiceProfile`: the client and the simulator both take it, so a real service that",
        "differs is one file away. `profiles/default.toml` holds these defaults as a file;",
        "copy it, change what your service does differently (`toolkit doctor --write-profile",
        "FILE` observes it for you) and use it with `TOOLKIT_PROFILE=FILE` or",
        "`tk.Client.from_env(profile=tk.ServiceProfile.load(FILE))`. A file may list only the",
        "settings it changes. Dotted paths (`data.bid`) reach nested fields.",
        "",
        "```python",
        'profile = tk.ServiceProfile.load("profiles/real.toml")',
        "print(profile.diff(tk.ServiceProfile()))   # what differs from the defaults",
        "```",
    ]
    for section, klass in SECTIONS.items():
        notes = _field_notes(klass)
        # the prose before the numpydoc sections (Parameters ...), which the table shows
        prose = re.split(r"\n\s*[A-Z][A-Za-z ]+\n\s*-{3,}\s*\n", klass.__doc__ or "")[0]
        doc = " ".join(prose.split())
        lines += [
            "",
            f"## `[{section}]`",
            "",
            doc,
            "",
            "| setting | default | meaning |",
            "|---|---|---|",
        ]
        defaults = getattr(DEFAULT_PROFILE, section)
        for f in fields(klass):
            dotted = f"{section}.{f.name}"
            note = notes.get(f.name) or _EXTRA.get(dotted)
            if note is None and section == "payloads":
                kind, _, what = f.name.partition("_")
                note = f"path of the {what} in {_PAYLOAD[kind]}"
            if note is None:
                raise KeyError(f"profile setting {dotted} has no comment in the model")
            value = _cell(_value(getattr(defaults, f.name), dotted))
            lines.append(f"| `{f.name}` | `{value}` | {_cell(note)} |")
    return "\n".join(lines) + "\n"


# -- metrics --------------------------------------------------------------------------------


def metrics_page() -> str:
    from toolkit.report import _definitions as d

    lines = [
        "# Report metric definitions",
        "",
        "What `tk.execution_report(frames, market=None)` computes, as its HTML report says",
        "(generated from `toolkit/report/_definitions.py`, the text the report itself shows).",
        "",
        "## Conventions",
        "",
        d.CONVENTIONS,
        "",
        "## Settings",
        "",
        "| setting | value |",
        "|---|---|",
        f"| at the quote within | {d.AT_QUOTE_TOLERANCE_BP} bp |",
        f"| fully filled from | {d.FULL_FILL:.2%} fill rate |",
        f"| outliers | \\|value\\| > {d.OUTLIER_ABS_BP:g} bp or > {d.OUTLIER_SIGMAS:g} robust "
        "sigmas from the median |",
        f"| data-check tolerance | {d.CHECK_TOLERANCE_BP:g} bp |",
        f"| bootstrap resamples | {d.BOOTSTRAP_RESAMPLES} |",
        "| markout horizons | " + ", ".join(f"{h:+d} s" for h in d.MARKOUT_HORIZONS_S) + " |",
        "| time-to-execution buckets | " + ", ".join(b[2] for b in d.LATENCY_BUCKETS) + " |",
    ]
    shown: set[str] = set()
    for section in d.SECTIONS:
        if not section.definitions:
            continue
        lines += ["", f"## {section.title}", ""]
        if section.tables:
            tables = ", ".join(f"`{t}`" for t in section.tables)
            lines += [f"Tables: {tables}.", ""]
        lines += ["| metric | definition |", "|---|---|"]
        for key in section.definitions:
            item = d.DEFINITIONS[key]
            shown.add(key)
            lines.append(f"| {item.title} | {_cell(item.text)} |")
    missing = sorted(set(d.DEFINITIONS) - shown)
    if missing:
        lines += ["", "## Other definitions", "", "| metric | definition |", "|---|---|"]
        lines += [f"| {d.DEFINITIONS[k].title} | {_cell(d.DEFINITIONS[k].text)} |" for k in missing]
    return "\n".join(lines) + "\n"


# -- CLI ------------------------------------------------------------------------------------


def cli_page() -> str:
    from toolkit.cli._main import COMMANDS, build_parser

    os.environ["COLUMNS"] = "96"  # argparse wraps to this width
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    lines = [
        "# Command line",
        "",
        "`toolkit` is installed with the package. Every command reads the connection from",
        "the environment (`TOOLKIT_ENV`, `TOOLKIT_BASE_URL`, `TOOLKIT_WS_URL`,",
        "`TOOLKIT_API_KEY`, `TOOLKIT_API_SECRET`, `TOOLKIT_PROFILE`) unless told to start",
        "a simulator. Generated from `--help`.",
        "",
        "## toolkit",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
    ]
    for name, _module in COMMANDS:
        lines += [
            "",
            f"## toolkit {name}",
            "",
            "```text",
            sub.choices[name].format_help().rstrip(),
            "```",
        ]
    return "\n".join(lines) + "\n"


# -- notebooks ------------------------------------------------------------------------------


def _check_secrets(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    leaked = [s for s in SECRETS if s in text]
    if leaked or TOKEN.search(text):
        raise RuntimeError(f"{path.name}: a secret or token is in its outputs; not published")


def _execute(source: Path, target: Path, stamp: str) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(source, as_version=4)
    with tempfile.TemporaryDirectory(prefix="tk-docs-nb-") as out:
        os.environ["TOOLKIT_NOTEBOOK_OUT"] = out
        NotebookClient(
            nb,
            timeout=180,
            kernel_name="python3",
            resources={"metadata": {"path": str(source.parent)}},
        ).execute()
    nb.metadata[STAMP_KEY] = stamp
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)


def code_files(root: Path = ROOT) -> list[Path]:
    """The files besides a notebook that its outputs depend on (``CODE_GLOBS``)."""
    found = {p for pattern in CODE_GLOBS for p in root.glob(pattern) if p.is_file()}
    return sorted(p for p in found if "__pycache__" not in p.parts)


def inputs_hash(source: Path, code: list[Path], root: Path = ROOT) -> str:
    """A hash of ``source`` and ``code`` (names and contents): what an executed copy of the
    notebook was made from."""
    digest = hashlib.sha256()
    for path in [source, *code]:
        name = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _stamp_of(executed: Path) -> str | None:
    import nbformat

    try:
        nb = nbformat.read(executed, as_version=4)
    except (OSError, ValueError):
        return None
    value = nb.metadata.get(STAMP_KEY)
    return value if isinstance(value, str) else None


def _write_stamp(executed: Path, stamp: str) -> None:
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    nb.metadata[STAMP_KEY] = stamp
    nbformat.write(nb, executed)


def is_fresh(executed: Path, source: Path, code: list[Path], stamp: str) -> bool:
    """Whether ``executed`` shows what ``source`` gives with today's code: its stamp is
    ``stamp``; without a stamp (a copy tests/test_notebooks.py wrote), it is newer than
    the notebook and every code file. A fresh copy without a stamp is stamped, so a later
    change of the code is seen whatever the files' times say."""
    if not executed.exists():
        return False
    saved = _stamp_of(executed)
    if saved is not None:
        return saved == stamp
    made = executed.stat().st_mtime
    if any(path.stat().st_mtime > made for path in [source, *code]):
        return False
    try:
        _write_stamp(executed, stamp)
    except (OSError, ValueError):
        return False  # not a readable notebook: made again
    return True


def notebooks(execute: bool = True) -> list[str]:
    """Copy the executed notebooks into the site; returns what was executed here."""
    ran: list[str] = []
    NOTEBOOKS_OUT.mkdir(parents=True, exist_ok=True)
    code = code_files()
    for source in sorted((ROOT / "notebooks").glob("*.ipynb")):
        executed = EXECUTED / source.name
        stamp = inputs_hash(source, code)
        if not is_fresh(executed, source, code, stamp):
            if not execute:
                raise RuntimeError(
                    f"{source.name} has no executed copy in {EXECUTED} made from today's "
                    "notebook and code"
                )
            started = time.monotonic()
            _execute(source, executed, stamp)
            ran.append(f"{source.stem} ({time.monotonic() - started:.0f} s)")
        _check_secrets(executed)
        target = NOTEBOOKS_OUT / source.name
        if not target.exists() or target.read_bytes() != executed.read_bytes():
            shutil.copyfile(executed, target)
    return ran


# -- all ------------------------------------------------------------------------------------


def main(execute: bool = True) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("tk_docs_columns", HERE / "columns.py")
    assert spec is not None and spec.loader is not None
    columns = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(columns)
    columns_page = columns.page

    with redirect_stdout(io.StringIO()):
        pages = {
            "columns.md": columns_page(),
            "profile.md": profile_page(),
            "metrics.md": metrics_page(),
            "cli.md": cli_page(),
        }
    for name, text in pages.items():
        write(GENERATED / name, text)
    ran = notebooks(execute=execute)
    if ran:
        print("docs: executed " + ", ".join(ran), file=sys.stderr)


if __name__ == "__main__":
    main(execute="--no-execute" not in sys.argv)
