"""The progress bar: in a notebook one output redrawn in place (through IPython's display
updates, here a stand-in that records them), ending where the sweep ended; in a terminal a
live bar whose thread ends also when the sweep's workers never start.  The bar in a real
Jupyter kernel is in ``test_jupyter.py``."""

from __future__ import annotations

import io
import re
import sys
import threading
from typing import Any

import pytest
from rich.console import Console

from sweeper import progress
from sweeper.progress import ProgressReporter
from tests.api_fixtures import matmul_shapes, replayed_trials
from tests.conftest import SMALL_SPACE, sweep_study


def _bar_text(done: int, best: str, last: str) -> str:
    """The bar's text after ``done`` of the mixed study's 8 trials, as a pattern (the bar
    and the times vary)."""
    return rf"trials [━╸╺ ]+ {done}/8 best {best} last {last} \d:\d\d:\d\d ETA [-:\d]+\n"


class _Display:
    """IPython's ``display`` as a notebook would see it: each output shown with its display
    id, and the updates made to it through the handle."""

    def __init__(self) -> None:
        self.shown: list[tuple[Any, Any]] = []
        self.updates: list[Any] = []

    def __call__(self, obj: Any, display_id: Any = None) -> Any:
        self.shown.append((obj, display_id))
        display = self

        class Handle:
            def update(self, obj: Any) -> None:
                display.updates.append(obj)

        return Handle()

    def texts(self) -> list[str]:
        return [obj._repr_mimebundle_([], [])["text/plain"]
                for obj in [self.shown[0][0], *self.updates]]


@pytest.fixture
def notebook(monkeypatch) -> _Display:
    ipython_display = pytest.importorskip(
        "IPython.display", reason="IPython is not installed (the `test` extra brings it)")

    display = _Display()
    monkeypatch.setattr(ipython_display, "display", display)
    return display


def _bar(trials: list, stop_after: int | None = None) -> None:
    """Report ``trials`` to a bar in a notebook, the sweep's best being #6 once it is
    measured; ``stop_after``: finish after that many, as an interrupted sweep does."""
    reporter = ProgressReporter(console=Console(force_jupyter=True, file=io.StringIO()))
    reporter.start(len(trials), 0)
    for t in trials[:stop_after]:
        reporter.trial(t, trials[6] if t.number >= 6 else None)
    reporter.finish()


def test_in_a_notebook_the_bar_is_one_output_redrawn_in_place(tmp_path, notebook, monkeypatch):
    monkeypatch.setattr(progress, "REDRAW_S", 0.0)           # every trial redraws
    _bar(replayed_trials(tmp_path))
    assert len(notebook.shown) == 1 and notebook.shown[0][1] is True   # one output, by id
    texts = notebook.texts()
    assert len(texts) == 1 + 8 + 1                         # start, each trial, the end
    assert re.fullmatch(_bar_text(0, "–", "–"), texts[0])
    assert re.fullmatch(_bar_text(1, "–", "invalid"), texts[1])
    assert re.fullmatch(_bar_text(8, "2840 GB/s", "missing"), texts[-1])
    assert texts[-1] == texts[-2]                          # the end draws the last state
    html = notebook.shown[0][0]._repr_mimebundle_([], [])["text/html"]
    assert html.startswith("<pre style=") and "0/8" in html
    assert not any("\x1b" in t or "\r" in t for t in texts)   # no control codes


def test_a_fast_sweep_redraws_the_notebook_bar_seldom_but_ends_on_its_last_trial(
        tmp_path, notebook, monkeypatch):
    monkeypatch.setattr(progress, "REDRAW_S", 3600.0)
    _bar(replayed_trials(tmp_path))
    texts = notebook.texts()
    assert len(texts) == 3                                 # start, the last trial, the end
    assert re.fullmatch(_bar_text(8, "2840 GB/s", "missing"), texts[1])


def test_an_interrupted_sweep_leaves_the_notebook_bar_where_it_stopped(
        tmp_path, notebook, monkeypatch):
    monkeypatch.setattr(progress, "REDRAW_S", 3600.0)
    _bar(replayed_trials(tmp_path), stop_after=3)
    texts = notebook.texts()
    assert len(texts) == 2
    # the best is the highest rate measured, the third trial's, whatever best it was given
    assert re.fullmatch(_bar_text(3, "2650 GB/s", "2650 GB/s"), texts[-1])


