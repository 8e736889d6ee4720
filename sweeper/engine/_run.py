"""A run, as the engine does it for every front door (``sweeper run``, :func:`sweeper.run`,
the benchmarks): the header, the sweep (Ctrl-C stops after the trial in flight), what it
did, the report.  A trial that broke the CUDA context of this process (measuring inline)
hands the rest of the sweep to worker processes, each with a context of its own; one that
hung it (a kernel that never returns) makes the command go on in a fresh process, as the
journal lets a new process resume where this one stopped.

It takes a :class:`~sweeper.engine.RunOptions` and returns a :class:`RunResult`; exit
statuses are the command's business, not the engine's.

This module holds the run's steps, in the order :func:`_run` takes them; what the run
says is :mod:`sweeper.engine._lines`', its estimate and the costs it keeps for the next
are :mod:`sweeper.engine._costs`', its report :mod:`sweeper.engine._report`'s, and a hung
trial's fresh process :mod:`sweeper.engine._restart`'s."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.core._spelling import given, option
from sweeper.core._units import counted
from sweeper.engine._costs import estimate, note_costs, run_plan
from sweeper.engine._inputs import budgeted, kernel_for, space_and_device
from sweeper.engine._lines import (
    header,
    printer,
    progress_reporter,
    say_summary,
    say_time,
    unchanged_since_alike,
)
from sweeper.engine._options import RunOptions
from sweeper.engine._prespawn import StartAhead, worker_processes
from sweeper.engine._report import import_report_aside, report_run
from sweeper.engine._restart import SINCE, STARTED, hung
from sweeper.errors import ContextLost, RefusalFailed, SweeperError
from sweeper.interrupt import Aborted, stopping_on_signals
from sweeper.options import check_study_name, study_folder

if TYPE_CHECKING:          # the store is imported where a run opens it
    from sweeper.store import Storage
    from sweeper.sweep import Sampling
    from sweeper.sweep._compile_ahead import CompileOptions
    from sweeper.sweep._gpu_check import GpuCheck

#: Seconds a time budget keeps for what follows the sweep's finals: closing its workers
#: and writing the study's summary (0.0-0.4 s on the H200, an H100 and the 2-core CI
#: machine, where a `--time 10s` run that kept nothing for them ended at 10.54 s).
END_S = 0.3


@dataclass(frozen=True)
class RunResult:
    """What a run left: its ``store`` (the study, kept whatever happened), the sweep's
    ``summary`` (None where the run went on in a fresh process, or gave up restarting),
    and ``failure``: why nothing came of it, already said on stderr (every trial failed or
    was ruled out, or too many restarts), None where it measured."""

    store: Storage
    summary: Any = None
    failure: str | None = None
    #: the configs of this run's space that earlier runs of the study recorded failed by
    #: the kernel's fault, on its kernel source now (a resume's ``failed in earlier runs``
    #: line names them): the study holds them, so the command's status says so as a run
    #: that failed them would
    failed_before: int = 0

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C or a SIGTERM stopped the sweep (after its trial in flight, every
        finished trial kept; no finals)."""
        from sweeper.sweep._budget import INTERRUPTED, TERMINATED

        return self.summary is not None and self.summary.stopped_by in (INTERRUPTED,
                                                                         TERMINATED)

    @property
    def left_again(self) -> int:
        """The configs the sweep left to measure again (``retry``: their worker process was
        killed from outside) where it tried every other valid config: its stop says so
        instead of ``complete`` (:func:`~sweeper.outcome.tried_all_but`), and the same
        command measures them; 0 where it left none, or stopped otherwise (a budget, a
        signal: those say what they left)."""
        from sweeper.outcome import tried_all_but

        again = 0 if self.summary is None else self.summary.again
        return again if again and self.summary.stopped_by == tried_all_but(again) else 0

    @property
    def kernel_faults(self) -> int:
        """This run's trials that failed by the kernel's fault
        (:attr:`~sweeper.trial.TrialResult.kernel_fault`: a wrong answer, a crash, a
        compile error), those of the processes a hang replaced before this one included
        (the trials the study recorded since the command started, ``$SWEEPER_SINCE``)."""
        since = os.environ.get(SINCE)
        if since is not None:
            return sum(1 for t in self.store.records()[0]
                       if t.kernel_fault and t.started >= since)
        if self.summary is None:
            return 0
        return sum(1 for t in self.summary.trials[self.summary.resumed:] if t.kernel_fault)


