"""What ``sweeper run`` says when a sweep ends: per problem (dtype, footprint, cache) the
sweep's best and the winner, each line naming its problem; and, when no config produced
a number at all, why, so that the command can fail instead of drawing empty maps.

Pure functions over the study's records; the CLI prints what they return.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from sweeper.core._model import PROBLEM_AXES, grid_labels, launch_text, merged
from sweeper.core._units import counted
from sweeper.errors import one_line
from sweeper.escape import cut
from sweeper.finals import problem_of
from sweeper.kernels import Headline
from sweeper.kernels._base import ALLOCATING, PRUNED, WRAPS
from sweeper.store import ProblemKey, TrialRecord
from sweeper.trial import FAILURES, TrialStatus
from sweeper.winners import Pick, Winners

#: A failure's reason is shown up to this many characters (its lines joined into one).
REASON_CHARS = 120
#: What a replay's ``missing`` trials are, wherever they are counted: configs never
#: measured because the table holds no row for them, which is no failure of the kernel's
#: (a count of them as ``failed`` reads as if every config crashed).
NOT_IN_TABLE = "the recorded table does not hold"
#: The statuses a run counts as failed: every failure but a replay's ``missing``.
FAILED = FAILURES - {TrialStatus.MISSING}
#: Why a sweep stops when the sampler has nothing new left to propose, and no config is
#: left to measure again (:func:`tried_all_but`).
COMPLETE = "complete: every valid config tried"
#: The label of a trial to be measured again (``retry``: its worker process was killed
#: from outside) where trials are counted or listed by status: not ``crashed``, which
#: would read as the kernel's fault (report.json's ``counts`` and ``failures``).
RETRY = "retry"


def killed_from_outside(configs: int) -> str:
    """Why ``configs`` configs are to be measured again."""
    return ("its worker process was" if configs == 1 else
            "their worker processes were") + " killed from outside"


def again_text(configs: int) -> str:
    """``2 to measure again (their worker processes were killed from outside)``: trials
    whose config the next run measures again, as every count of trials by what became of
    them says them (no failure of the kernel's)."""
    return f"{configs} to measure again ({killed_from_outside(configs)})"


def tried_all_but(again: int) -> str:
    """Why a sweep stops when the sampler has nothing new left to propose but ``again``
    configs are left to measure again: not :data:`COMPLETE`, which a run says only when
    nothing is left (``sweeper run`` exits 75 then: run the same command)."""
    return (f"every valid config tried, {again} of them to measure again "
            f"({killed_from_outside(again)})")


def is_failure(t: TrialRecord) -> bool:
    """Whether trial ``t`` counts as failed (:data:`FAILED`): not one whose config is to
    be measured again (``retry``), whose next trial is the config's."""
    return t.status in FAILED and not t.retry


def outcome_label(t: TrialRecord) -> str:
    """``t``'s status as trials are counted and listed by it: :data:`RETRY` for one to be
    measured again, else its status's value."""
    return RETRY if t.retry else t.status.value


#: Why a config is skipped, by what its reason says and whether it resolved, as a count of
#: them names it; the space's constraints and values are the cause of any other.
CONSTRAINTS = "by constraints"
PRUNE = "by prune_configs_by"
KERNEL = "by the kernel"
SHRUNK = "as problems the device shrinks onto one measured"


def skip_cause(reason: str, resolved: bool = False) -> str:
    """What skipped a config whose (``invalid``) trial says ``reason``: the
    ``prune_configs_by`` of an autotuned kernel, the kernel refusing to launch it, its
    problem shrunk onto another's that is measured once, else the space's constraints.
    ``resolved``: the config resolved (its trial keeps it), so it passed the space's
    constraints and values and was turned down after, which only the kernel does
    (:meth:`~sweeper.kernels.Kernel.cannot_launch`, in whatever words its ``refusal``
    gives; a problem it cannot allocate) or, saying so, its ``prune_configs_by``."""
    if merged(reason):
        return SHRUNK
    if reason.startswith(PRUNED):
        return PRUNE
    if resolved or reason.startswith(ALLOCATING) or WRAPS in reason:
        return KERNEL
    return CONSTRAINTS


def skipped_text(causes: Iterable[str]) -> str:
    """``6 skipped by constraints`` where the constraints skipped them all (or none was
    skipped), else by cause (each a :func:`skip_cause`), most first: ``6 skipped: 4 by
    constraints, 2 by prune_configs_by`` (``2 skipped by prune_configs_by`` where that is
    the one)."""
    counts = Counter(causes).most_common()
    total = sum(n for _, n in counts)
    if not counts or [c for c, _ in counts] == [CONSTRAINTS]:
        return f"{total} skipped {CONSTRAINTS}"
    if len(counts) == 1:
        return f"{total} skipped {counts[0][0]}"
    return f"{total} skipped: {', '.join(f'{n} {cause}' for cause, n in counts)}"


def skipped_line(trials: Iterable[TrialRecord]) -> str:
    """:func:`skipped_text` of ``trials``' skipped (``invalid``) ones."""
    return skipped_text(skip_cause(t.reason or "", t.config is not None) for t in trials
                        if t.status is TrialStatus.INVALID)


def absent_text(n: int) -> str:
    """``204 configs the recorded table does not hold``: how many configs a replay could
    not serve, as every count of them says it."""
    return f"{counted(n, 'config')} {NOT_IN_TABLE}"


def counts_text(ok: int, abandoned: int, failed: int, absent: int, again: int = 0,
                remeasured: int = 0) -> str:
    """``190 measured, 4 abandoned early, 6 failed``: trials by what became of them, as the
    run's ``done:`` line and the report count them alike (``measured``: a number kept; an
    abandoned trial was measured until clearly slower, not failed; a replay's configs its
    table lacks, where there are any, apart from the failed; those to be measured again,
    where there are any, apart from the failed too: :func:`again_text`; the run's own
    count ends with the configs it measured again, ``remeasured``, where there are any:
    ``(2 measured again: their worker processes were killed from outside)``)."""
    return (f"{ok} measured, {f'{abandoned} abandoned early, ' if abandoned else ''}"
            f"{failed} failed{f', {again_text(again)}' if again else ''}"
            f"{f', {absent_text(absent)}' if absent else ''}" + (
                f" ({remeasured} measured again: {killed_from_outside(remeasured)})"
                if remeasured else ""))


def problem_text(problem: ProblemKey) -> str:
    """``float32 1GiB cold``, ``bfloat16 M=4096 N=2048 K=8192 cold``."""
    return f"{problem.dtype} {problem.problem.describe()} {problem.cache}"


def trial_text(t: TrialRecord, headline: Headline, median: float | None = None) -> str:
    """Trial ``t``'s config, median (``median``: from other samples, such as the
    interleaved final's) and the kernel's headline rate at that median."""
    cfg = t.config
    assert cfg is not None                          # a measured trial's config
    shown = {axis: label if label == str(value) else f"{label} (={value})" for axis, label, value
             in (("grid", t.choice["grid"], cfg.grid),
                 *((k, v, getattr(cfg, k)) for k, v in grid_labels(t.choice, cfg).items()))}
    grid_text = shown.pop("grid")
    rate = t.rate(headline, median)
    median = t.stats.median if median is None and t.stats else median
    return (f"#{t.number} {launch_text(grid_text, cfg.block, cfg.meta, shown)}: median "
            f"{median:.4g} ms, {rate:.4g} {headline.unit}")


def outcome_lines(trials: Sequence[TrialRecord], winners: Winners, headline: Headline
                  ) -> list[str]:
    """Per problem, in (dtype, footprint, cache) order: the sweep's best (never a
    suspicious result), then the winner an interleaved final chose, if one did; a problem
    whose every launched trial failed gets a line saying how.  Trials measured on an
    earlier source of the kernel than the study's now are left out, as ``winners`` leaves
    them out (:class:`~sweeper.winners.Sources`)."""
    trials = winners.sources.measured_now(trials)
    best = Winners().picks(trials)               # no finals: the sweep's best per problem
    chosen = winners.picks(trials)
    launched: dict[ProblemKey, list[TrialRecord]] = {}
    for t in trials:
        if t.config is not None and t.status is not TrialStatus.INVALID:
            launched.setdefault(problem_of(t), []).append(t)
    lines = []
    for problem in sorted(launched.keys() | best.keys()):
        name = problem_text(problem)
        if problem not in best:
            lines.append(f"best in the sweep, {name}: nothing measured: "
                         f"{failure_counts(launched[problem])}")
            continue
        lines.append(f"best in the sweep, {name}: {trial_text(best[problem].trial, headline)}")
        pick = chosen[problem]
        if pick.final is not None:
            lines.append(_winner_line(name, pick, headline))
    return lines


def _winner_line(name: str, pick: Pick, headline: Headline) -> str:
    final = pick.final
    assert final is not None
    agree = pick.agreement
    won = f"winner, {name}, after {counted(final.rounds, 'interleaved round')} over " \
        f"{counted(len(final.finalists), 'finalist')}" + (
            " (cut short by the time budget: the same command measures the final again)"
            if final.cut_short else "")
    text = trial_text(pick.trial, headline, pick.median_ms)
    if agree is not None:
        return (f"{won} on each of {len(agree.gpus)} GPUs: {text} on GPU "
                f"{agree.gpus[0].index}; {agree.headline()}")
    ratio = final.baseline_ratio()
    base = final.compared_baseline()
    against = (f"; {final.baseline_ratio_text()}× {base.name} ({base.stats.median:.4g}"
               " ms in the same rounds)" if base and ratio is not None else "")
    if final.confirmed:
        against = (f"; after cool-downs, in {final.confirmed.rounds} rounds of its own"
                   f"{' beside the baseline' if base else ''}: {final.confirmed.stats.median:.4g}"
                   f" ms{against}")
    return f"{won}: {text}; {counted(len(final.tied) - 1, 'other')} tied within noise{against}"


def nothing_measured(trials: Sequence[TrialRecord], stopped_by: str) -> str | None:
    """Why no config produced a number, or ``None`` when one did."""
    if any(t.ok for t in trials):
        return None
    failed = [t for t in trials if t.status is not TrialStatus.INVALID]
    ruled_out = len(trials) - len(failed)
    why = [failure_counts(failed)] if failed else []
    if not failed and (not ruled_out or stopped_by != COMPLETE):
        # no config ran: what stopped the sweep comes first (a time budget spent before
        # the first trial), not the configs the constraints removed
        why.append(f"no trial finished (stopped: {stopped_by})")
    if ruled_out:
        skipped = [t.reason or "" for t in trials if t.status is TrialStatus.INVALID]
        reasons = Counter(one_line(r) if r else "no reason given" for r in skipped)
        reason, n = reasons.most_common(1)[0]
        often = "all" if n == ruled_out else f"{n} of them"
        why.append(f"{skipped_line(trials)} ({often}: {reason})")
    return "no config was measured: " + "; ".join(why)


def failure_counts(trials: Sequence[TrialRecord]) -> str:
    """``12 wrong_answer (first: #3 grid=sms block=32 BLOCK=256: 3 of 1024 wrong ...),
    2 crashed (first: ...)``, most common first; a replay's ``missing`` ones as
    :func:`absent_text` (``204 configs the recorded table does not hold (first: ...)``),
    and those to be measured again as ``2 to measure again (first: ...)``, never among
    the ``crashed``."""
    counts = Counter(outcome_label(t) for t in trials)
    first: dict[str, TrialRecord] = {}
    for t in sorted(trials, key=lambda t: t.number):
        first.setdefault(outcome_label(t), t)
    return ", ".join(f"{_counted_outcome(label, n)} (first: {_failure_text(first[label])})"
                     for label, n in counts.most_common())


def labelled_count(label: str, n: int) -> str:
    """``12 wrong_answer``: ``n`` trials of one :func:`outcome_label`, those to be
    measured again as ``2 to measure again``."""
    return f"{n} to measure again" if label == RETRY else f"{n} {label}"


def _counted_outcome(label: str, n: int) -> str:
    """:func:`labelled_count`, a replay's ``missing`` as :func:`absent_text`."""
    return absent_text(n) if label == TrialStatus.MISSING.value else labelled_count(label, n)


def failed_line(trials: Sequence[TrialRecord], among: Sequence[TrialRecord] | None = None,
                head: str = "failed") -> str | None:
    """``failed: 6 wrong_answer (first: #3 ...); every one with BLOCK=512``: a run's failed
    trials (``trials``: its own, measured or failed) by status, each with its first config
    and reason, and what sets the failed configs apart from those that did not fail
    (:func:`set_apart`; those of ``among`` where given, else of ``trials``): what every
    failed config shares, else, where they failed in more than one way, what each way's
    configs share (``every crashed one with BLOCK=1024``), so a config that crashes and
    another that computes wrong do not hide each other's cause; ``None`` when none failed.
    ``head`` names them (a resume's ``failed in earlier runs``).  A replay's configs its
    table does not hold are no failure: :func:`absent_line` says them; nor are the trials
    to be measured again (:func:`again_line`)."""
    failed = [t for t in trials if is_failure(t)]
    if not failed:
        return None
    fine = [t.choice for t in (trials if among is None else among)
            if t.status in (TrialStatus.OK, TrialStatus.ABANDONED)]
    axes = [a for a in dict.fromkeys(a for t in failed for a in t.choice)
            if a not in PROBLEM_AXES]
    telling = set_apart([t.choice for t in failed], fine, axes)
    if telling:
        common = f"; every one with {' '.join(telling)}"
    else:
        ways: dict[TrialStatus, list[TrialRecord]] = {}
        for t in failed:
            ways.setdefault(t.status, []).append(t)
        each = [f"every {status.value} one with {' '.join(told)}"
                for status, alike in ways.items() if len(alike) > 1 and len(ways) > 1
                for told in [set_apart([t.choice for t in alike], fine, axes)] if told]
        common = "".join(f"; {x}" for x in each)
    return f"{head}: {failure_counts(failed)}{common}"


def set_apart(failed: Sequence[Mapping[str, str]], fine: Sequence[Mapping[str, str]],
              axes: Iterable[str]) -> list[str]:
    """What sets the ``failed`` configs (their labels by axis) apart from the ``fine``
    ones (those measured), per axis of ``axes`` in order: ``BLOCK=1024`` where every
    failed config has that label and not every fine one has it; ``BLOCK=1024 or 2048``
    where the failed configs have several labels and no fine config has any of them (a
    kernel that fails above some size).  Empty where nothing does, or where nothing was
    measured to tell them apart (every label then is "shared", the constant axes too).
    The terminal's ``failed:`` line and report.md's "in common" both say this."""
    if not failed or not fine:
        return []
    out = []
    for axis in axes:
        if any(axis not in c for c in failed):
            continue
        distinct = sorted({c[axis] for c in failed}, key=_label_order)
        ran = {c.get(axis) for c in fine}
        if len(distinct) == 1 and ran != {distinct[0]}:
            out.append(f"{axis}={distinct[0]}")
        elif len(distinct) > 1 and ran.isdisjoint(distinct):
            out.append(f"{axis}={' or '.join(distinct)}")
    return out


def _label_order(label: str) -> tuple[int, int, str]:
    """Numbers by value (``256`` before ``1024``), before other labels by text."""
    return (0, int(label), "") if label.isdigit() else (1, 0, label)


def absent_line(trials: Sequence[TrialRecord]) -> str | None:
    """``not measured: 204 configs the recorded table does not hold (first: #6 ...: not in
    the replay table t.csv); ...``: a replay's configs its table holds no row for, apart
    from the failed ones, and what measures them; ``None`` when there are none."""
    absent = [t for t in trials if t.status is TrialStatus.MISSING]
    if not absent:
        return None
    return (f"not measured: {failure_counts(absent)}; replay a table recorded with this "
            "space, or measure them on a GPU")


def again_line(trials: Sequence[TrialRecord]) -> str | None:
    """``to measure again: 2 configs, their worker processes were killed from outside
    (first: #3 grid=sms BLOCK=1024); the next run of the study measures them``: what
    ``sweeper report`` says of the trials to be measured again (``retry``), which no
    ``failed:`` line counts; ``None`` when there are none."""
    again = sorted((t for t in trials if t.retry), key=lambda t: t.number)
    if not again:
        return None
    first = again[0]
    config = " ".join(f"{k}={v}" for k, v in first.choice.items() if k not in PROBLEM_AXES)
    n = len(again)
    return (f"to measure again: {counted(n, 'config')}, {killed_from_outside(n)} (first: "
            f"#{first.number} {config}); the next run of the study measures "
            f"{'it' if n == 1 else 'them'}")


def reason_line(t: TrialRecord) -> str:
    """``t``'s reason as the terminal shows it: its lines joined into one
    (:func:`~sweeper.errors.one_line`), at most ``REASON_CHARS``, a cut one ending in
    ``…`` after its last whole word where one ends in the limit's last quarter, else
    mid-word (report.md keeps it whole)."""
    reason = one_line(t.reason or "") or "no reason recorded"
    if len(reason) <= REASON_CHARS:
        return reason
    space = reason.rfind(" ", REASON_CHARS * 3 // 4, REASON_CHARS)
    return cut(reason, REASON_CHARS, "…") if space < 0 else reason[:space] + " …"


def _failure_text(t: TrialRecord) -> str:
    """``#3 grid=sms block=32 BLOCK=256: <the reason, on one line>``; the problem is left
    out (the lines around it name it)."""
    config = " ".join(f"{k}={v}" for k, v in t.choice.items() if k not in PROBLEM_AXES)
    return f"#{t.number} {config}: {reason_line(t)}"


__all__ = ["FAILED", "again_line", "failed_line", "failure_counts", "labelled_count",
           "nothing_measured", "outcome_label", "outcome_lines", "problem_text",
           "reason_line", "set_apart", "trial_text"]
