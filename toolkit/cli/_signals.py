"""How the command line stops on Ctrl-C (SIGINT) and SIGTERM: both raise in the main
thread (KeyboardInterrupt, :class:`Terminated`), so every command unwinds through its
clean path (a sync keeps what it fetched, temporary files are removed, the store lock is
released) and ends with one line and exit status 128 + the signal's number."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread where Ctrl-C raises KeyboardInterrupt (a
    subclass of it: every clean-up that handles Ctrl-C handles SIGTERM too)."""

    signum = signal.SIGTERM


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` in the main thread for the block (instead of
    ending the process at once, leaving temporary files and unwritten bodies behind);
    SIGINT keeps Python's KeyboardInterrupt. Outside the main thread: nothing to do."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def signal_of(interrupt: BaseException) -> signal.Signals:
    """The signal an interrupt stands for."""
    return signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT


def exit_status(sig: signal.Signals) -> int:
    """The shell's convention: 128 + the signal's number (130 for SIGINT, 143 SIGTERM)."""
    return 128 + int(sig)


def interrupted_line(command: str, interrupt: BaseException) -> str:
    """The one line an interrupted command prints: the signal and what was kept (the
    notes the interrupted call added to the interrupt)."""
    notes = [" ".join(str(n).split()) for n in getattr(interrupt, "__notes__", ())]
    said = "".join(f"; {n}" for n in notes if n)
    return f"toolkit {command}: interrupted by {signal_of(interrupt).name}{said}"
