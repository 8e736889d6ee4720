"""What a Ctrl-C or a SIGTERM does to a sweep (:func:`stopping_on_signals`: the first stops it
after the trial in flight, a second aborts), and the lines it prints (the sweep's
``stopping after the current trial``, the command's ``aborted``), each on a line of its
own wherever it is shown.

A SIGTERM is what a job scheduler (or ``kill``) sends before it ends a job: it is taken as
a Ctrl-C is, so an unattended run stopped that way records its trial in flight and prints
its summary, as a run stopped at the keyboard does.

A terminal echoes ``^C`` where its cursor stands, which is the start of a line (everything
sweeper prints ends with a newline) unless a live progress bar or spinner owns the line.
While one is live, rich has taken ``sys.stderr`` and prints each line above the bar,
clearing the bar's line, echo and all, first: a line needs nothing before it, and a
newline would leave an empty line where the bar stood.  On a terminal without one, a
carriage return puts the line over the echo, where a newline would leave ``^C`` on a line
of its own and nothing would leave ``^Csweeper: aborted`` run together.  A file, a pipe
or a notebook echoes nothing, and gets the line as it is.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

#: What a Ctrl-C that ends a command prints, wherever it comes (start-up included).
ABORTED = "sweeper: aborted; every finished trial is kept"


def ctrl_c_line(text: str, stream: TextIO | None = None) -> str:
    """``text`` as it is written to ``stream`` (standard error by default) after a Ctrl-C:
    on a terminal no live display owns, after a carriage return that puts it over the
    echoed ``^C``; elsewhere as it is."""
    stream = sys.stderr if stream is None else stream
    if hasattr(stream, "rich_proxied_file"):      # a live bar's: it clears its own line
        return text
    with contextlib.suppress(AttributeError, OSError, ValueError):   # closed, or no file
        if stream.isatty():
            return f"\r{text}"
    return text


#: What the first of each signal prints: the sweep goes on to the end of its trial in flight.
STOPPING = {
    signal.SIGINT: "stopping after the current trial (Ctrl-C again to abort it)",
    signal.SIGTERM: "SIGTERM: stopping after the current trial (a second SIGTERM or a "
                    "Ctrl-C aborts it)",
}


class Aborted(KeyboardInterrupt):
    """A run ended by a signal before its end: the second Ctrl-C (a :class:`Terminated`
    for a SIGTERM), or a first one where none stops it after its trial (while the run
    starts or reports).  The engine sets ``study`` and ``location``, the study's name and
    where it keeps every finished trial, once the run has opened it (None before), so a
    front door can say where the run left its trials and how to resume them.  A
    :class:`KeyboardInterrupt` still: a caller that catches that catches it."""

    study: str | None = None
    location: str | None = None


class Terminated(Aborted):
    """The abort a second signal raises where that signal is a SIGTERM: the command exits
    143 (128 + SIGTERM), as a scheduler that sent it expects, not Ctrl-C's 130."""


def stop_handler(stop: Any) -> Any:
    """A signal handler that sets ``stop`` (a :class:`~sweeper.sweep.StopFlag`) at the
    first Ctrl-C or SIGTERM, its ``reason`` naming the signal, and says so; at the second,
    raises :class:`Aborted` (:class:`Terminated` for a SIGTERM; the command's
    ``aborted``: the trial in flight is lost, every finished one kept)."""
    from sweeper.sweep._budget import INTERRUPTED, TERMINATED

    def handler(signum: int, frame: Any) -> None:
        if stop.set:
            raise Terminated if signum == signal.SIGTERM else Aborted
        stop.set = True
        stop.reason = TERMINATED if signum == signal.SIGTERM else INTERRUPTED
        print(ctrl_c_line(STOPPING[signal.Signals(signum)]),
              file=sys.stderr, flush=True)   # before the summary on stdout (stderr buffered)
    return handler


@contextlib.contextmanager
def stopping_on_signals(stop: Any) -> Iterator[None]:
    """While the block runs, Ctrl-C (SIGINT) and SIGTERM set ``stop``
    (:func:`stop_handler`); the handlers before it are put back after it.  Only in the
    main thread, where signals are delivered: elsewhere (an API call from a thread) Ctrl-C
    interrupts as Python does, every finished trial kept."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = stop_handler(stop)
    previous = {sig: signal.signal(sig, handler) for sig in STOPPING}
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)