#: The runs this process has begun: a later one finds the imports and compiles of its
#: set-up done (a call from Python on the interpreter: 2.6 s before its first sweep, 0.2 s
#: before its second)
_runs = 0


def run_sweep(options: RunOptions) -> RunResult:
    """Sweep ``options.space`` into its study, then report.  With no ``options.restart_argv``
    (the Python API) it never replaces or ends the process: a trial that broke the CUDA
    context is an error to the caller, a hung one a message.  A signal that ends the run
    (a second Ctrl-C, or a first one outside the sweep) is an
    :class:`~sweeper.interrupt.Aborted` naming the study it left, once one was opened."""
    from sweeper._processes import release
    from sweeper.study import now

    STARTED[:] = [now()]
    started = StartAhead(options)     # what starts once the space is read
    opened: list[Storage] = []        # the study's store, once the run has opened it
    try:
        return _run(options, started, opened)
    except KeyboardInterrupt as err:
        # Python's own where no handler of the sweep's was in place (set-up, report)
        aborted = err if isinstance(err, Aborted) else Aborted()
        if opened:
            aborted.study, aborted.location = opened[0].name, opened[0].location
        if aborted is err:
            raise
        raise aborted from err
    finally:
        started.close()     # a compile pool no sweep adopted
        release()           # the processes started ahead that no worker or pool adopted


def _run(options: RunOptions, started: StartAhead, opened: list[Storage]) -> RunResult:
    global _runs
    from sweeper.engine._clock import RunClock, process_age

    # from the process's start where this is the command itself, not a call from Python
    clock = RunClock(before_s=process_age() if options.clock_from_start else None,
                     first=_runs == 0)
    if options.study is not None:
        check_study_name(option("study"), options.study)
    imported = frozenset(sys.modules)     # a module among them may be older than its file
    # workers import torch beside this process once the space is read (a bad one: none)
    space, device = space_and_device(options.space, options.device, on_space=started)
    clock.mark("space and device")
    gpus = _gpus(options.gpus, device)
    ahead = _compile_ahead(options.compile_workers, device, len(gpus) if gpus else 1, started,
                           space)
    kernel = kernel_for(space, device, imported=imported,
                        processes=worker_processes(options.workers, device.measures_gpu))
    from sweeper.store._open import open_storage
    from sweeper.study import study_name
    from sweeper.sweep import Sampling, StopFlag, open_study

    name = options.study or study_name(space, device)
    store = open_storage(options.storage, study_folder(options.studies_dir, name))
    opened.append(store)
    command = options.command or "sweeper run"
    resuming = store.exists()
    facts = device.facts()
    bounded = budgeted(space, options.trials, options.time_s)   # the run's budgets, once
    said: list[str] = []            # the priors' line, said after the header
    priors = _priors(space, options, facts.name, store.root, said.append)
    configs = [c for source in priors for c in source.configs]
    left_as = store.study_meta() if resuming else None     # as the last run left it
    # the sampler, built before the study is written: a factory that fails leaves none,
    # or the resumed one as it was
    sampling = open_study(store, space, kernel, device, command=command, force=options.force,
                          budget=bounded.budget,
                          before_writing=lambda: Sampling.build(space, kernel, facts, configs))
    measure = device.measure_spec(space.measure)
    say = printer(options.quiet)
    kept_trials = store.records()[0] if resuming else []
    kept = len(kept_trials)
    where = store.location if options.storage else store.root
    say(f"study {name}: {where} ({f'resuming, {kept} trials kept' if resuming else 'new'})")
    unchanged = unchanged_since_alike(left_as, store.study_meta(), space)
    if unchanged is not None:
        say(unchanged)
    limits = _ceilings_for(device, store)      # this GPU's ceilings, or why there are none
    header(say, space, device, facts, measure, limits)
    done = _done(store, kept_trials)
    plan = run_plan(options, space, device, clock, done, store, bounded,
                    again=_again(store, kept_trials))
    # a check of what compiles for a GPU is of the trials: a run with none left needs none
    check = None if plan is not None and not plan.trials else _gpu_check(
        say, options, space, kernel, device, facts, clock, bounded.budget.time_s)
    clock.estimate_s = estimate(say, options, space, device, clock, done, store,
                                bounded=bounded, plan=plan)
    for line in said:
        say(line)
    stop = StopFlag()
    clock.mark("set-up")
    _runs += 1          # a run that failed before here (a bad space) imported little
    warm = import_report_aside(options, device)
    reporter = progress_reporter(options.quiet, kernel.headline)
    # Ctrl-C or SIGTERM stops the sweep after the trial in flight (twice: at once)
    with stopping_on_signals(stop):
        try:
            summary = _sweep(options, space, kernel, device, store, limits, configs, stop,
                             gpus, ahead, reporter, clock=clock, check=check,
                             sampling=sampling)
        except ContextLost as lost:
            if type(kernel).__module__ == "__main__":
                raise _lost_in_main(lost, space.kernel, store) from None
            # the rest of the sweep in worker processes, each with a CUDA context of its
            # own, in this same command or API call; the study resumes from its journal,
            # and the crashed trial is never proposed again
            print(f"sweeper: trial #{lost.number}: {lost.reason}; recorded as crashed in "
                  f"{store.location}", file=sys.stderr)
            options = dataclasses.replace(options, workers="process")
            # new bars: the first ended
            reporter = progress_reporter(options.quiet, kernel.headline)
            summary = _sweep(options, space, kernel, device, store, limits, configs, stop,
                             gpus, dataclasses.replace(ahead, pool=None), reporter, lost=lost,
                             clock=clock, check=check,
                             source_hash=store.study_meta().kernel_source_hash)
    clock.mark("sweep")
    # the report reads it (how busy, why it stopped); the command's wall follows it
    ran = last_run(summary, command, priors, wall_s=clock.elapsed_s())
    store.update_meta(last_run=ran)
    if warm is not None:
        warm.join()        # before the report forks its drawing processes
    before = _failed_before(summary, space, store)
    failure = _finish(options, summary, space, kernel, store, limits, clock, reporter,
                      bounded.budget.time_s, before)
    say_time(options, clock, summary, ran["timing"])
    # the whole command's, report included: a run past its time budget shows there
    store.update_meta(last_run={**ran, "wall_s": round(clock.elapsed_s(), 3)})
    note_costs(space, device, clock, summary, check)
    return RunResult(store, summary, failure,
                     failed_before=sum(1 for t in before if t.kernel_fault))


