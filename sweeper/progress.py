"""The progress bar while sweeping (rich): trials done/total, best so far, ETA.

In a terminal the bar is live; written to a file or a pipe it is drawn once, at the end,
without control codes.  In a Jupyter notebook it is one output that the trials redraw in
place (a display update, at most every :data:`REDRAW_S` and always at the last trial and
the end), so it needs no ipywidgets and no thread, always shows where the sweep ended,
and stays in the saved notebook as text and HTML."""

from __future__ import annotations

import io
import time
from typing import Any

from rich.console import Console
from rich.jupyter import JUPYTER_HTML_FORMAT, JupyterRenderable
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from sweeper.kernels._base import Headline
from sweeper.store import TrialRecord

#: In a notebook: the least seconds between two redraws of the bar (the last trial and the
#: end of the sweep are always drawn), so a fast sweep sends a few updates, not thousands.
REDRAW_S = 0.2


class ProgressReporter:
    """A :class:`~sweeper.sweep.Reporter` that draws a progress bar on stderr (stdout stays
    the run's text), or in a notebook as one output of the cell: trials done of total, the
    best and last rates in the kernel's headline unit, elapsed time and ETA."""

    def __init__(self, console: Console | None = None, headline: Headline = Headline.GBPS
                 ) -> None:
        self._headline = headline
        self._console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
            TextColumn("best {task.fields[best]}"), TextColumn("last {task.fields[last]}"),
            TimeElapsedColumn(), _RemainingOrPhase(), console=self._console)
        self._notebook = NotebookBar(self._progress, self._console.width) \
            if self._console.is_jupyter else None
        self._task: TaskID | None = None
        self._done = self._total = 0

    def start(self, total: int, done: int) -> None:
        self._total, self._done = total, done
        if self._notebook is None:
            self._progress.start()
        self._task = self._progress.add_task("sweep", total=total, completed=done,
                                             best="–", last="–", phase="")
        if self._notebook is not None:
            self._notebook.draw(force=True)

    def trial(self, record: TrialRecord, best: TrialRecord | None) -> None:
        unit = self._headline.unit
        last = f"{record.rate(self._headline):.4g} {unit}" if record.ok else \
            record.status.value
        best_text = f"{best.rate(self._headline):.4g} {unit}" if best else "–"
        self._done += 1
        assert self._task is not None, "start() comes before the first trial"
        self._progress.update(self._task, advance=1, last=last, best=best_text)
        if self._notebook is not None:
            self._notebook.draw(force=self._done >= self._total)

    def phase(self, text: str) -> None:
        """Say what runs after the trials (the finals) at the end of the bar, in place of
        an ETA that no longer applies, and redraw it."""
        if self._task is None:
            return
        self._progress.update(self._task, phase=text)
        if self._notebook is not None:
            self._notebook.draw(force=True)

    def finish(self) -> None:
        """Stop the bar where the sweep ended; nothing where :meth:`start` never ran."""
        if self._task is None:
            return
        if self._notebook is None:
            self._progress.stop()
        else:
            self._notebook.draw(force=True)


class _RemainingOrPhase(TimeRemainingColumn):
    """``ETA 0:01:02`` while trials run; once the sweep says what runs after them
    (:meth:`ProgressReporter.phase`), that instead."""

    def render(self, task: Task) -> Text:
        phase = task.fields.get("phase")
        return Text(phase) if phase else Text("ETA ") + super().render(task)


class NotebookBar:
    """A rich :class:`Progress` shown as one notebook output (text and HTML), redrawn in
    place through IPython's display updates rather than rich's live display.  In a kernel
    that one needs ipywidgets, shows its last automatic refresh (a sweep faster than it
    stays at 202/204), leaves ``Output()`` in a saved notebook, and routes stdout and
    stderr through itself, where a line printed while it runs (Ctrl-C's) recurses through
    ipykernel's flush until ``RecursionError``."""

    def __init__(self, progress: Progress, width: int) -> None:
        self._progress, self._width = progress, width
        self._handle: Any = None        # IPython's DisplayHandle, once drawn
        self._drawn_at = float("-inf")

    def draw(self, *, force: bool) -> None:
        """Show the bar as it stands, unless it was drawn less than :data:`REDRAW_S`
        ago and ``force`` is not set."""
        now = time.monotonic()
        if not force and now - self._drawn_at < REDRAW_S:
            return
        self._drawn_at = now
        shown = self.render()
        if self._handle is None:
            from IPython.display import display

            self._handle = display(shown, display_id=True)
        else:
            self._handle.update(shown)

    def render(self) -> JupyterRenderable:
        """The bar as the text and the HTML rich would show for it in a notebook."""
        console = Console(file=io.StringIO(), record=True, width=self._width,
                          color_system="truecolor", force_terminal=False, force_jupyter=False)
        console.print(self._progress.get_renderable())
        text = console.export_text(clear=False)
        return JupyterRenderable(console.export_html(
            inline_styles=True, code_format=JUPYTER_HTML_FORMAT), text)
