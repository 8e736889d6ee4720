"""What the coordinator has kept but not yet journaled or reported.

With worker processes, the loop hands the freed worker its next job before it journals
the outcome it just kept, so the journal's fsync (and the progress report) overlap that
worker's measuring instead of delaying it.  The records go out, in the order kept,
before the loop waits for the next outcome: none is held while a trial runs in this
process, and a worker in this process (which measures inside ``submit``) never defers.
"""

from __future__ import annotations

from sweeper.store import Storage, TrialRecord
from sweeper.sweep._summary import Reporter
from sweeper.sweep._timing import Timeline


class Outbox:
    """Records to journal and trials to report, written by :meth:`flush` (at once unless
    ``defer``)."""

    def __init__(self, store: Storage, reporter: Reporter, timeline: Timeline, *,
                 defer: bool) -> None:
        self.store, self.reporter, self.timeline, self.defer = store, reporter, timeline, defer
        self._records: list[object] = []
        self._reports: list[tuple[TrialRecord, TrialRecord | None]] = []

    def journal(self, record: object) -> None:
        """Append ``record`` after those queued before it."""
        self._records.append(record)

    def report(self, record: TrialRecord, best: TrialRecord | None) -> None:
        """Report trial ``record`` (``best``: the fastest after it) once it is journaled."""
        self._reports.append((record, best))

    def kept(self, *, at_once: bool = False) -> None:
        """An outcome was kept: write it now, unless writing is deferred and not wanted
        ``at_once``."""
        if at_once or not self.defer:
            self.flush()

    def flush(self) -> None:
        """Journal the queued records, then report the queued trials."""
        with self.timeline.phases.on("journal"):
            while self._records:
                self.store.append(self._records.pop(0))
        with self.timeline.phases.on("reporter"):
            while self._reports:
                self.reporter.trial(*self._reports.pop(0))
