"""What a run says to the user: the header (what is measured, how, against which
limits), a resume's note, the progress bar, the summary once the sweep ends (counts,
failures, each problem's outcome, what was left for the next run) and the ``time:``
line; the lines a run prints, apart from the steps that produce what they say."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

from sweeper.core._spelling import given
from sweeper.core._units import counted
from sweeper.engine._options import RunOptions
from sweeper.engine._restart import RESTARTS


def printer(quiet: bool) -> Callable[[str], None]:
    """Prints a run's lines, unless told to be quiet (the header and bar: ``--quiet``;
    the summary too: the API's ``quiet=True``)."""
    return (lambda text: None) if quiet else functools.partial(print, flush=True)


def progress_reporter(quiet: bool, headline: Any) -> Any:
    """The sweep's progress bar (rates in the kernel's ``headline`` unit), or none
    where told to be quiet."""
    from sweeper.sweep import SilentReporter

    if quiet:
        return SilentReporter()
    from sweeper.progress import ProgressReporter

    return ProgressReporter(headline=headline)


def header(say: Callable[[str], None], space: Any, device: Any, facts: Any, measure: Any,
           limits: Any) -> None:
    """The lines that say what is about to be measured, how, and against which limits:
    this GPU's ceilings (``limits``), or why there are none (a string)."""
    from sweeper.engine._clock import recompiled_note, recompiled_sources
    from sweeper.space import format_size

    say(f"device: {facts.name} ({facts.sms} SMs, {format_size(facts.l2_bytes)} L2)")
    if device.note:
        say(f"note: {device.note}")
    recompiled = recompiled_note(recompiled_sources())
    if recompiled:
        say(f"note: {recompiled}")
    for line in shrunk_lines(space, facts):
        say(line)
    how = "replayed from the table" if device.replays else (
        f"first run timed apart, verified, {measure.describe()}; "
        f"{cache_text(space.axis('cache').labels, device)}")
    say(f"space: {counted(space.size, 'config')}; sampler {space.sampler.name} "
        f"(seed {space.sampler.seed}); each trial: {how}")
    say(f"ceilings: {limits}" if isinstance(limits, str) else
        f"ceilings: measured {limits.measured} (sweeper calibrate); DRAM copy "
        f"{limits.dram_bandwidth():.0f} GB/s")
    bounds = device.bounds()
    say(f"bounds: {bounds.summary(space.axis('dtype').labels)}" +
        ("; a result beyond them fails its trial as impossible" if bounds.all() else ""))


def shrunk_lines(space: Any, facts: Any) -> list[str]:
    """``shrunk to fit 16KiB: cols 1000 → 31, rows 4096 → 128; ...``: each problem the
    device's cap on footprints measures smaller, and those that merged; then, where the
    constraints and computed values rule out another number of configs at the sizes
    measured than at the sizes the space asks for (problems merged by the shrink not
    counted), ``constraints and values read the shrunk sizes: they rule out 4 configs (2
    at the sizes asked)``: the sizes measured are those the kernel launches at, so they
    are the ones a constraint that protects a launch must hold at.  None where no problem
    shrinks."""
    from sweeper.core._model import merged
    from sweeper.space import Invalid, format_size, shrunk_problems
    from sweeper.study import resolved

    shrunk = shrunk_problems(space, facts.env(), facts.max_footprint)
    if not shrunk:
        return []
    dtypes = len({s.dtype for s in shrunk}) > 1
    lines = [f"shrunk to fit {format_size(facts.max_footprint)}: " +
             "; ".join(s.describe(dtypes) for s in shrunk)]

    def ruled(cap: int | None) -> int:
        return sum(isinstance(out, Invalid) and not merged(str(out))
                   for _, out in resolved(space, facts.env(), cap))

    measured, asked = ruled(facts.max_footprint), ruled(None)
    if measured != asked:
        lines.append(f"constraints and values read the shrunk sizes: they rule out "
                     f"{counted(measured, 'config')} ({asked} at the sizes asked)")
    return lines


