"""The public names of ``toolkit``: every name in ``__all__`` resolves, and importing the
package stays light (no pandas, pyarrow, ipywidgets or matplotlib until used)."""

from __future__ import annotations

import subprocess
import sys

import toolkit


def test_every_public_name_resolves() -> None:
    for name in toolkit.__all__:
        assert getattr(toolkit, name) is not None, name


def test_public_names_are_the_documented_ones() -> None:
    expected = {
        "Client",
        "Simulator",
        "OrderFrames",
        "OrderBook",
        "Recorder",
        "read_recording",
        "replay",
        "scan_recording",
        "compact_recording",
        "TickerView",
        "OrderStatusView",
        "execution_report",
        "CancelResult",
        "ServiceProfile",
        "OrderStore",
    }
    assert expected <= set(toolkit.__all__)


def test_unknown_name_raises_attribute_error() -> None:
    try:
        toolkit.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_import_is_light() -> None:
    code = (
        "import sys, toolkit; heavy = {'pandas', 'pyarrow', 'ipywidgets', 'matplotlib'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_all_lists_exactly_the_exports() -> None:
    assert set(toolkit.__all__) == set(toolkit._EXPORTS) | {"__version__"}