def _gpus(asked: Sequence[int] | None, device: Any) -> list[int] | None:
    """The GPU indices ``--gpus`` names (``all``: every visible one), checked before
    anything is written; None where it was not given: the one GPU the device opened.  On
    a device without GPUs the indices only name the workers."""
    if asked is not None and not device.measures_gpu:
        return list(asked) or None
    if not device.measures_gpu:
        raise SweeperError(f"{given('gpus', 'all')}: the {device.name} device has no GPUs "
                           f"to count; name the workers by index ({given('gpus', '0,1')})")
    import torch

    count = torch.cuda.device_count()
    if asked is None:
        return list(range(count))
    beyond = [i for i in asked if i >= count]
    if beyond:
        raise SweeperError(f"{given('gpus', ','.join(map(str, asked)))}: no GPU {beyond[0]}; this "
                           f"machine shows {count} (0 to {count - 1})")
    return list(asked) or None


def _compile_ahead(asked: int | None, device: Any, workers: int, started: StartAhead,
                   space: Any) -> CompileOptions:
    """``--compile-workers`` as the sweep's options: on a device that compiles for a GPU,
    the processes asked for (default ``auto``: the cores the workers leave, at most 8; on
    the H200, once started, 8 compiled 64 matmul configs in 0.19x the serial time and
    moved no median by more than 0.07 %, docs/benchmarks.md): the pool ``started`` with
    the workers, else one started with the sweep where every config compiles, else once a
    trial compiled a binary this machine had not compiled before; elsewhere none, and
    asking for some is refused; none either for a kernel in ``__main__``, which no
    compile process can import."""
    from sweeper.kernels._binaries import Binaries, space_binaries
    from sweeper.kernels._precompile import Target
    from sweeper.plan import costs_key
    from sweeper.sweep._compile_ahead import CompileOptions
    from sweeper.sweep._compile_pool import default_size

    target = device.compile_target()
    if target is None:
        if asked:
            raise SweeperError(f"{given('compile_workers', asked)}: the {device.name} "
                               "device compiles nothing for a GPU; leave the option out")
        return CompileOptions()
    if space.kernel.partition(":")[0] == "__main__":
        # a compile process imports the kernel by its name, and a notebook's or a
        # script's __main__ is not its own: each would die loading it, restarted to no end
        if asked:
            raise SweeperError(
                f"{given('compile_workers', asked)}: kernel {space.kernel} is defined in "
                "__main__ (a notebook or a script), which compile processes cannot "
                "import: leave the option out (each config compiles as it first runs), or "
                "put the kernel in a module and name it as module:attr")
        return CompileOptions()
    @functools.cache
    def binaries() -> Binaries:
        """Read only when a lazy pool has a slow first launch to judge, not at start-up."""
        return space_binaries(space, costs_key(device))

    return CompileOptions(default_size(workers) if asked is None else asked,
                          Target.parse(target), not started.pool_ahead, started.pool,
                          built=lambda config: binaries().cached(binaries().key(config)))


