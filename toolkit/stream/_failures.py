"""What a stream session says about the callbacks it calls when they fail: the first
failure of a kind with its traceback, the identical ones after it only counted."""

from __future__ import annotations

import logging
import sys

__all__ = ["CallbackFailures"]

_log = logging.getLogger("toolkit.stream")

#: distinct failures remembered (and logged); beyond it, failures are only counted
_KINDS_KEPT = 256


class CallbackFailures:
    """The failures of a session's callbacks (typed and raw).

    ``report(what, fn)``, called from the ``except`` block that caught the failure of
    ``fn``, counts it in ``count``; it logs it with its traceback only the first time
    this callback fails this way (same exception type and text), so a callback that
    fails on every message (a recorder on a full disk) gives one traceback, not one per
    message. Nothing is raised: a callback never stops the session.
    """

    __slots__ = ("_seen", "count", "logged")

    def __init__(self) -> None:
        self.count = 0
        self.logged = 0
        #: (what, id of the callback, exception type, text) -> times it happened
        self._seen: dict[tuple[str, int, type[BaseException], str], int] = {}

    def report(self, what: str, fn: object) -> None:
        """Count the failure being handled; log it unless it is a repeat (see above)."""
        self.count += 1
        exc = sys.exc_info()[1]
        key = (what, id(fn), type(exc) if exc is not None else BaseException, str(exc))
        seen = self._seen.get(key)
        if seen is not None:
            self._seen[key] = seen + 1
            return
        if len(self._seen) >= _KINDS_KEPT:
            return  # a flood of distinct failures: counted, not logged again
        self._seen[key] = 1
        self.logged += 1
        _log.exception(
            "%s (further identical failures of this callback are counted in "
            "stats.callback_errors, not logged)",
            what,
        )

    def summarize(self) -> None:
        """Log how many failures were only counted (at the end of the session)."""
        unlogged = self.count - self.logged
        if unlogged:
            _log.warning(
                "stream callbacks failed %d times in all; %d of the failures were not "
                "logged (repeats of one logged before)",
                self.count,
                unlogged,
            )
            self.logged = self.count
