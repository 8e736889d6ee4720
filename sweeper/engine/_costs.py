"""What a run costs: the estimate it says before it sweeps (what ``sweeper plan`` plans
of it, less what its study kept, plus the finals the study still owes), and what it
measured of its costs, kept for the next estimate and time budget on this machine."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sweeper.core._units import counted
from sweeper.engine._inputs import budgeted
from sweeper.engine._options import RunOptions
from sweeper.engine._restart import RESTARTS

if TYPE_CHECKING:
    from sweeper.sweep._gpu_check import GpuCheck


#: Spaces larger than this get no estimate at the start of a run: the plan resolves every
#: config, which would hold back the first trial (10⁶ configs: seconds).
ESTIMATE_UP_TO = 50_000


def estimate(say: Callable[[str], None], options: RunOptions, space: Any, device: Any,
             clock: Any, kept: Sequence[Any] = (), store: Any = None, *,
             bounded: Any = None, plan: Any = None) -> float | None:
    """Print what ``sweeper plan`` estimates this run takes, its trials as
    ``--trials`` (or the space's budget) bounds them, less the configs the study has
    ``kept`` (a resumed run measures none again, and they count towards ``--trials``),
    plus the finals ``store`` still owes (a run stopped before them leaves them to this
    one), and return it; where the time budget
    (``--time``, or the space's) is shorter, that budget, with what the trials would take
    without it.  Nothing for a replay (the estimate is the recorded GPU's) or a space too
    large to plan quickly.  A run left with no trial and no final says that nothing is
    left to measure, and why, instead of an estimate (None).  ``bounded``: ``space`` under
    those budgets, as the run has it (:func:`budgeted`; ``None``: made here); ``plan``:
    the run's plan (:func:`run_plan`; ``None``: made here)."""
    if bounded is None:
        bounded = budgeted(space, options.trials, options.time_s)
    if plan is None:
        plan = run_plan(options, space, device, clock, kept, store, bounded)
    if plan is None:
        return None
    from sweeper.plan import estimate_words
    from sweeper.trial import trials_counted

    checked = device.checks_gpu_compile and options.gpu_check != "off"
    if not plan.trials and not plan.finals_s:
        why = (f"the study holds every one of the space's {counted(plan.size, 'config')} "
               f"({counted(len(kept), 'trial')} kept)" if not plan.todo else
               f"the study's {counted(trials_counted(kept), 'trial')} spend the trial budget "
               f"of {bounded.budget.trials}")
        say(f"nothing left to measure: {why}{'; no gpu check' if checked else ''}")
        return None
    head, lead, seconds = estimate_words(plan, bounded.budget.time_s,
                                         per_trials=bool(plan.trials))
    if not plan.trials:
        head += (" for the finals the study still owes, no trial left to measure" +
                 ("; no gpu check" if checked else ""))
    parts = f"{lead}{plan.parts_text()}"       # none where every part is under 0.5 s
    say(f"estimated time: {head} ({parts + '; ' if parts else ''}sweeper plan says how)")
    return seconds


def run_plan(options: RunOptions, space: Any, device: Any, clock: Any,
             kept: Sequence[Any], store: Any, bounded: Any,
             again: Sequence[Mapping[str, str]] = ()) -> Any:
    """What ``sweeper plan`` plans of this run (a :class:`~sweeper.plan.Plan`): ``space``
    under its budgets (``bounded``), less the ``kept`` trials, the configs to measure
    ``again`` first, plus the finals ``store`` still owes; None for a replay (the estimate
    is the recorded GPU's) or a space too large to plan quickly."""
    if device.replays or space.size > ESTIMATE_UP_TO:
        return None
    from sweeper.plan import plan_of, run_shape

    shape = run_shape(space, device, report=options.report,
                      startup=options.clock_from_start, setup=clock.first,
                      compile_workers=options.compile_workers)
    plan, _ = plan_of(bounded, device, resumed_shape(shape, store, kept, again))
    return plan


def resumed_shape(shape: Any, store: Any, kept: Sequence[Any],
                  again: Sequence[Mapping[str, str]] = ()) -> Any:
    """``shape`` (a :class:`~sweeper.plan.RunShape`) of a run that resumes the study in
    ``store``, whose ``kept`` trials it measures none of again, counts towards its trial
    budget, and whose finals it still owes, and which measures the choices ``again`` (of
    trials to be measured again) first: what ``run`` and ``plan`` estimate alike."""
    if not kept and not again:
        return shape
    from sweeper.trial import trials_counted

    return dataclasses.replace(shape, done=frozenset(t.key() for t in kept),
                               spent=trials_counted(kept), again=tuple(again),
                               finals_owed=_finals_owed(store, kept))


def _finals_owed(store: Any, kept: Sequence[Any]) -> dict[tuple[Any, str], tuple[int, float]]:
    """Per (problem, cache) whose final the study in ``store`` still owes, how many of
    its configs the ``kept`` trials measured and their fastest median in seconds (what
    the plan prices a final by)."""
    if store is None:
        return {}
    from sweeper.finals import problem_of
    from sweeper.winners import Winners

    owed: dict[tuple[Any, str], tuple[int, float]] = {}
    for key in Winners.of(store).missing(kept):
        medians = [t.stats.median for t in kept
                   if t.ok and t.stats is not None and problem_of(t) == key]
        if medians:
            owed[(key.problem, key.cache)] = (len(medians), min(medians) / 1e3)
    return owed


def note_costs(space: Any, device: Any, clock: Any, summary: Any,
               check: GpuCheck | None = None) -> None:
    """Keep what this run measured of the costs an estimate assumes (start-up, report,
    compiles, proposals, on the interpreter its GPU ``check``'s compile) for the next
    estimate and time budget on this machine, and which Triton binaries
    its trials ran (they are in Triton's cache now).  A replay keeps what this machine
    spent around its trials (start-up, set-up, report) and nothing of the trials, which
    are the recorded GPU's: without it a replay's time budget kept the H200's 1 s for a
    report that took 9 s on a loaded 2-core machine, and a `--time 6s` run took 13.9 s."""
    from sweeper.finals import Round, measured_overhead_s
    from sweeper.plan import costs_key, launch_model, note_run
    from sweeper.sweep._compile_ahead import COMPILED_S

    restarted = RESTARTS in os.environ
    # a process the command restarted into (execve keeps the process's start time) has
    # the earlier processes' sweeps in its start-up: not what a start-up costs
    noted = functools.partial(
        note_run, costs_key(device), kernel=space.kernel, sampler=space.sampler.name,
        startup_s=None if restarted else clock.startup_s(),
        setup_s=None if restarted else clock.setup_s(),
        report_s=clock.steps().get("report"), report_maps=clock.report_maps,
        report_cells=clock.report_cells, report_fixed_s=clock.report_fixed_s,
        space=space.study)
    if device.replays:
        noted(compiles_s=[], ask_s=None)
        return

    own = summary.trials[summary.resumed:]
    timing = summary.timing
    measure = device.measure_spec(space.measure)
    model = launch_model(space, device)

    def compiled(t: Any) -> float:
        """The seconds trial ``t``'s first launch spent compiling (0: it loaded its binary,
        or nothing compiles for a GPU here, as on the interpreter, whose plan counts no
        compiles)."""
        cold = t.cold_s or 0.0
        return cold - t.stats.median / 1e3 if (
            device.measures_gpu and cold >= COMPILED_S and t.stats) else 0.0

    noted(compiles_s=[t.cold_s for t in own[1:] if (t.cold_s or 0.0) >= COMPILED_S],
          first_compile_s=own[0].cold_s if own and device.measures_gpu and
          (own[0].cold_s or 0.0) >= COMPILED_S else None,
          pool_compiles_s=summary.compiles_s,
          ask_s=timing.per_trial_ms("ask") / 1e3 if timing is not None and own else None,
          # a trial's own seconds, its compile and its power schedule's cool-down or
          # load aside: the plan counts those apart; not the run's first, which starts
          # the worker's launcher (on the H200 0.3 s from a warm cache), so that a run
          # of two trials does not price every trial of the next plan as its first
          trials_s=[t.wall_s - (sum(t.samples_ms) * t.batch +
                                (measure.warmup_turns(t.stats.median / 1e3) + 1) *
                                t.stats.median) / 1e3 - compiled(t)
                    - t.seconds.get("load", 0.0) - t.seconds.get("cool-down", 0.0)
                    for t in own[1:] if t.ok and t.stats],
          launch_scales=[t.stats.median / 1e3 / model(t.config) for t in own
                         if t.ok and t.stats and t.config and model(t.config) > 0],
          prior_trials=device.plan_costs.scale_prior_trials,
          gpu_check_s=check.first_s if check is not None else None,
          finals_overhead_s=measured_overhead_s(
              summary.finals, summary.finals_s, Round.on(device.measure_spec)),
          # what a power-bound trial that compiled nothing spent loading the GPU under
          # the sustained schedule (the plan prices a compile's own load with it)
          loads_s=[t.seconds.get("load", 0.0) for t in own[1:] if t.duty and
                   "cool-down" not in t.seconds and (t.cold_s or 0.0) < COMPILED_S]
          if space.measure.duty == "auto" else ())
    if device.measures_gpu and space.kernel != "cuda":   # NVRTC's cache answers for itself
        from sweeper.kernels._binaries import note_built
        from sweeper.trial import TrialStatus

        note_built(costs_key(device), space.kernel,
                   [t.config for t in own if t.config is not None and
                    t.status != TrialStatus.COMPILE_ERROR])