def _priors(space: Any, options: RunOptions, gpu: str, root: Path, say: Any) -> list[Any]:
    """Where a sampler that declares ``uses_priors`` (``auto``) starts: the winners of
    other studies of this kernel on this GPU, each named in the header (``--no-priors``:
    none)."""
    from sweeper.plugins import sampler_capabilities

    if not sampler_capabilities(space.sampler.name).uses_priors:
        return []
    if not options.priors:
        say(f"{space.sampler.name}: starting without the winners of other studies "
            f"({given('priors', False)})")
        return []
    from sweeper.samplers._priors import prior_sources

    found = prior_sources(options.studies_dir, space, gpu, exclude=root)
    if found:
        names = ", ".join(f"{p.study} ({counted(len(p.configs), 'config')}"
                          f"{', measured on this same problem' if p.same_problem else ''})"
                          for p in found)
        say(f"{space.sampler.name}: starting from "
            f"{counted(sum(len(p.configs) for p in found), 'config')} that won other "
            f"studies of {space.kernel} on {gpu} in "
            f"{options.studies_dir}: {names}; {given('priors', False)} to start without them")
    return found


def _ceilings_for(device: Any, store: Storage) -> Any:
    """This GPU's cached ceilings (snapshotted into the study), or why there are none."""
    if not device.has_ceilings:
        return f"none on the {device.name} device"
    from sweeper import ceilings

    env = device.environment()
    found = ceilings.load(env["gpu"], env.get("gpu_uuid", ""), env.get("driver", ""))
    if found is None:
        return "not measured for this GPU; run `sweeper calibrate` for % of ceiling"
    store.update_meta(ceilings=found.to_json())
    return found


def _done(store: Any, kept: Sequence[Any]) -> list[Any]:
    """The ``kept`` trials of the study in ``store`` that this run measures none of again:
    those on the kernel source it records now (a resume forced past an edit measures the
    configs of the earlier source again), as ``sweeper plan`` counts them."""
    if not kept:
        return []
    from sweeper.winners import Sources

    return Sources.of(store.study_meta()).done(kept)


def _again(store: Any, trials: Sequence[Any]) -> tuple[Mapping[str, str], ...]:
    """The choices of the study in ``store``'s ``trials`` to be measured again (``retry``:
    their worker process was killed from outside) on the kernel source it records now,
    which a run measures first (:mod:`sweeper.sweep._loop`)."""
    if not any(t.retry for t in trials):
        return ()
    from sweeper.winners import Sources

    return tuple(t.choice for t in Sources.of(store.study_meta()).again(trials))