def cache_text(caches: Sequence[str], device: Any) -> str:
    """``cache cold (L2 flushed before each sample)``, where the device really flushes."""
    text = f"cache {' and '.join(caches)}"
    if "cold" not in caches:
        return text
    if device.flushes_l2:
        return f"{text} (L2 flushed before each sample)"
    return f"{text} (no L2 flush on this device: cold is timed as warm)"


def unchanged_since_alike(before: Any, after: Any, space: Any) -> str | None:
    """The note a resume says up front where the study's last run stopped for its first
    configs all failing alike (the kernel at fault) and nothing has changed since: the
    study's fingerprint (the kernel's source, the space file, the GPU and software) as
    ``before`` (its meta before this run opened it) and ``after`` (since) record it, and
    the axes' labels this run's ``space`` sweeps (``-p`` included).  The run goes on
    (the configs left may not fail), but likely stops the same way; None otherwise."""
    from sweeper.study import axes_of
    from sweeper.sweep._budget import stopped_alike

    failed = None if before is None else stopped_alike(
        str(before.last_run.get("stopped_by", "")))
    if failed is None or before.fingerprint != after.fingerprint or \
            before.axes != axes_of(space):
        return None
    return (f"note: nothing changed since the last run stopped at its first "
            f"{counted(failed, 'config')} failing alike (the same kernel source, space and "
            "settings): the configs left are measured and will likely fail the same way; "
            f"to measure a fixed kernel, rerun with {given('force')}")


def say_summary(say: Callable[[str], None], summary: Any, space: Any, kernel: Any, store: Any,
                limits: Any, time_s: float | None, before: Sequence[Any] = ()) -> None:
    """What this run did (the counts of its trials, the failures, how busy it kept its
    GPUs), the failures the study kept from earlier runs (``before``), each problem's
    outcome, the finals its time budget ``time_s`` (None: none) left, and what it left for
    the next run."""
    from sweeper.outcome import (
        absent_line,
        counts_text,
        failed_line,
        is_failure,
        outcome_lines,
        skipped_line,
    )
    from sweeper.trial import TrialStatus
    from sweeper.winners import Winners

    own = summary.trials[summary.resumed:]
    # a replay's configs its table lacks were never measured, and did not fail; nor did
    # those whose worker was killed from outside, which the next run measures again unless
    # this one did (their next trial is the config's, said apart)
    absent = sum(1 for t in own if t.status is TrialStatus.MISSING)
    measured = {t.key() for t in own if not t.retry}
    again = sum(1 for t in own if t.retry and t.key() not in measured)
    killed = {t.key() for t in summary.trials if t.retry}
    remeasured = sum(1 for t in own if not t.retry and t.key() in killed)
    failed = sum(1 for t in own if is_failure(t))
    ok = sum(1 for t in own if t.status is TrialStatus.OK)
    abandoned = sum(1 for t in own if t.status is TrialStatus.ABANDONED)
    say(f"done: {counts_text(ok, abandoned, failed, absent, again, remeasured)}, "
        f"{skipped_line(own)}, "
        f"{summary.repeated} repeated proposals answered from the store, in "
        f"{summary.wall_s:.1f} s; stopped: {summary.stopped_by}")
    earlier = failed_line(before, among=[*summary.trials[:summary.resumed], *own],
                          head="failed in earlier runs") if before else None
    for line in (failed_line(own), earlier, absent_line(own)):
        if line is not None:
            say(line)
    if summary.busy is not None and summary.measured:
        say(summary.busy.line())
    for dropped in summary.dropped:
        say(dropped.line())
    restarts = int(os.environ.get(RESTARTS, "0"))
    if restarts:
        say(f"(counts of this process, the last of {restarts + 1}: "
            f"{counted(restarts, 'trial')} hung and the sweep went on in a fresh process; the "
            "report counts everything)")
    if abandoned:
        say(f"early abandonment: {abandoned} trials stopped early, saving about "
              f"{summary.saved_ms:.4g} ms of GPU time")
    if space.budget.target is not None and isinstance(limits, str):
        say(f"note: budget.target needs measured ceilings ({limits}); it was not applied")
    for line in outcome_lines(summary.trials, Winners.of(store), kernel.headline):
        say(line)
    for lost in summary.finals_lost:
        say(f"finals without {lost}")
    if summary.finals_deferred:
        say(_deferred_line(summary, time_s))
    left = _left_line(summary)
    if left:
        say(left)
    if summary.duty:
        say(f"power: {summary.duty}")


