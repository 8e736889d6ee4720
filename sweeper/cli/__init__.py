"""The ``sweeper`` command: run, worker, plan, report, roofline, export, ab, calibrate,
compare, copy-study, schema, tuned, kernels.

A :class:`SweeperError` is printed as one line and exits with status 2
(``--debug`` shows the traceback); nothing is written before the space file and
the device have been checked.

Exit status: 0 done; 1 ran, but no config produced a number (every trial failed or was
ruled out; a line on stderr says why), or ``run`` stopped after ``MAX_RESTARTS`` fresh
processes, or a file could not be written (a :class:`WriteError`: a full disk, the world's
fault, not the input's; the line says what is left), or the study's database failed (a
:class:`StorageError`: unreachable, gone mid-run, past a time limit; every record appended
before is kept there); 2 bad input (space file, option,
study, device), nothing written, or the kernel's source edited while ``run`` swept it
(every trial measured before kept); 3 ``run`` measured, but some configs failed by the
kernel's fault (a wrong answer, a crash, a compile error, a timeout, an impossible time:
the ``failed:`` line names them); 75 ``run`` tried every valid config but left some to
measure again, their worker processes killed from outside and not measured again in the run
(``EX_TEMPFAIL``: the same command measures them); 130 interrupted (Ctrl-C: ``run`` and
``worker`` stop after the trial in flight; twice: at once), every finished trial kept; 143
the same for a SIGTERM (a job scheduler's stop);
141 the reader of its output went away (``sweeper plan ... | head``), quietly, as a shell
pipeline expects, every finished trial kept.
A :class:`StudyWarning` (a journal line set aside) or :class:`TuningWarning` (a tuned
config for another case) is one line on stderr.

The parser is ``_parser``; each command is a function of ``_run`` (``run``: its options
handed to the engine, :mod:`sweeper.engine`), ``_worker`` (``worker``, ``copy-study``),
``_plan`` (``plan``, ``schema``, ``kernels``), ``_results`` (``report``, ``roofline``,
``export``, ``compare``, ``tuned``) or
``_measure`` (``ab``, ``calibrate``); ``_inputs`` turns options into checked objects and
``_exits`` holds the exit statuses.  None of them imports torch, triton, optuna or pandas
before a command runs, and this module imports none of them at all (the parser and the
engine's names are imported by :func:`main`): the ``sweeper`` executable imports it before
:func:`main` can catch anything, so a Ctrl-C while the rest loads is one line and exit 130
as anywhere else (a SIGTERM 143), never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from sweeper._environ import environ_kept
from sweeper.cli._exits import (
    EXIT_BROKEN_PIPE,
    EXIT_CONFIGS_FAILED,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
)
from sweeper.errors import DEBUG_ENV, StudyWarning, SweeperError, TuningWarning
from sweeper.escape import printable
from sweeper.interrupt import ABORTED, Terminated, ctrl_c_line

__all__ = ["EXIT_CONFIGS_FAILED", "console", "leave", "main"]


def console() -> None:
    """The ``sweeper`` executable: :func:`main` on the process's arguments, then exit
    without the interpreter's teardown (:func:`leave`), unless a profiler, debugger or
    coverage tool is watching (it writes its results after the program returns).  A
    SIGTERM is taken as a Ctrl-C is wherever no sweep stops on it (while the command
    loads, opens its study, writes its report): one line and exit 143, where it killed
    the command silently."""
    signal.signal(signal.SIGTERM, _terminated)
    status = main()
    if not _watched():
        leave(status)
    sys.exit(status)


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated


def _watched() -> bool:
    """Whether a profiler, debugger or coverage tool is attached: through the trace or
    profile hooks, or (Python 3.12 on, cProfile's way) ``sys.monitoring``."""
    monitoring = getattr(sys, "monitoring", None)
    return sys.getprofile() is not None or sys.gettrace() is not None or (
        monitoring is not None and any(monitoring.get_tool(i) is not None for i in range(6)))


def leave(status: int) -> None:
    """End the process with ``status`` as Python would, less the teardown of its heap.

    Threads are ended as the interpreter ends them (``threading._shutdown``: the exit
    hooks of thread pools, then every non-daemon thread joined), ``atexit`` handlers run
    (multiprocessing reaps its children there) and output is flushed; what is skipped is
    freeing every module and object one by one: with torch, pandas and matplotlib loaded
    that took 0.65 s on the H200 machine after a `sweeper run` had written everything.
    Nothing of the study is left in memory by then: the journal is written and synced as
    each trial ends.  A Ctrl-C or SIGTERM meanwhile (a second Ctrl-C after the summary)
    ends it at once with ``status``, its output flushed: there is nothing left to stop,
    and it would otherwise print a traceback from whichever exit hook it interrupted."""
    import atexit
    import signal
    import threading

    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda signum, frame: _exit_now(status))
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None and main_thread:
        shutdown()
    else:                               # not the interpreter's main thread: join by hand
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    _exit_now(status)


def _exit_now(status: int) -> None:
    """Flush the output and end the process with ``status``."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):   # a closed pipe: nothing to say
            stream.flush()
    os._exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sweeper`` command with ``argv`` (default: the process's arguments) and
    return its exit status."""
    try:
        # the parser imports numpy and the engine: most of the start-up
        from sweeper.cli._parser import build_parser, parse

        args = parse(build_parser(), argv)
    except SweeperError as err:         # a bad option or value: one line, as any bad input
        print(err, file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as err:    # while the commands load: before any trial
        print(ctrl_c_line(ABORTED), file=sys.stderr)
        return EXIT_TERMINATED if isinstance(err, Terminated) else EXIT_INTERRUPTED
    args.argv = list(sys.argv[1:] if argv is None else argv)   # to restart with
    args.from_shell = argv is None     # the command itself, not a call from Python
    # --debug: worker processes inherit it, so a failed trial prints its traceback
    with environ_kept([DEBUG_ENV], **({DEBUG_ENV: "1"} if args.debug else {})):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", StudyWarning)
                warnings.showwarning = _one_line(warnings.showwarning)
                return int(args.func(args) or 0)
        except SweeperError as err:
            if args.debug:
                raise
            # one line, whatever text from a file the message quotes (sweeper.escape)
            print(printable(f"sweeper: {err}" if not hasattr(err, "line") else str(err)),
                  file=sys.stderr)
            return getattr(err, "exit_status", EXIT_USAGE)
        except KeyboardInterrupt as err:    # a second signal: 143 where it was a SIGTERM
            print(ctrl_c_line(ABORTED), file=sys.stderr)
            return EXIT_TERMINATED if isinstance(err, Terminated) else EXIT_INTERRUPTED
        except BrokenPipeError:
            _silence_stdout()
            return EXIT_BROKEN_PIPE


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's final flush of what
    the closed pipe did not take raises no second BrokenPipeError at exit."""
    # OSError, ValueError, AttributeError: not a real file (a test's capture)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _one_line(show: Any) -> Any:
    """``warnings.showwarning`` that prints sweeper's own warnings (a study's, a tuned
    config's) as one line (``sweeper: warning: ...``) and leaves others to ``show``."""
    def showwarning(message: Warning | str, category: type[Warning], *args: Any,
                    **kwargs: Any) -> None:
        if issubclass(category, (StudyWarning, TuningWarning)):
            print(f"sweeper: warning: {message}", file=sys.stderr, flush=True)
        else:
            show(message, category, *args, **kwargs)
    return showwarning