def _gpu_check(say: Callable[[str], None], options: RunOptions, space: Any, kernel: Any,
               device: Any, facts: Any, clock: Any, time_s: float | None
               ) -> GpuCheck | None:
    """On a device that runs Triton kernels without compiling them for a GPU (the
    interpreter, ``checks_gpu_compile``), the check ``--gpu-check`` asks for, its
    representative (the space's first valid config the kernel does not turn down)
    compiled for the target now and its
    line said (:mod:`sweeper.sweep._gpu_check`); None where it is off, or skipped (its
    line says why), or the device compiles for a GPU itself.  Under a time budget, a check
    that does not fit in what it leaves before the report (by ``clock``) is skipped, and
    one that runs is ended at that deadline: set-up takes no more of the budget than it
    leaves.  ``time_s``: the run's time budget (``--time``, else the space's; None:
    none)."""
    if not device.checks_gpu_compile or options.gpu_check == "off":
        return None
    from sweeper.kernels._cache_probe import names_triton
    from sweeper.space import Invalid
    from sweeper.study import resolved
    from sweeper.sweep._gpu_check import GpuCheck, budget_skip

    if names_triton(space.kernel) is False:
        # no Triton to compile; and a torch op's launch computes on the CPU, which a
        # child forked from a process whose thread pools ran can block in
        say(f"gpu check: nothing to compile for {options.gpu_check_target}: the kernel's "
            "module names no Triton")
        return None
    from sweeper.plan import costs_key, run_costs

    costs = run_costs(costs_key(device))
    # what the time budget leaves now before what follows the sweep (its end, END_S, and
    # the report as this machine's last took it); None without a time budget
    left_s = None if time_s is None else time_s - clock.elapsed_s() - END_S - (
        costs.of_space(space.study).report_reserve(0) if options.report else 0.0)
    skipped = budget_skip(left_s, options.gpu_check_target, costs.gpu_check_s)
    if skipped is not None:
        say(skipped)
        return None
    check, line = GpuCheck.open(kernel, options.gpu_check_target, options.gpu_check)
    if check is not None:
        first, turned_down, failing = None, None, None
        try:
            for _, config in resolved(space, facts.env(), facts.max_footprint):
                if isinstance(config, Invalid):
                    continue
                try:
                    why = kernel.cannot_launch(config, device.torch_device,
                                               ahead=device.measures_gpu)
                except RefusalFailed:
                    # its trial fails, never launched: one the run launches represents
                    # the kernel, else (every refusal failed) this one, whose code is
                    # the kernel's all the same
                    failing = config if failing is None else failing
                    continue
                except Exception:  # noqa: BLE001 - its trial records it, as before
                    why = None
                if why is None:
                    first = config
                    break
                turned_down = turned_down or (config, why)
        except SweeperError:        # said in its place, when the sweep enumerates it
            first = failing = None
        line = check.start(first if first is not None else failing, left_s, turned_down)
    say(line)
    return check if check is not None and check.skipped is None else None


def _sweep(options: RunOptions, space: Any, kernel: Any, device: Any, store: Storage,
           limits: Any, priors: list[dict[str, str]], stop: Any, gpus: list[int] | None,
           ahead: CompileOptions, reporter: Any, *, clock: Any, check: GpuCheck | None,
           lost: ContextLost | None = None, sampling: Sampling | None = None,
           source_hash: str | None = None) -> Any:
    """The sweep with ``run``'s options, its progress bar (``reporter``), its workers (one
    per GPU of ``gpus``), its compile processes (``ahead``), on the interpreter its GPU
    compile ``check``, and, measuring in this process, a hang going on in a fresh
    process.  After ``lost`` (this process's CUDA context broken) nothing is measured
    here: the one-at-a-time baseline is not measured again.  ``sampling``: the sampler
    built before the study was written (None: the sweep builds a fresh one).
    ``source_hash``: the kernel source the study records its trials under (after
    ``lost``: the one the sweep before recorded, so that an edit since stops this one as
    it would have stopped that one; None: the kernel's now)."""
    from sweeper.sweep import Sweep

    sweep = Sweep(space, kernel, device, store, reporter=reporter, stop=stop,
                  max_trials=options.trials, max_time_s=options.time_s,
                  ceilings=None if isinstance(limits, str) else limits,
                  priors=priors,
                  on_hang=lambda record, edited: hung(record, options, store, edited),
                  gpus=gpus, processes=worker_processes(options.workers, device.measures_gpu),
                  compile=ahead, gpu_check=check, sampling=sampling,
                  source_hash=source_hash)
    sweep.run_drift = sweep.run_drift and lost is None
    if sweep.max_time_s is not None:
        from sweeper.plan import costs_key, run_costs

        # what this machine's runs measured, else the H200's figures, not the device's
        # own first guess that the estimate takes: the interpreter's (a 7 s report) kept
        # a first `--time 6s` run of spaces/copy-small.yaml from measuring anything (its
        # report took 1.1 s; with the H200's 1 s it measured 3 configs within the budget)
        costs = run_costs(costs_key(device)).of_space(space.study)
        sweep.outside_s = clock.elapsed_s() + END_S
        sweep.finals_overhead_s = costs.finals_overhead_s
        if device.measures_gpu:       # a first compile from a cold cache, as the plan has it
            sweep.first_trial_s = costs.first_compile_of(
                space.kernel, nvrtc=space.kernel == "cuda") + \
                costs.trial_s.get(space.kernel, 0.0)
        if options.report:
            # what this machine's last report took beyond its pictures, and per heatmap
            # for the maps measured
            sweep.report_s = costs.report_reserve
    return sweep.run()