def _deferred_line(summary: Any, budget_s: float | None) -> str:
    """What the run says of the finals its time budget did not cover: what their first
    rounds need, and either that the same command measures them (its budget leaves them
    that much once no trial is measured before them: a resume keeps their time first), or
    the longer budget that does (``--time 4s``, from the API ``time='4s'``), where the same
    command would leave them again."""
    what = (f"finals of {counted(len(summary.finals_deferred), 'problem')} left for the next "
            "run: the time budget did not cover them")
    needed, room = summary.finals_needed_s, summary.finals_room_s
    if not summary.measured:        # this run was one that measured no trial first
        room = min(room, summary.finals_left_s)
    if budget_s is None:
        return f"{what} (run the same command to measure them)"
    rounds = "the first round of its final needs" if len(summary.finals_deferred) == 1 \
        else "the first rounds of their finals need"
    if needed <= room:
        return (f"{what} after this run's trials ({rounds} {needed:.1f} s; this time budget "
                f"leaves the finals {room:.1f} s after the start-up and the report's share "
                "when no trial is measured before them): run the same command to measure "
                "them")
    longer = given("time", f"{math.ceil(budget_s + needed - room + 0.5):d}s")
    return (f"{what} ({rounds} {needed:.1f} s, {needed - room:.1f} s more than this time "
            f"budget leaves the finals after the start-up and the report's share): {longer} "
            "or more measures them")


def _left_line(summary: Any) -> str | None:
    """What the run left for the next run, which the same command measures: after a
    Ctrl-C or SIGTERM the configs not measured yet, those to be measured again among them
    said apart (``retry``: their worker process was killed from outside), and the finals
    not run (``12 configs (1 of them to measure again: its worker process was killed from
    outside) and the finals of 1 problem left for the next run: Ctrl-C stopped the sweep
    (run the same command to measure them)``); after any other stop (a budget), the
    configs to be measured again (where the trial budget was spent before them, the
    budget that measures them: the same command would not), and the finals this run ran
    without them, which run again once they measure; ``None`` where it left nothing of
    these."""
    from sweeper.outcome import killed_from_outside
    from sweeper.sweep._budget import INTERRUPTED

    configs, exact = summary.left
    if not configs and not summary.finals_stopped:
        if not summary.again:
            return None
        it = "it" if summary.again == 1 else "them"
        how = f"run the same command to measure {it}" if not summary.trials_for_again else \
            f"the trial budget is spent: {given('trials', summary.trials_for_again)} " \
            f"measures {it}"
        finals = summary.finals_before_again
        ran = "" if not finals else (
            f"; this run's finals of {counted(finals, 'problem')} ran without {it}, and run "
            f"again once the next run measures {it} ok")
        return (f"{counted(summary.again, 'config')} left for the next run to measure again: "
                f"{killed_from_outside(summary.again)} ({how}{ran})")
    what = [f"{'' if exact else 'up to '}{counted(configs, 'config')}"] if configs else []
    again = min(summary.again, configs)
    if again:
        of = "" if again == configs else f"{again} of them "
        what[0] += f" ({of}to measure again: {killed_from_outside(again)})"
    if summary.finals_stopped:
        what.append(f"{'the ' if configs else ''}finals of "
                    f"{counted(summary.finals_stopped, 'problem')}")
    who = "Ctrl-C" if summary.stopped_by == INTERRUPTED else "a SIGTERM"
    return (f"{' and '.join(what)} left for the next run: {who} stopped the "
            f"{'sweep' if configs else 'finals'} (run the same command to measure them)")


def say_time(options: RunOptions, clock: Any, summary: Any, timing: list[str]) -> None:
    """The ``time:`` line (a command run from the shell, a call from Python that prints,
    or ``--timing``: the actual beside the estimate the run printed) and, with
    ``--timing``, the sweep's breakdown."""
    asked = options.timing
    if asked or options.clock_from_start or not options.silent:
        print(clock.line(summary))
    for line in timing if asked else ():
        print(f"  {line}")