def test_a_bar_that_never_started_draws_nothing_when_finished(notebook):
    """As when the sweep's set-up failed: its one-line error is all the user sees."""
    files = [io.StringIO() for _ in range(3)]
    for console in (Console(force_jupyter=True, file=files[0]), Console(file=files[1]),
                    Console(file=files[2], force_terminal=True)):
        ProgressReporter(console=console).finish()
    assert notebook.shown == [] and [f.getvalue() for f in files] == ["", "", ""]


def test_a_sweep_whose_workers_do_not_start_ends_its_live_bar(write_space, tmp_path,
                                                              monkeypatch):
    """The bar starts before the workers are waited for; when one does not start, the
    error reaches the caller with the bar stopped: no refresh thread, stdout restored."""
    from sweeper.devices import open_device
    from sweeper.sweep import _loop
    from sweeper.sweep._drop import NotStarted

    class NotStarting(_loop.InlineWorker):
        def wait_ready(self) -> None:
            raise NotStarted("the worker for GPU 0 did not start (on purpose)", 0, "on purpose")

    space, device = write_space(SMALL_SPACE), open_device("interpret")
    monkeypatch.setattr(_loop, "InlineWorker", NotStarting)
    stdout, threads = sys.stdout, set(threading.enumerate())
    reporter = ProgressReporter(console=Console(file=io.StringIO(), force_terminal=True))
    with pytest.raises(NotStarted, match="did not start"):
        sweep_study(space, device, tmp_path / "st", reporter=reporter)
    assert sys.stdout is stdout
    left = set(threading.enumerate()) - threads
    for thread in left:         # a stopped bar's refresh thread ends a moment later
        thread.join(timeout=5)
    assert [t.name for t in left if t.is_alive()] == []


@pytest.mark.parametrize("processes", [False, True], ids=["inline", "worker-process"])
def test_the_finals_have_a_bar_of_their_own_with_rounds_and_finalists(write_space, tmp_path,
                                                                       processes):
    """The finals come after the last trial: the sweep tells the display which final runs
    and each round as it ends (a worker process sends each round as it ends it), so the
    finals bar moves instead of a trials bar frozen at ETA 0:00:00."""
    from sweeper.devices import open_device
    from sweeper.finals import MIN_ROUNDS
    from sweeper.sweep import SilentReporter

    class Phases(SilentReporter):
        def __init__(self) -> None:
            self.said: list[tuple] = []

        def finals(self, problems: int, rounds: int) -> None:
            self.said.append(("finals", problems, rounds))

        def final_started(self, problem: str, finalists: int) -> None:
            self.said.append(("started", problem, finalists))

        def final_round(self, round_: int, finalists: int) -> None:
            self.said.append(("round", round_, finalists))

        def final_done(self) -> None:
            self.said.append(("done",))

    reporter = Phases()
    _, summary = sweep_study(write_space(SMALL_SPACE), open_device("interpret"),
                             tmp_path / "s", reporter=reporter, processes=processes)
    (final,) = summary.finals
    said = reporter.said
    assert said[0] == ("finals", 1, MIN_ROUNDS)         # at most, on the interpreter
    assert said[1] == ("started", "float32 4KiB cold", len(final.finalists))
    rounds = [s for s in said if s[0] == "round"]
    assert [r[1] for r in rounds] == list(range(1, final.rounds + 1))
    assert all(1 <= r[2] <= len(final.finalists) for r in rounds)
    assert said[-1] == ("done",)


def _drawn(run) -> str:
    out = io.StringIO()
    bar = ProgressReporter(console=Console(file=out, width=200))
    run(bar)
    bar.finish()
    return out.getvalue()


def _text(bar: ProgressReporter) -> str:
    """The finals line of ``bar`` as it stands, its columns' padding taken out."""
    console = Console(file=io.StringIO(), width=200)
    console.print(bar._progress.get_renderable())
    return " ".join(console.file.getvalue().splitlines()[-1].split())


