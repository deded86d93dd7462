"""``toolkit doctor`` / ``tk.diagnose(client)``: a read-only check of a live service against
the service profile, and the profile it observed.

May import ``toolkit.errors``, ``toolkit.protocol``, ``toolkit.profile``, ``toolkit.client`` and
``toolkit.stream``; probes with httpx and websockets directly, so it sees raw shapes the
client would reject."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit._lazy import lazy_exports

__all__ = ["UNOBSERVABLE", "Diagnosis", "Row", "adiagnose", "diagnose"]

_EXPORTS = {
    "Diagnosis": "toolkit.doctor._report",
    "Row": "toolkit.doctor._report",
    "adiagnose": "toolkit.doctor._run",
    "diagnose": "toolkit.doctor._run",
    "UNOBSERVABLE": "toolkit.doctor._run",
}

if TYPE_CHECKING:  # pragma: no cover
    from toolkit.doctor._report import Diagnosis, Row
    from toolkit.doctor._run import UNOBSERVABLE, adiagnose, diagnose

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
