"""The lines a Ctrl-C prints (the run's ``stopping after the current trial``, the command's
``aborted``), each on a line of its own wherever it is shown.

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
import sys
from typing import TextIO

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
