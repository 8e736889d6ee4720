"""The progress bar while sweeping (rich): trials done/total, best so far, ETA."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from sweeper.kernels._base import Headline
from sweeper.store import TrialRecord


class ProgressReporter:
    """A :class:`~sweeper.sweep.Reporter` that draws a progress bar on stderr (stdout stays
    the run's text): trials done of total, the best and last rates in the kernel's headline
    unit, elapsed time and ETA."""

    def __init__(self, console: Console | None = None, headline: Headline = Headline.GBPS
                 ) -> None:
        self._headline = headline
        self._progress = Progress(
            TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
            TextColumn("best {task.fields[best]}"), TextColumn("last {task.fields[last]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console or Console(stderr=True))
        self._task: TaskID | None = None

    def start(self, total: int, done: int) -> None:
        self._progress.start()
        self._task = self._progress.add_task("sweep", total=total, completed=done,
                                             best="–", last="–")

    def trial(self, record: TrialRecord, best: TrialRecord | None) -> None:
        assert self._task is not None, "start() comes before the first trial"
        unit = self._headline.unit
        last = f"{record.rate(self._headline):.4g} {unit}" if record.ok else \
            record.status.value
        self._progress.update(self._task, advance=1, last=last,
                              best=f"{best.rate(self._headline):.4g} {unit}" if best else "–")

    def finish(self) -> None:
        self._progress.stop()
