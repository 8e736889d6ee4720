"""A GPU dropped from a sweep: its worker died or hung, and the fresh worker started in
its place did not say it was ready (the GPU broken by the crash, or its last context
still being torn down).

With other GPUs still measuring, the sweep goes on with them rather than stopping: the
trial that ended the worker is kept, the GPU is named on the console, in the report and
in the study's ``last_run``, and it is not retried in this run (a GPU that could not
start a worker within ``RESTART_S`` would most likely cost the same wait again; the next
``sweeper run`` tries it afresh).  Only when no worker is left does the command stop.
"""

from __future__ import annotations

from dataclasses import dataclass

from sweeper.errors import SweeperError


class NotStarted(SweeperError):
    """A worker process that did not say it was ready: ``index`` is its GPU, ``why``
    how it ended (``no answer within 20 s, then stopped: killed by SIGKILL; no
    output``)."""

    def __init__(self, message: str, index: int, why: str) -> None:
        super().__init__(message)
        self.index, self.why = index, why


@dataclass(frozen=True)
class Dropped:
    """GPU ``index`` dropped after trial ``after`` (recorded with ``status``) ended its
    worker, because a fresh worker did not start (``why``); ``left``: the GPUs the sweep
    went on with."""

    index: int
    after: int
    status: str
    why: str
    left: tuple[int, ...]

    def line(self) -> str:
        """``GPU 1 dropped after trial 17 (timeout): a fresh worker did not start (...);
        the sweep went on with GPU 0; GPU 1 is not retried in this run``."""
        gpus = ", ".join(map(str, self.left))
        return (f"GPU {self.index} dropped after trial {self.after} ({self.status}): a "
                f"fresh worker did not start ({self.why}); the sweep went on with "
                f"GPU{'s' if len(self.left) > 1 else ''} {gpus}; GPU {self.index} is not "
                "retried in this run")

    def to_json(self) -> dict[str, object]:
        """As the study's ``last_run`` keeps it (``line`` included, for the report)."""
        return {"gpu": self.index, "after_trial": self.after, "status": self.status,
                "why": self.why, "left": list(self.left), "line": self.line()}