def test_the_finals_bar_names_the_problem_round_and_finalists_and_the_trials_say_done(tmp_path):
    trial = replayed_trials(tmp_path)[6]

    def run(bar: ProgressReporter) -> None:
        bar.start(2, 0)
        bar.trial(trial, trial)
        bar.finals(2, 5)
        bar.final_started("float32 4KiB cold", 6)
        bar.final_round(1, 6)
        bar.final_round(2, 3)
        bar.final_done()
        bar.final_started("float32 8KiB cold", 4)
        bar.final_round(1, 4)
        drawn.append(_text(bar))
        bar.final_round(2, 4)
        bar.final_round(3, 4)
        bar.final_done()

    drawn: list[str] = []
    # rich lines the two bars' columns up: one space or more between them
    trials, finals = (" ".join(line.split()) for line in _drawn(run).rstrip().splitlines())
    assert re.search(r"^trials \S+ 1/2 best 2840 GB/s last 2840 GB/s 0:00:\d\d done$", trials)
    # two problems of up to 5 rounds: the first settled in 2, one round of the second;
    # the bar counts rounds run, 2 + 3 at the end
    (running,) = drawn
    assert re.search(r"^finals \S+ 3/7 2 of 2: float32 8KiB cold round 1 of ≤5, "
                     r"4 finalists in 0:00:\d\d ETA", running)
    assert re.search(r"^finals \S+ 5/5 2 of 2: float32 8KiB cold settled in 3 rounds "
                     r"0:00:\d\d done$", finals)


def test_the_trials_bar_counts_the_binaries_built_and_compiling(tmp_path):
    trials = replayed_trials(tmp_path)

    def run(bar: ProgressReporter) -> None:
        bar.start(8, 0)
        bar.compiling(3, 4)
        bar.trial(trials[6], trials[6])
        bar.compiling(9, 0)
        bar.trial(trials[7], trials[6])

    assert "last missing · 9 built" in _drawn(run)
    assert "compiling" not in _drawn(run)


def test_a_terminal_shows_a_spinner_while_the_report_is_written():
    out = io.StringIO()
    bar = ProgressReporter(console=Console(file=out, force_terminal=True, width=120))
    with bar.report():
        import time

        time.sleep(0.3)
    assert "writing the report" in out.getvalue()
    quiet = io.StringIO()                  # written to a file: no spinner, no codes
    with ProgressReporter(console=Console(file=quiet)).report():
        pass
    assert quiet.getvalue() == ""


def test_ctrl_c_says_stopping_above_a_live_bar_without_an_empty_line(tmp_path, monkeypatch):
    """While the bar is live, rich prints a line written to stderr above it, clearing the
    bar's line (and the terminal's echoed ``^C`` with it) first: the Ctrl-C line then
    takes that line, where a leading newline would leave it empty."""
    import signal

    from sweeper.interrupt import stop_handler
    from sweeper.sweep import StopFlag

    out = io.StringIO()
    reporter = ProgressReporter(console=Console(file=out, force_terminal=True, width=100))
    reporter.start(8, 0)
    stop = StopFlag()
    stop_handler(stop)(signal.SIGINT, None)          # sys.stderr is the live bar's now
    reporter.finish()
    shown = out.getvalue()
    assert stop.set and "stopping after the current trial" in shown
    before = shown[:shown.index("stopping after")]
    assert before.endswith("\x1b[2K"), repr(before[-40:])     # the bar's line, cleared
    assert "\x1b[2K\n" not in before                # and never ended empty above the bar


def test_ctrl_c_lines_start_over_the_echo_on_a_terminal_and_as_they_are_elsewhere():
    """On a terminal no live bar owns, a carriage return puts the line over the echoed
    ``^C`` (a newline would leave ``^C`` alone on a line, nothing would run the two
    together); a file, pipe or notebook gets the line as it is."""
    import os

    from sweeper.interrupt import ctrl_c_line

    primary, secondary = os.openpty()
    try:
        with open(secondary, "w", closefd=False) as terminal:
            assert ctrl_c_line("sweeper: aborted", terminal) == "\rsweeper: aborted"
    finally:
        os.close(primary)
        os.close(secondary)
    assert ctrl_c_line("sweeper: aborted", io.StringIO()) == "sweeper: aborted"


