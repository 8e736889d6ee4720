"""The exit statuses of the ``sweeper`` command (the package's docstring says when)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_NOTHING_MEASURED = 1
EXIT_USAGE = 2
EXIT_CONFIGS_FAILED = 3       # the study holds configs failed by the kernel's fault, any run's
#: every valid config tried, but some left to measure again (their worker processes were
#: killed from outside): run the same command (sysexits.h's EX_TEMPFAIL, "try again")
EXIT_MEASURE_AGAIN = 75
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143          # 128 + SIGTERM: stopped by a SIGTERM (a scheduler's)
EXIT_BROKEN_PIPE = 141        # 128 + SIGPIPE, what a shell reports for a closed pipe


def signal_exit(stopped_by: str) -> int:
    """The exit status of a sweep that stopped as ``stopped_by`` says: interrupted by a
    Ctrl-C or by a SIGTERM, else 0."""
    from sweeper.sweep._budget import INTERRUPTED, TERMINATED

    return {INTERRUPTED: EXIT_INTERRUPTED, TERMINATED: EXIT_TERMINATED}.get(stopped_by,
                                                                          EXIT_OK)
