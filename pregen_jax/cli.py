"""`pregen-search`: the command line (argparse subcommands).

Each subcommand lives in its own module of ``commands`` (its options, its checks, what it
prints); this module builds the parser from them and runs one. Handlers import what they need
when they run, so that ``--help`` answers at once. Bad input ends in one line on stderr naming
the file and the problem, exit code 2, and no output.
"""
from __future__ import annotations

import argparse
import sys

from .commands import (
    demo,
    doctor,
    evaluate,
    export_references,
    judgments,
    mutt,
    predict,
    rank,
    run,
    scst,
    select,
    track,
    unit_tests,
)
from .commands.base import common_arguments

# The subcommands in the order --help lists them.
COMMANDS = (demo, run, rank, predict, select, track, evaluate, export_references, scst, mutt, unit_tests, judgments, doctor)


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors in the one-line form of every other error (and exit code 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pregen-search", description=(
        "Pre-gen metrics: rank ways of scoring a caption generator from its reference probabilities "
        "by how well they predict post-gen metrics (CIDEr, METEOR, WMD, ...)."))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for module in COMMANDS:
        command = module.COMMAND
        child = sub.add_parser(command.name, help=command.help, aliases=list(command.aliases))
        command.arguments(child)
        common_arguments(child)  # --no-progress: every subcommand, one meaning
        child.set_defaults(func=command.run)
    return parser


def main(argv=None) -> int:
    """Run one command; returns its exit code. The Ctrl-C handling it sets up (a quiet handler
    after the one line) is undone on return, so a caller in Python keeps its own."""
    import signal
    import threading

    from .processes import interrupts_never_swallowed
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main_thread else None
    try:
        _interrupts_from_here()
        with interrupts_never_swallowed():  # a Ctrl-C inside a gc callback is not lost
            return _main(argv)
    finally:
        if main_thread and previous is not None:
            signal.signal(signal.SIGINT, previous)


def _main(argv) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("pregen-search: interrupted", file=sys.stderr)
        return 130
    args.argv = list(sys.argv[1:] if argv is None else argv)
    from .progress import no_progress
    try:
        with no_progress(getattr(args, "no_progress", False)):  # every bar, in workers and deep in metrics too
            return args.func(args)
    except (ValueError, OSError) as err:
        message = " ".join(str(err).split())  # one line, whatever the message held
        print(f"pregen-search {args.command}: error: {message}", file=sys.stderr)
        return 2
    except RuntimeError as err:
        from .pipeline.late import LateStepFailed
        if not isinstance(err, LateStepFailed):
            raise
        print(f"pregen-search {args.command}: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        _quiet_interrupts()
        print(f"pregen-search {args.command}: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


def _interrupts_from_here() -> None:
    """A search process another one started (``--num-processes``) ends silently on Ctrl-C (its parent
    reports it); every process then takes a Ctrl-C deferred while it started (``processes``)."""
    import os

    from .processes import PARENT_REPORTS_INTERRUPTS, accept_interrupts
    if os.environ.get(PARENT_REPORTS_INTERRUPTS) == "1":
        _quiet_interrupts()
    accept_interrupts()


def _quiet_interrupts() -> None:
    """After the one line about Ctrl-C, a second Ctrl-C (or one arriving while Python shuts down its
    worker pools) ends the process at once, with no traceback."""
    import os
    import signal
    try:
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))
    except ValueError:  # not the main thread: nothing to quieten
        pass


def console() -> None:
    """The ``pregen-search`` command: ``main``, then exit. After a Ctrl-C (exit 130, its one line
    written and the run's workers ended) the process ends at once, its output flushed: threads still
    inside XLA (a trainer, a compile) must not meet the interpreter's shutdown, which can crash."""
    code = main()
    if code == 130:
        import os
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    _exit_without_teardown(code)


def _exit_without_teardown(code: int) -> None:
    """``sys.exit(code)`` less the interpreter's teardown, which frees every object one by one (0.1 s
    after ``evaluate`` at 5,000 images, a twentieth of its run): the exit functions run (``atexit``:
    children ended, temporary folders removed, logs closed) and the output is flushed, then the
    process ends. While a thread that is not a daemon still runs, ``sys.exit``, which waits for it."""
    import atexit
    import os
    import threading
    if not isinstance(code, int) or any(thread is not threading.main_thread() and not thread.daemon
                                        and thread.is_alive() for thread in threading.enumerate()):
        sys.exit(code)  # os._exit takes an int only; a live pool's threads are not daemons
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started without it (``>&-``)
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (the reader gone) or a closed stream: nothing more to write
            pass
    _flush_c_stdio()
    os._exit(code)


def _flush_c_stdio() -> None:
    """Flush C's stdio buffers (what native code printed to a pipe or file), which ``os._exit``
    would drop where the interpreter's exit flushes them."""
    try:
        import ctypes
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library to load by that name (Windows): nothing to do
        pass


if __name__ == "__main__":
    console()
