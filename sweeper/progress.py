"""The progress bar while sweeping (rich): trials done/total, best so far, ETA.

In a terminal the bar is live; written to a file or a pipe it is drawn once, at the end,
without control codes.  In a Jupyter notebook rich draws a live bar through ipywidgets;
where that is not installed (rich would warn at every refresh) the progress is a plain
line at every tenth of the trials instead."""

from __future__ import annotations

import importlib.util

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

#: In a notebook without a live bar: a line each time this fraction of the trials is done.
LINE_EVERY = 0.1


class ProgressReporter:
    """A :class:`~sweeper.sweep.Reporter` that draws a progress bar on stderr (stdout stays
    the run's text): trials done of total, the best and last rates in the kernel's headline
    unit, elapsed time and ETA."""

    def __init__(self, console: Console | None = None, headline: Headline = Headline.GBPS
                 ) -> None:
        self._headline = headline
        self._console = console or Console(stderr=True)
        self._lines = self._console.is_jupyter and importlib.util.find_spec(
            "ipywidgets") is None
        self._progress = Progress(
            TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
            TextColumn("best {task.fields[best]}"), TextColumn("last {task.fields[last]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=self._console)
        self._task: TaskID | None = None
        self._done = self._total = self._shown = 0

    def start(self, total: int, done: int) -> None:
        self._total, self._done = total, done
        if self._lines:
            self._shown = done
            return
        self._progress.start()
        self._task = self._progress.add_task("sweep", total=total, completed=done,
                                             best="–", last="–")

    def trial(self, record: TrialRecord, best: TrialRecord | None) -> None:
        unit = self._headline.unit
        last = f"{record.rate(self._headline):.4g} {unit}" if record.ok else \
            record.status.value
        best_text = f"{best.rate(self._headline):.4g} {unit}" if best else "–"
        self._done += 1
        if self._lines:
            if self._done - self._shown >= max(1, LINE_EVERY * self._total) or \
                    self._done == self._total:
                self._shown = self._done
                self._console.print(f"trials {self._done}/{self._total} best {best_text} "
                                    f"last {last}", markup=False, highlight=False)
            return
        assert self._task is not None, "start() comes before the first trial"
        self._progress.update(self._task, advance=1, last=last, best=best_text)

    def finish(self) -> None:
        if not self._lines:
            self._progress.stop()
