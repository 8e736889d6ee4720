"""``sweeper run``: the command's options as the engine's :class:`~sweeper.engine.RunOptions`,
the run itself (:func:`~sweeper.engine.run_sweep`), and its exit status."""

from __future__ import annotations

import argparse

from sweeper.cli._exits import (
    EXIT_CONFIGS_FAILED,
    EXIT_MEASURE_AGAIN,
    EXIT_NOTHING_MEASURED,
    EXIT_OK,
    signal_exit,
)
from sweeper.cli._inputs import recorded_command, space_source
from sweeper.engine import RunOptions, run_sweep


def run_options(args: argparse.Namespace) -> RunOptions:
    """``run``'s parsed options as the engine takes them: the study records the command
    line (URLs masked), and a fresh process goes on with it after a trial broke the CUDA
    context."""
    return RunOptions(
        space=space_source(args), device=args.device, study=args.study,
        studies_dir=args.studies_dir, storage=args.storage, trials=args.trials,
        time_s=args.time, force=args.force,
        gpus=None if args.gpus is None else tuple(args.gpus), workers=args.workers,
        compile_workers=args.compile_workers, gpu_check=args.gpu_check,
        gpu_check_target=args.gpu_check_target, quiet=args.quiet, report=not args.no_report,
        svg=args.svg, timing=args.timing, priors=not args.no_priors,
        command=recorded_command(args.argv), restart_argv=tuple(args.argv),
        clock_from_start=args.from_shell)


def cmd_run(args: argparse.Namespace) -> int:
    """Sweep the space into its study, then report; the exit status: interrupted (Ctrl-C,
    or a SIGTERM, stopped the sweep: a script can tell it from a finished run, and a
    scheduler's stop from the keyboard's), else nothing measured,
    else the study holds configs of the space that failed by the kernel's fault on its
    source now, this run's (the ``failed:`` line names them) or, resumed, earlier runs'
    (``failed in earlier runs:``): the same command run again keeps its status while the
    study holds them, else every other config tried but some left to measure again (their
    worker processes were killed from outside: the same command measures them, as after
    a Ctrl-C, and a script that loops on the status knows to), else done."""
    result = run_sweep(run_options(args))
    if result.interrupted:
        return signal_exit(result.summary.stopped_by)
    if result.failure is not None:
        return EXIT_NOTHING_MEASURED
    if result.kernel_faults or result.failed_before:
        return EXIT_CONFIGS_FAILED
    return EXIT_MEASURE_AGAIN if result.left_again else EXIT_OK
