"""What the report's set of orders covers: the frames' own coverage note and warnings
(``frames.attrs["coverage"]``, as the loaders and the order store set them) and the order
types the set lacks, so no partial set is shown as every order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: the ``check`` of the data_checks rows that carry the frames' coverage
COVERAGE_CHECK = "set coverage"

#: the label of the ``all`` order type on the page: every order of this set, no more
ALL_LABEL = "all orders in this set"

_ABSENT = {
    "market": "no market orders in this set: its figures are those of its limit orders only",
    "limit": "no limit orders in this set: its figures are those of its market orders only",
}


def frame_notes(frames: object) -> list[str]:
    """The coverage the frames carry: ``attrs["coverage"]`` as text (``load_orders``), or
    the ``warnings`` of a mapping (``OrderStore.frames()``); none for frames without it."""
    attrs = getattr(frames, "attrs", None)
    coverage = attrs.get("coverage") if isinstance(attrs, Mapping) else None
    if isinstance(coverage, str):
        notes = [coverage]
    elif isinstance(coverage, Mapping):
        warnings = coverage.get("warnings") or []
        notes = [w for w in warnings if isinstance(w, str)]
    else:
        notes = []
    return [n.strip() for n in notes if n.strip()]


def absent_type_notes(types: Iterable[str]) -> list[str]:
    """A note per order type (market, limit) missing from a set holding ``types``; none
    for an empty set (its tables say so already)."""
    present = set(types)
    if not present:
        return []
    return [text for kind, text in _ABSENT.items() if kind not in present]
