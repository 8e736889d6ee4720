"""The progress display while sweeping (rich): the trials, the finals, the report.

In a terminal the bar is live; written to a file or a pipe it is drawn once, at the end,
without control codes.  Where the line is too narrow for all its parts, the least useful
go first, whole (:data:`DROPPED_FIRST`), so the count and the best rate stay readable:
never a count or a rate cut to ``7…``, nor a line wrapped in two.  In a Jupyter notebook
it is one output that the trials redraw in place (a display update, at most every
:data:`REDRAW_S` and always at the last trial and the end), so it needs no ipywidgets
and no thread, always shows where the sweep ended, and stays in the saved notebook as
text and HTML."""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.jupyter import JUPYTER_HTML_FORMAT, JupyterRenderable
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    Task,
    TaskID,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column, Table
from rich.text import Text

from sweeper.core._units import counted
from sweeper.kernels._base import Headline
from sweeper.outcome import outcome_label
from sweeper.store import TrialRecord

#: In a notebook: the least seconds between two redraws of the bar (the last trial and the
#: end of the sweep are always drawn), so a fast sweep sends a few updates, not thousands.
REDRAW_S = 0.2
#: A bar's parts, left to right: its name, the bar, done of total, the best rate (the
#: finals: which problem), the last trial's rate (the finals: the round), what the compile
#: pool did, the elapsed time, and the ETA (or ``done``).
PARTS = ("name", "bar", "count", "left", "right", "compiles", "elapsed", "eta")
#: What a line too narrow for every part leaves out, the first first: the compile pool's
#: counts, the elapsed time, the bar (the count says as much), the last trial, the ETA.
#: The name, the count and the best rate always stay; the best is cut only where the
#: line cannot hold even those.
DROPPED_FIRST = ("compiles", "elapsed", "bar", "right", "eta")
#: The bar's width where the line has room, and the least it is drawn at.
BAR_WIDTH, MIN_BAR_WIDTH = 40, 10
#: Columns left free at the line's end: a terminal echoes a Ctrl-C there as ``^C``, which
#: on a full line would wrap to the next one and leave the bar drawn twice.
ECHO_ROOM = 2


class ProgressReporter:
    """A :class:`~sweeper.sweep.Reporter` that draws the run's phases on stderr (stdout
    stays the run's text), or in a notebook as one output of the cell: the trials (done
    of total, the best and last rates in the kernel's headline unit, how many binaries
    the compile pool built and has queued), then the finals on a bar of their own
    (which problem, which round of at most how many, how many finalists are still in; it
    counts the rounds run, so a final settled early shortens it),
    then a spinner while the report is written.  Each bar has its elapsed time and an
    ETA; the trials' ETA gives way to ``done`` once they are."""

    def __init__(self, console: Console | None = None, headline: Headline = Headline.GBPS
                 ) -> None:
        self._headline = headline
        self._console = console or Console(stderr=True)
        self._progress = _FittedProgress(console=self._console)
        self._notebook = NotebookBar(self._progress, self._console.width) \
            if self._console.is_jupyter else None
        self._task: TaskID | None = None
        self._finals: TaskID | None = None
        self._done = self._total = 0
        self._compiles = ""
        self._rounds = self._round = self._final = self._problems = 0
        self._ran = 0                # rounds run by the finals already done
        #: the trial of the highest rate in the headline's unit: the sweep's best is by its
        #: score (GB/s where a kernel moves bytes), which across a matmul's shapes is
        #: another trial than the highest TFLOP/s
        self._best: TrialRecord | None = None

    def start(self, total: int, done: int, best: TrialRecord | None = None) -> None:
        self._total, self._done = total, done
        best = self._best = self._higher(best)
        if self._notebook is None:
            self._progress.start()
        # a resumed study's bar starts at its kept trials and their best, and says
        # ``done`` where they leave nothing to measure
        self._task = self._progress.add_task("trials", total=total, completed=done,
                                             left=f"best {self._rate(best)}",
                                             right="last –",
                                             phase="done" if done >= total else "",
                                             compiles="")
        self._draw(force=True)

    def trial(self, record: TrialRecord, best: TrialRecord | None) -> None:
        """Show ``record`` as the last trial; one to be measured again (``retry``: its
        worker process was killed from outside) leaves the count as it was: the trial
        that measures its config again counts it."""
        last = self._rate(record) if record.ok else outcome_label(record)
        best = self._best = self._higher(best, record)
        advance = 0 if record.retry else 1
        self._done += advance
        assert self._task is not None, "start() comes before the first trial"
        self._progress.update(self._task, advance=advance, left=f"best {self._rate(best)}",
                              right=f"last {last}", compiles=self._compiles)
        self._draw(force=self._done >= self._total)

    def _higher(self, *trials: TrialRecord | None) -> TrialRecord | None:
        """Of the best so far and ``trials``, the ``ok`` one of the highest rate in the
        headline's unit (the first of equals), or None."""
        ok = [t for t in (self._best, *trials) if t is not None and t.ok]
        return max(ok, key=lambda t: t.rate(self._headline), default=None)

    def _rate(self, record: TrialRecord | None) -> str:
        """``record``'s rate in the headline's unit, ``–`` where there is none."""
        return f"{record.rate(self._headline):.4g} {self._headline.unit}" if record else "–"

    def compiling(self, built: int, waiting: int) -> None:
        self._compiles = f"· {built} built" + (f", {waiting} compiling" if waiting else "")

    def finals(self, problems: int, rounds: int) -> None:
        if self._task is None:
            return
        self._progress.update(self._task, phase="done")
        self._problems, self._rounds = problems, rounds
        self._finals = self._progress.add_task("finals", total=problems * rounds,
                                               left="", right="", phase="", compiles="")
        self._draw(force=True)

    def final_started(self, problem: str, finalists: int) -> None:
        if self._finals is None:
            return
        self._final, self._round = self._final + 1, 0
        named = f"{self._final} of {self._problems}: {problem}" if self._problems > 1 \
            else problem
        self._progress.update(self._finals, completed=self._ran,
                              left=named, right=self._finalists(0, finalists))
        self._draw(force=True)

    def final_round(self, round_: int, finalists: int) -> None:
        if self._finals is None:
            return
        self._round = round_
        self._progress.update(self._finals, completed=self._ran + round_,
                              right=self._finalists(round_, finalists))
        self._draw(force=True)

    def final_done(self) -> None:
        if self._finals is None:
            return
        settled = f"settled in {counted(self._round, 'round')}" if self._round else ""
        # the bar counts rounds run: a final settled early takes its unrun rounds off
        self._ran += self._round
        self._progress.update(self._finals, completed=self._ran,
                              total=self._ran + (self._problems - self._final) * self._rounds,
                              right=settled,
                              phase="done" if self._final >= self._problems else "")
        self._draw(force=True)

    def _finalists(self, round_: int, finalists: int) -> str:
        return f"round {round_} of ≤{self._rounds}, {finalists} finalists in"

    @contextlib.contextmanager
    def report(self) -> Iterator[None]:
        """A spinner on the console while the block writes the report; nothing in a
        notebook (the cell's output shows the report's line when it is written)."""
        if self._notebook is not None or not self._console.is_terminal:
            yield
            return
        with self._console.status("writing the report: tables, figures, report.md"):
            yield

    def finish(self) -> None:
        """Stop the bars where the sweep ended; nothing where :meth:`start` never ran."""
        if self._task is None:
            return
        if self._notebook is None:
            self._progress.stop()
        else:
            self._notebook.draw(force=True)

    def _draw(self, *, force: bool) -> None:
        if self._notebook is not None:
            self._notebook.draw(force=force)


