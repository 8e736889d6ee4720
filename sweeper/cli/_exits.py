"""The exit statuses of the ``sweeper`` command (the package's docstring says when)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_NOTHING_MEASURED = 1
EXIT_USAGE = 2
EXIT_CONFIGS_FAILED = 3       # ran and measured, but some configs failed by the kernel's fault
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141        # 128 + SIGPIPE, what a shell reports for a closed pipe