@pytest.mark.parametrize("width, line", [
    (140, r"trials [━╸╺]+ +7/144 best 2840 GB/s last 2840 GB/s · 37 built, 5 compiling "
          r"\d:\d\d:\d\d ETA \d:\d\d:\d\d"),
    (100, r"trials [━╸╺]+ +7/144 best 2840 GB/s last 2840 GB/s \d:\d\d:\d\d ETA \d:\d\d:\d\d"),
    (70, r"trials [━╸╺]+ +7/144 best 2840 GB/s last 2840 GB/s ETA \d:\d\d:\d\d"),
    (60, r"trials +7/144 best 2840 GB/s last 2840 GB/s ETA \d:\d\d:\d\d"),
    (50, r"trials +7/144 best 2840 GB/s ETA \d:\d\d:\d\d"),
    (40, r"trials +7/144 best 2840 GB/s"),
    (30, r"trials +7/144 best 2840 GB…"),
])
def test_a_narrow_line_drops_the_least_useful_parts_first_and_keeps_count_and_best(
        tmp_path, width, line):
    """The compile pool's counts go first, then the elapsed time, the bar, the last trial
    and the ETA, each whole; the count and the best stay whole (the best is cut only where
    nothing else is left), on one line that leaves room for a Ctrl-C's echo."""
    trials = replayed_trials(tmp_path)
    bar = ProgressReporter(console=Console(file=io.StringIO(), width=width))
    bar.start(144, 0)
    for t in trials[:6]:
        bar.trial(t, trials[6] if t.number >= 6 else None)
    bar.compiling(37, 5)
    bar.trial(trials[6], trials[6])
    console = Console(file=io.StringIO(), width=width)
    console.print(bar._progress.get_renderable())
    (drawn,) = console.file.getvalue().rstrip().splitlines()          # one line, unwrapped
    assert re.fullmatch(line, drawn.rstrip()), drawn
    assert len(drawn.rstrip()) <= width - progress.ECHO_ROOM
    bar.finish()


def test_a_resumed_study_with_nothing_left_shows_its_best_and_done(write_space, tmp_path):
    """Run again, a finished study's bar starts where it ended: every trial counted, the
    best of those kept, and ``done``; not ``best –`` and an ETA of ``-:--:--``, as if
    nothing had been measured and the sweep hung (a saved notebook keeps that last
    drawing)."""
    from sweeper.devices import open_device

    space, device = write_space(SMALL_SPACE), open_device("interpret")
    sweep_study(space, device, tmp_path / "s", finals=False)
    drawn = _drawn(lambda bar: sweep_study(space, device, tmp_path / "s", reporter=bar,
                                           finals=False))
    line = " ".join(drawn.rstrip().splitlines()[-1].split())
    assert re.fullmatch(r"trials \S+ 6/6 best [\d.]+ GB/s last – 0:00:\d\d done", line), line


def test_the_best_of_a_matmul_over_shapes_is_its_highest_tflops(tmp_path):
    """Across shapes a matmul's highest TFLOP/s (1024 x 12288 x 4096: 757 on the recorded
    H200) is another trial than its highest score, GB/s (2048 x 8192 x 1024: 663 TFLOP/s
    at more bytes a FLOP): the bar's best, in TFLOP/s, is the 757 one, as it measures and
    as a resume starts."""
    from sweeper.devices import open_device
    from sweeper.kernels import Headline

    table, space = matmul_shapes(tmp_path,
                                 ["h200-matmul-short-k.csv", "h200-matmul-wide-1k.csv"],
                                 [(2048, 8192, 1024), (1024, 12288, 4096)])
    device = open_device(f"replay:{table}")

    def swept(bar: ProgressReporter) -> None:
        sweep_study(space, device, tmp_path / "s", reporter=bar)

    for _ in range(2):                                     # measured, then resumed
        out = io.StringIO()
        bar = ProgressReporter(console=Console(file=out, width=200),
                               headline=Headline.TFLOPS)
        swept(bar)
        bar.finish()
        line = " ".join(out.getvalue().rstrip().splitlines()[-1].split())
        assert re.search(r" best 757\.4 TFLOP/s ", line), line


def test_a_study_measured_whole_says_so_under_a_smaller_trial_budget(write_space, tmp_path):
    """Run again with a trial budget below the trials it holds, a study with no config
    left shows its whole space done and stops as complete, not for the budget (which
    said "budget: 2 trials" over a bar of 2/2, as if configs were left unmeasured)."""
    from sweeper.devices import open_device
    from sweeper.sweep import SilentReporter

    class Bar(SilentReporter):
        def start(self, total: int, done: int, best: Any = None) -> None:
            self.started = (total, done)

    space, device = write_space(SMALL_SPACE), open_device("interpret")
    _, whole = sweep_study(space, device, tmp_path / "s", finals=False)
    assert whole.stopped_by.startswith("complete") and whole.measured == 6
    bar = Bar()
    _, again = sweep_study(space, device, tmp_path / "s", finals=False, max_trials=2,
                           reporter=bar)
    assert again.stopped_by.startswith("complete") and bar.started == (6, 6)