class _FittedProgress(Progress):
    """rich's :class:`Progress` whose bars are laid out by :class:`_FittedBars`: as wide as
    the line they are drawn on allows, the least useful parts left out first."""

    def get_renderables(self) -> Iterable[RenderableType]:
        yield _FittedBars([task for task in self.tasks if task.visible])


class _FittedBars:
    """The bars of ``tasks``, one a line, their parts (:data:`PARTS`) lined up in columns,
    fitted to the width they are drawn at: every part where it fits; else without those
    :data:`DROPPED_FIRST` names, one more at a time, until the rest fits (the bar
    narrowing from :data:`BAR_WIDTH` to :data:`MIN_BAR_WIDTH` first); where even the
    name, count and best do not, the best is cut with ``…``.  A part empty on every line
    (no compile pool) takes no room."""

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks = tasks

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(1, options.max_width - ECHO_ROOM)
        cells = {part: [_RENDER[part](task) for task in self.tasks]
                 for part in PARTS if part != "bar"}
        widths = {part: max((c.cell_len for c in texts), default=0)
                  for part, texts in cells.items()}
        shown = [p for p in PARTS if p == "bar" or widths[p] > 0]
        for dropped in (None, *DROPPED_FIRST):
            if dropped in shown:
                shown.remove(dropped)
            text = sum(widths[p] for p in shown if p != "bar") + len(shown) - 1
            if "bar" not in shown and text <= width:
                bar = 0
                break
            if "bar" in shown and text + MIN_BAR_WIDTH <= width:
                bar = min(BAR_WIDTH, width - text)
                break
        else:                            # name, count and best: the best cut to fit
            room = max(1, width - (text - widths["left"]))
            for cell in cells["left"]:
                cell.truncate(room, overflow="ellipsis")
        table = Table.grid(*(Column(no_wrap=True) for _ in shown), padding=(0, 1))
        for i, task in enumerate(self.tasks):
            table.add_row(*(BarColumn(bar_width=bar).render(task) if part == "bar"
                            else cells[part][i] for part in shown))
        yield table


class _RemainingOrPhase(TimeRemainingColumn):
    """``ETA 0:01:02`` while a bar runs; once the run says it is over (``done``), that
    instead of an ETA of 0:00:00 that looks frozen."""

    def render(self, task: Task) -> Text:
        phase = task.fields.get("phase")
        return Text(phase) if phase else Text("ETA ") + super().render(task)


#: How each part of a bar but the bar itself is drawn, from its task.
_RENDER: dict[str, Callable[[Task], Text]] = {
    "name": lambda task: Text(f"{task.description:<6}", style="bold"),
    "count": MofNCompleteColumn().render,
    "left": lambda task: Text(task.fields.get("left", "")),
    "right": lambda task: Text(task.fields.get("right", "")),
    "compiles": lambda task: Text(task.fields.get("compiles", "")),
    "elapsed": TimeElapsedColumn().render,
    "eta": _RemainingOrPhase().render,
}


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