def _lost_in_main(lost: ContextLost, name: str, store: Storage) -> SweeperError:
    """Why a sweep of a kernel defined in ``__main__`` (a notebook, a script) stops where
    a trial left this process's CUDA context unusable: the rest would go to worker
    processes, which cannot import it (each died loading it), and nothing more runs here;
    what is kept, and how to go on."""
    return SweeperError(
        f"trial #{lost.number}: {lost.reason}; recorded as crashed in {store.location}, "
        f"with every trial before it; kernel {name} is defined in __main__ (a notebook or "
        "a script), which worker processes cannot import, so the sweep cannot go on in "
        "them: restart the process (a notebook's kernel), whose CUDA context is lost, and "
        "run the same call again (that config is not measured again), or put the kernel "
        "in a module and name it as module:attr")


def last_run(summary: Any, command: str, priors: Sequence[Any] = (),
             wall_s: float | None = None) -> dict[str, Any]:
    """What the study's ``last_run`` keeps of a sweep (``sweeper run``'s, or a worker's):
    why it stopped, the command's seconds (``wall_s``, from the process's start for a
    command: what its ``time:`` line says, to hold against its time budget; the sweep's
    where None), the sweep's (``sweep_s``) and its trials measured (``sweeper plan``'s
    rate), the command, the ``priors`` it started from, the GPUs it dropped and how busy
    it kept them (the report's lines)."""
    return {"stopped_by": summary.stopped_by,
            "wall_s": round(summary.wall_s if wall_s is None else wall_s, 3),
            "sweep_s": round(summary.wall_s, 3),
            "measured": summary.measured, "command": command,
            "priors": {p.study: p.configs for p in priors},
            "dropped": [d.to_json() for d in summary.dropped],
            "timing": summary.timing.lines() if summary.timing is not None else [],
            "gpu_busy": summary.busy.to_json() if summary.busy else None}


def _failed_before(summary: Any, space: Any, store: Storage) -> list[Any]:
    """The trials a resumed study kept from earlier runs that failed (``failed``
    statuses), measured on its kernel source now and of configs this run's space holds:
    what it still holds of its failures (a config dropped from the space, or measured
    only on an earlier source, is not, nor a trial this run measures again: ``retry``)."""
    from sweeper.outcome import is_failure
    from sweeper.sweep._optuna import in_space
    from sweeper.winners import Sources

    kept = summary.trials[:summary.resumed]
    if not kept:
        return []
    return [t for t in Sources.of(store.study_meta()).measured_now(kept)
            if is_failure(t) and in_space(space, t.choice)]


def _finish(options: RunOptions, summary: Any, space: Any, kernel: Any, store: Storage,
            limits: Any, clock: Any, reporter: Any, time_s: float | None,
            before: Sequence[Any] = ()) -> str | None:
    """What this run did, the failures the study kept from earlier runs (``before``,
    :func:`_failed_before`), each problem's outcome, the report (each timed on ``clock``,
    under the sweep's ``reporter``'s spinner, within the run's time budget ``time_s``,
    None: none); why nothing came of it (said on stderr), or None."""
    from sweeper.outcome import nothing_measured
    from sweeper.winners import Winners

    say = printer(options.silent)          # the summary, unless silent
    say_summary(say, summary, space, kernel, store, limits, time_s, before)
    clock.mark("summary")
    report_run(options, summary, store, clock, reporter, time_s, say)
    # a study forced past a kernel edit: measured on the source now, once it measured any
    why = nothing_measured(Winners.of(store).sources.shown(summary.trials),
                           summary.stopped_by)
    if why is not None:
        print(f"sweeper: {why}", file=sys.stderr)
    return why
