"""The recorder's converter: a process of its own that turns closed write-ahead segments into
Parquet, so that the conversion never competes for the GIL with the receiving loop.

The recorder starts it with ``ConverterProcess.start`` and sends it the path of each
closed segment, one per line on its stdin. The converter says ``ready`` once started, then
answers one JSON line per segment on its stdout, in order: ``{"done": path, "files": n}``
(with ``"misses": {setting: count}`` when messages lacked a field the profile maps) or
``{"failed": path, "error": text}``, with ``"warnings": [text, ...]`` when the
conversion warned (a segment kept for its bad bytes), which the recorder logs. It ends
after the line ``exit``, once every segment sent before it is converted. It runs at a
lower CPU priority, shares the root's lock with the recorder (the descriptor is
inherited: a new recorder cannot open the root while a conversion is running), and is
killed with its parent (Linux), whose segments the next recorder then recovers. A
converter that cannot start or dies leaves its segments in the backlog: the recorder
converts them in a thread of its own instead.

    python -m toolkit.recording._convert CONFIG_JSON
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolkit._aio import wait_for
from toolkit.profile import ServiceProfile
from toolkit.recording._conversion import convert_segment
from toolkit.recording._writer import ClosedSegment, RecordingWriter

_log = logging.getLogger("toolkit.recording")
#: the converter's niceness once it is ready (the lowest priority): conversions take the
#: idle time of the machine, and under a burst they wait, on disk, bounded by
#: ``max_backlog_bytes``. Its start-up (imports, one-off) runs at the recorder's own
#: priority: at the lowest, it took 20-95 s on a machine with both cores busy, while the
#: segments closed meanwhile waited.
NICENESS = 19


def _die_with_parent(parent: int) -> None:
    """Be killed when the recorder dies (Linux ``PR_SET_PDEATHSIG``), so its lock goes."""
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def main(argv: list[str] | None = None) -> int:
    """Convert the segments named on stdin until ``exit`` (or the end of stdin)."""
    args = sys.argv[1:] if argv is None else argv
    config = json.loads(args[0])
    _die_with_parent(int(config["parent"]))
    root = Path(config["root"])
    compression = str(config["compression"])
    profile = ServiceProfile.from_dict(config["profile"], source="recorder")
    from toolkit.recording._raw import warm_up

    warm_up(profile)
    warnings: list[str] = []
    collect = _Collect(warnings)
    _log.addHandler(collect)
    _log.propagate = False  # said in the replies, logged by the recorder
    with contextlib.suppress(OSError):
        os.nice(NICENESS)  # after the imports: the conversions only take the idle time
    out = sys.stdout
    out.write("ready\n")  # imports done: nothing of the start-up competes with a recording
    out.flush()
    for line in sys.stdin:
        path = line.rstrip("\n")
        if path == "exit":
            break
        if not path:
            continue
        misses: dict[str, int] = {}
        try:
            files = convert_segment(
                root, path, compression=compression, profile=profile, misses=misses
            )
        except Exception as exc:
            reply: dict[str, Any] = {"failed": path, "error": f"{type(exc).__name__}: {exc}"}
        else:
            reply = {"done": path, "files": len(files)}
            if misses:
                reply["misses"] = misses
        if warnings:
            reply["warnings"] = list(warnings)
            warnings.clear()
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


class _Collect(logging.Handler):
    """The converter's warnings, kept for its next reply."""

    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


def _env() -> dict[str, str]:
    """The environment of the converter: this toolkit importable, whatever the cwd."""
    import toolkit

    here = str(Path(toolkit.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    return env


class ConverterProcess:
    """The recorder's side of the converter process (on its event loop).

    ``submit`` sends a closed segment; as replies come, ``writer.converted`` takes it off
    the backlog (``on_failed(path, error)`` is called for one that failed: it stays in the
    backlog). ``finish`` waits until everything sent is converted and the process ended.
    ``alive`` is False once it ended or could not start.
    """

    def __init__(
        self,
        writer: RecordingWriter,
        on_failed: Callable[[Path, str], None] | None = None,
    ) -> None:
        self.writer = writer
        self.on_failed = on_failed
        self._proc: asyncio.subprocess.Process | None = None
        self._replies: asyncio.Task[None] | None = None
        self._sent: list[Path] = []
        self._finishing = False

    @property
    def alive(self) -> bool:
        return (
            self._proc is not None
            and self._proc.returncode is None
            and not (self._replies is not None and self._replies.done())
        )

    @property
    def outstanding(self) -> list[Path]:
        """Segments sent and not answered yet."""
        return list(self._sent)

    async def start(self, timeout: float = 60.0) -> None:
        """Start the process and wait until it is ready (its imports done); raises OSError
        when it cannot start. The recorder runs this beside its receiving, never before
        it: at the lowest CPU priority on a busy machine, it can take tens of seconds."""
        writer = self.writer
        config = {
            "root": str(writer.root),
            "compression": writer.compression,
            "profile": writer.profile.to_dict(),
            "parent": os.getpid(),
        }
        fds = () if writer.lock_fd is None else (writer.lock_fd,)
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "toolkit.recording._convert",
            json.dumps(config),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            pass_fds=fds,
            env=_env(),
        )
        assert self._proc.stdout is not None
        try:
            line = await wait_for(self._proc.stdout.readline(), timeout)
        except TimeoutError:
            line = b""
        if line.strip() != b"ready":
            self.kill()
            await self._proc.wait()
            raise OSError(f"the converter process did not start (code {self._proc.returncode})")
        self._replies = asyncio.ensure_future(self._read_replies(self._proc))

    def submit(self, closed: ClosedSegment) -> bool:
        """Send a closed (fsynced) segment; False when the process is not there."""
        proc = self._proc
        if not self.alive or proc is None or proc.stdin is None:
            return False
        try:
            proc.stdin.write(f"{closed.path}\n".encode())
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            return False
        self._sent.append(closed.path)
        return True

    async def _read_replies(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while True:
            line = await proc.stdout.readline()
            if not line:
                break
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            for text in reply.get("warnings", ()):
                _log.warning("%s", text)
            if "done" in reply:
                path = Path(reply["done"])
                misses = reply.get("misses")
                self.writer.converted(
                    path, int(reply.get("files", 0)), misses if isinstance(misses, dict) else None
                )
            else:
                path = Path(reply.get("failed", ""))
                _log.warning("converting %s failed: %s", path, reply.get("error"))
                if self.on_failed is not None:
                    self.on_failed(path, str(reply.get("error")))
            with contextlib.suppress(ValueError):
                self._sent.remove(path)
        await proc.wait()
        if not self._finishing:
            _log.warning(
                "the recorder's converter process ended (code %s); converting in-process",
                proc.returncode,
            )

    async def finish(self) -> None:
        """Let the process convert everything sent, then end it."""
        proc = self._proc
        if proc is None:
            return
        self._finishing = True
        if proc.stdin is not None and proc.returncode is None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError, RuntimeError):
                proc.stdin.write(b"exit\n")
                await proc.stdin.drain()
            with contextlib.suppress(Exception):
                proc.stdin.close()
        if self._replies is not None:
            await self._replies
        await proc.wait()

    def kill(self) -> None:
        """End the process at once (its segments stay on disk, for recovery)."""
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    async def kill_and_wait(self) -> None:
        """``kill``, then wait until it is gone: nothing of it writes any more."""
        self.kill()
        proc = self._proc
        if proc is not None:
            await asyncio.shield(proc.wait())


if __name__ == "__main__":  # pragma: no cover - the process itself
    sys.exit(main())
