"""The engine: a sweep as a library call, behind every front door.

Build a :class:`RunOptions` (the space as a :class:`SpaceSource`, where to measure and
keep it, budgets, workers, output) and call :func:`run_sweep`; it returns a
:class:`RunResult` whose ``store`` is the study.  ``sweeper run`` (the CLI, the only
place that knows argparse), :func:`sweeper.run` (the Python API) and the benchmarks all
call it, so a sweep from a shell and one from a notebook check, measure, record and
report alike; ``sweeper worker`` builds a :class:`WorkerOptions` and calls
:func:`run_worker`.  Importing this package imports no torch, triton, optuna or pandas."""

from sweeper.core._model import DICT, STRING
from sweeper.engine._inputs import kernel_for, space_and_device
from sweeper.engine._options import RunOptions, SpaceSource
from sweeper.engine._report import report_study
from sweeper.engine._restart import MAX_RESTARTS
from sweeper.engine._run import RunResult, run_sweep
from sweeper.engine._worker import WorkerOptions, run_worker

__all__ = ["DICT", "MAX_RESTARTS", "STRING", "RunOptions", "RunResult", "SpaceSource",
           "WorkerOptions", "kernel_for", "report_study", "run_sweep", "run_worker",
           "space_and_device"]
