"""The report's figures as inline SVG that follows the page's theme: text, axes and
reference lines are drawn in a marker colour that becomes ``currentColor`` (the text
colour of the page, light or dark), on a transparent background."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: the colour figures draw text, axes and reference lines in; becomes currentColor in SVG
#: (near black: a PNG export on white reads as usual)
INK = "#0b0c0d"

_RC: Any = {  # matplotlib's stubs type the keys as literals
    "text.parse_math": False,
    "text.color": INK,
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "legend.facecolor": "none",
    "legend.labelcolor": INK,
}


@contextmanager
def ink() -> Iterator[None]:
    """Draw figures inside this: every label, tick and axis in :data:`INK`, and
    ``text.parse_math`` off (a venue or symbol from the data is plain text, never
    mathtext). Each artist keeps these settings, so it renders the same later."""
    import matplotlib

    with matplotlib.rc_context(_RC):
        yield


def figure_svg(fig: Figure, alt: str) -> str:
    """``fig`` as an inline ``<svg>`` element, transparent, its ink in ``currentColor``,
    scaling down to the width it is given; ``alt`` is its accessible name."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": alt}):
        fig.savefig(buf, format="svg", transparent=True)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = svg.replace(INK, "currentColor").replace(INK.upper(), "currentColor")
    # inline in HTML the namespaces are implied and the metadata says nothing to a reader:
    # the page keeps no URL at all
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    # the page decides the size: as wide as the figure was drawn, never wider than its box
    svg = re.sub(
        r'<svg([^>]*?) width="([\d.]+)pt" height="([\d.]+)pt"',
        lambda m: (
            f'<svg{m.group(1)} role="img" aria-label="{alt}" class="tk-fig" '
            f'style="width: {float(m.group(2)) * 4 / 3:.0f}px"'
        ),
        svg,
        count=1,
    )
    return svg
