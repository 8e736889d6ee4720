"""A run's last step, its report: written where the run asks for one and its time
budget leaves room for it (else said, with the command that writes it), under the
sweep's spinner, timed for the next estimate; and what the report draws with, imported
beside a sweep whose workers measure in processes of their own."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sweeper.core._units import counted
from sweeper.engine._options import RunOptions
from sweeper.engine._prespawn import worker_processes

if TYPE_CHECKING:
    from sweeper.store import Storage


#: A time budget's whole command may end this fraction past it (its promise: within the
#: budget plus 5 %); a report that would take it further is not written.
BUDGET_SLACK = 0.05
#: Seconds a report under a time budget keeps, past its pictures, for its three files
#: (``files`` in the time line: 0.0-0.2 s on the 2-core development machine) and the
#: command's last lines.
REPORT_FILES_S = 0.3


def report_run(options: RunOptions, summary: Any, store: Storage, clock: Any, reporter: Any,
               time_s: float | None, say: Callable[[str], None]) -> None:
    """The run's report, where ``options`` ask for one and the run's time budget
    ``time_s`` (None: none) leaves room for it (:func:`_report_fits`, which says why not),
    under the sweep's ``reporter``'s spinner; timed on ``clock``, with what the next
    estimate prices a report by (the maps it drew, their cells, what it took besides)."""
    if not options.report or not _report_fits(options, summary, time_s, store, clock, say):
        return
    # a report that takes longer than the time kept for it (its pictures' seconds
    # vary twofold on a loaded 2-core machine: 1.8-3.7 s for the same 8 maps of
    # spaces/add.yaml, and a `--time 10s` run ended at 11.7 s) stops drawing where
    # the budget ends, leaving the rest to `sweeper report`
    deadline = None if time_s is None else time.perf_counter() + (
        (1 + BUDGET_SLACK) * time_s - clock.elapsed_s() - REPORT_FILES_S)
    with reporter.report():
        files = report_study(store, svg=options.svg, say=say, deadline=deadline,
                             how=_report_how(options, store))
    clock.mark("report")
    # the maps drawn this time, not those kept unchanged: the pictures' seconds are
    # theirs (a resumed run that redrew nothing would price a map at nearly nothing);
    # the imports and the files are the same whatever the maps; the pictures and the
    # tables grow with them (plan.RunCosts.report_for)
    clock.report_maps = len({p.stem for p in files.drawn})
    clock.report_cells = _redrawn_cells(summary) if clock.report_maps else 0
    clock.report_fixed_s = clock.steps()["report"] - files.seconds["pictures"] - \
        files.seconds.get("tables", 0.0)
    clock.parts["report"] = report_parts(clock.steps()["report"], files.seconds)


def report_study(store: Any, *, svg: bool = False, redraw: bool = False,
                 say: Callable[[str], None] = print, scale: str | None = None,
                 deadline: float | None = None, how: str | None = None) -> Any:
    """Write the report of ``store`` (pictures as PNG, and SVG with ``svg``; only those
    whose numbers changed unless ``redraw``; the heatmaps' colour ``scale``, as
    :func:`~sweeper.report.study_tables` takes it; no picture started that would end past
    ``deadline``, on ``time.perf_counter()``'s clock) and say where it is, what was drawn,
    and what was left for ``sweeper report`` (``how``: its argument; the study's folder
    where None); returns what was written (a :class:`~sweeper.report.ReportFiles`)."""
    from sweeper.report import write_report

    formats = ("png", "svg") if svg else ("png",)
    files = write_report(store, formats=formats, redraw=redraw, scale=scale,
                         deadline=deadline)
    pictures = len(files.images) // len(formats)
    drawn = len({p.stem for p in files.drawn})
    kinds = " and ".join(f.upper() for f in formats)
    # a report with nothing to draw makes no heatmaps folder: name none, say why
    # nor one where the time budget left no picture drawn (the next line says so)
    maps = f"no heatmap drawn: {files.why_none}" if files.why_none is not None else \
        "no heatmap drawn yet" if not pictures and files.left else \
        f"{counted(pictures, 'heatmap')} in {store.root / 'heatmaps'} ({kinds}; " \
        f"{drawn} drawn, {pictures - drawn} unchanged)"
    say(f"report: {files.markdown}, {files.html.name} and {files.json.name}; {maps}")
    if files.left:
        say(f"report: {counted(len(files.left), 'picture')} not drawn, the time budget is "
            f"spent: `sweeper report {how or store.root}` draws them")
    return files


def report_parts(step_s: float, seconds: dict[str, float]) -> str:
    """The report's ``step_s`` split as the time line says it: ``seconds`` (what
    :func:`~sweeper.report.write_report` clocked: its tables, pictures and files, and the
    plotting library's import), its imports counting the rest of the step too, which is
    importing the report's own modules (pandas: 0.5-0.7 s where the sweep measured in
    this process) or waiting for the thread that imports them beside the sweep, so that
    the parts add up to the step."""
    clocked = sum(v for k, v in seconds.items() if k != "imports")
    shown = {**seconds, "imports": max(seconds.get("imports", 0.0), step_s - clocked)}
    return ", ".join(f"{k} {v:.1f}" for k, v in shown.items())


def _redrawn_cells(summary: Any) -> int:
    """The cells of the maps this run's report drew again: those of each problem this
    run measured a trial of or ran the final of (:mod:`sweeper.drawn_maps`, the rule the
    time budget counts them by)."""
    from sweeper.drawn_maps import ProblemMaps
    from sweeper.finals import problem_of

    redrawn = {problem_of(t) for t in summary.trials[summary.resumed:] if t.ok} | \
        {f.problem for f in summary.finals}
    maps: dict[Any, ProblemMaps] = {}
    for t in summary.trials:
        if t.ok and t.config is not None and problem_of(t) in redrawn:
            maps.setdefault(problem_of(t), ProblemMaps()).add_trial(t)
    return sum(m.drawn_cells() for m in maps.values())


def _report_fits(options: RunOptions, summary: Any, time_s: float | None, store: Storage,
                 clock: Any, say: Callable[[str], None]) -> bool:
    """Whether the time budget left covers the report (what the sweep kept for it) within
    the 5 % a budget may run over; where it does not, say so and how to write it.  A
    sweep the set-up left no time (a study resumed complete under ``--time 3s`` on the
    interpreter: 2.7 s before the sweep) stopped at once, and its report took the command
    to 3.6 s.  ``time_s``: the run's time budget (None: none)."""
    kept = summary.report_kept_s
    if time_s is None or kept is None:
        return True
    left = time_s - clock.elapsed_s()
    if left + BUDGET_SLACK * time_s >= kept:
        return True
    if any(t.ok for t in summary.trials):   # else nothing to report (said below)
        say(f"report: not written, the time budget is spent ({max(left, 0.0):.1f} s left, a "
            f"report takes about {kept:.1f} s): `sweeper report {_report_how(options, store)}`"
            " writes it")
    return False


def _report_how(options: RunOptions, store: Storage) -> str:
    """What ``sweeper report`` takes to write this study's report."""
    return f"{store.name} --storage URL --studies-dir {options.studies_dir}" \
        if options.storage else str(store.root)


def import_report_aside(options: RunOptions, device: Any) -> threading.Thread | None:
    """Import what the report draws with (pandas, matplotlib) on a thread while the
    sweep runs, where its workers measure in processes of their own (this process mostly
    waits on them, so the imports take nothing from a measurement); the thread, or None
    where there is no report or this process measures."""
    if not options.report or not worker_processes(options.workers, device.measures_gpu):
        return None

    def imports() -> None:
        with contextlib.suppress(Exception):   # the report says what is missing, itself
            from sweeper.report import write_report  # noqa: F401
            from sweeper.report._draw import matplotlib_imported

            matplotlib_imported()

    thread = threading.Thread(target=imports, name="sweeper-report-imports", daemon=True)
    thread.start()
    return thread
