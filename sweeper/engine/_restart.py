"""A run whose trial hung: the kernel cannot be stopped from this process, so the
command goes on in a fresh one (``python -m sweeper`` with the same arguments), as the
journal lets a new process resume where this one stopped, at most :data:`MAX_RESTARTS`
times; what the fresh process is handed (:data:`SINCE`, :data:`RESTARTS`) lets its
lines count the whole command.  A call from Python is never replaced or ended: it is
told what to do."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sweeper.engine._options import RunOptions
    from sweeper.store import Storage


#: How many times one `sweeper run` goes on in a fresh process after trials that hung
#: (each such trial is recorded and never tried again).
MAX_RESTARTS = 20
#: The environment variable a command re-executed after a hang carries its start in (UTC,
#: as records stamp it), so the last process counts the whole command's failures.
SINCE = "SWEEPER_SINCE"
#: How many times the command went on in a fresh process (set in the fresh one).
RESTARTS = "SWEEPER_RESTARTS"
#: When this process's first ``run_sweep`` started (what :data:`SINCE` passes on).
STARTED: list[str] = []


def hung(record: Any, options: RunOptions, store: Storage, edited: str = "") -> None:
    """On the watchdog thread: a trial ran past measure.timeout (recorded as such, unless
    ``edited`` names the kernel's file edited since the sweep began: then not, as it may
    run the edited code); the kernel cannot be stopped from this process, so go on in a
    fresh one (``python -m sweeper`` with ``options.restart_argv``, counting restarts),
    or end it after too many.  In process (the API) the caller's process is neither
    replaced nor ended: the message says what to do."""
    message = (f"trial #{record.number} gave no result after {record.wall_s:g} s; " + (
        f"it is not recorded: its kernel's source changed during the sweep ({edited} was "
        "edited)" if edited else f"it is recorded as timeout in {store.location}"))
    if options.restart_argv is None:
        print(f"sweeper: {message}; the kernel cannot be stopped from this process: restart "
              "it (the notebook kernel) and call sweeper.run again to go on", file=sys.stderr)
        return
    restarts = int(os.environ.get(RESTARTS, "0"))
    print(f"sweeper: {message}", file=sys.stderr)
    if restarts < MAX_RESTARTS:
        print(f"sweeper: going on in a fresh process (restart {restarts + 1} of at most "
              f"{MAX_RESTARTS})", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, "-m", "sweeper", *options.restart_argv],
                  {**os.environ, RESTARTS: str(restarts + 1),
                   SINCE: os.environ.get(SINCE) or STARTED[-1]})
    print(f"sweeper: stopping after {restarts} restarts; run the same command to go on",
          file=sys.stderr)
    os._exit(1)       # too many restarts: the main thread is stuck in the kernel
