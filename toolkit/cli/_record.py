"""``toolkit record``: record WebSocket channels into a Parquet dataset with a one-line
live status, configured from the environment like ``Client.from_env()``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import Any, TextIO

from toolkit.cli._connect import (
    ENV_HELP,
    add_connection_arguments,
    client_from_args,
    path_arg,
    positive_int,
    positive_seconds_arg,
)
from toolkit.cli._signals import exit_status
from toolkit.recording._recorder import DEFAULT_CHANNELS, Recorder
from toolkit.recording._writer import RecorderStats


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "record",
        help="record WebSocket channels into a Parquet dataset",
        description="Record channels of the service into OUT/channel=<name>/date=<day>/"
        "part-*.parquet (read back with toolkit.read_recording, DuckDB, Polars, Spark). "
        "Stops after --duration seconds, or on Ctrl-C / SIGTERM with every received "
        "message written. `toolkit record compact ROOT` merges the small files of each "
        "closed day of a recording into few large ones, then exits (no connection). " + ENV_HELP,
    )
    parser.add_argument(
        "compact",
        nargs="?",
        choices=["compact"],
        metavar="compact",
        help="merge the small files of each closed day of ROOT, instead of recording",
    )
    parser.add_argument(
        "root", nargs="?", type=path_arg, metavar="ROOT", help="the recording to compact"
    )
    parser.add_argument(
        "--channel",
        action="append",
        dest="channels",
        metavar="SPEC",
        help="watchOrders, watchTicker:BASE/QUOTE, watchTickers[:priority], watchBalance; "
        f"repeatable (default: {' '.join(DEFAULT_CHANNELS)})",
    )
    parser.add_argument("--out", type=path_arg, help="root of the recording (required)")
    parser.add_argument(
        "--duration",
        type=positive_seconds_arg,
        help="seconds to record (default: until stopped)",
    )
    add_connection_arguments(parser)
    parser.add_argument(
        "--flush-interval",
        type=positive_seconds_arg,
        default=1.0,
        help="seconds between fsyncs of the write-ahead log: the most a crash loses (1.0)",
    )
    parser.add_argument(
        "--rotate-interval",
        type=positive_seconds_arg,
        default=60.0,
        help="seconds between Parquet files (60)",
    )
    parser.add_argument(
        "--max-message-bytes",
        type=positive_int,
        metavar="N",
        help="largest WebSocket message taken: a larger one is dropped (a gap), and the run "
        "ends with an error when the next connection gets one too (default: the client's "
        "max_response_bytes, 64 MiB)",
    )
    parser.add_argument(
        "--store",
        type=path_arg,
        metavar="DIR",
        help="an order store (toolkit sync --store DIR) to feed: every sync while and "
        "after this runs reads the recording's order ids without --from-recording",
    )
    parser.add_argument(
        "--no-compact",
        action="store_true",
        help="leave each closed day's files as they are (default: once a day is over, it is "
        "compacted into few large files, sorted by symbol, while recording goes on; at the "
        "start, the closed days a previous run left)",
    )
    parser.add_argument("--quiet", action="store_true", help="no live status line")
    parser.set_defaults(func=run, parser=parser)


def _client(args: argparse.Namespace) -> Any:
    return client_from_args(args)


class StatusLine:
    """The live status: rewritten in place on a terminal, one line per update otherwise
    (logs and pipes get whole lines)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self._width = 0

    def __call__(self, stats: RecorderStats) -> None:
        text = stats.line()
        if self.tty:
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self._width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        """A line of its own (on a terminal, in place of the status being rewritten)."""
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0
        self.stream.write(text + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self._width:
            self.stream.write("\n")
            self.stream.flush()


def _stream_options(args: argparse.Namespace) -> dict[str, Any]:
    """The session settings given on the command line (the others: the session's)."""
    if args.max_message_bytes is None:
        return {}
    return {"max_message_bytes": args.max_message_bytes}


async def _record(
    args: argparse.Namespace, status: StatusLine | None, stopped_by: list[signal.Signals]
) -> RecorderStats:
    """Record until ``--duration`` or a stop signal (appended to ``stopped_by``)."""
    client = _client(args)
    try:
        recorder = Recorder(
            client,
            args.out,
            channels=args.channels or DEFAULT_CHANNELS,
            flush_interval=args.flush_interval,
            rotate_interval=args.rotate_interval,
            on_status=status,
            stream_options=_stream_options(args),
            compact="off" if args.no_compact else "daily",
        )
        follower = None
        if args.store is not None:
            from toolkit.store import OrderStore

            follower = OrderStore(args.store).follow(recorder)
        # it subscribes at once (the converter starts beside it); --duration counts from then
        task = asyncio.ensure_future(recorder.run(duration=args.duration))
        said = None if status is None else asyncio.ensure_future(_say_subscribed(recorder, status))
        loop = asyncio.get_running_loop()

        def stop(sig: signal.Signals) -> None:
            stopped_by.append(sig)
            task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            # a stop signal ends the run through its clean path: last rows into Parquet
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop, sig)
        try:
            return await task
        except asyncio.CancelledError:
            # stopped before recording began: nothing was received
            return recorder.stats
        finally:
            if said is not None:
                said.cancel()
            if follower is not None:
                follower.stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)
    finally:
        await client.aclose()


async def _say_subscribed(recorder: Recorder, status: StatusLine) -> None:
    """One line once every channel is subscribed: from then on, everything is recorded."""
    with contextlib.suppress(Exception):  # the run's own error is the one reported
        await recorder.wait_subscribed()
        status.note(f"subscribed to {', '.join(recorder.channels)}; recording into {recorder.root}")


def run(args: argparse.Namespace) -> int:
    """Record; the summary on stdout. Stopped by Ctrl-C or SIGTERM: the recorder is
    stopped and flushed (every message received is written), one line on stderr, exit
    130 / 143."""
    if args.compact:
        return _compact(args)
    if args.out is None or args.root is not None:
        args.parser.error("the following arguments are required: --out")
    status = None if args.quiet else StatusLine(sys.stderr)
    stopped_by: list[signal.Signals] = []
    try:
        stats = asyncio.run(_record(args, status, stopped_by))
    except BaseException:
        # the dispatcher prints the one-line error (toolkit.cli._errors)
        if status is not None:
            status.done()
        raise
    if status is not None:
        status.done()
    print(
        f"recorded {stats.messages:,} messages into {args.out} "
        f"({stats.files} files, {stats.gaps} gaps, {stats.dropped} dropped"
        f"{stats.misses_text('; ')})"
        + (f"; compacted {stats.compacted} day partition(s)" if stats.compacted else "")
    )
    if stopped_by:
        sig = stopped_by[0]
        print(
            f"toolkit record: interrupted by {sig.name}; the recorder stopped with every "
            f"message received written ({stats.messages:,} messages)",
            file=sys.stderr,
        )
        return exit_status(sig)
    return 0


def _compact(args: argparse.Namespace) -> int:
    """``toolkit record compact ROOT``: one line saying what was merged."""
    from toolkit.recording._compact import compact_recording

    if args.root is None:
        args.parser.error("compact needs the recording's folder: toolkit record compact ROOT")
    channels = None if not args.channels else args.channels
    print(compact_recording(args.root, channels).line())
    return 0
