"""``sweeper compare A B``: for each config measured in both, SAME / FASTER / SLOWER /
UNCLEAR for B against A, with the interval of the ratio of medians (as nvbench-compare).

A and B are studies, or single trials written ``STUDY@NUMBER``.  A difference within the
practical threshold (default 1 %, the finals' own) is SAME even where the CIs are apart:
see :func:`sweeper.measure.compare_samples`.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sweeper.core._units import counted
from sweeper.errors import SweeperError
from sweeper.measure import PRACTICAL, Comparison, compare_samples
from sweeper.outcome import problem_text
from sweeper.store import StudyStore, TrialRecord
from sweeper.winners import Sources, unnamed_clause


@dataclass(frozen=True)
class Row:
    """One line of ``sweeper compare``: the config (or the two trial numbers), each side's
    median in ms, and B's comparison against A."""

    config: str
    a_ms: float
    b_ms: float
    comparison: Comparison


def _trials(store: StudyStore, number: int | None) -> dict[tuple[Any, ...], TrialRecord]:
    """A study's successful trials by config and the problem they were measured on (the
    interpreter shrinks a problem the space names: the same labels, other sizes), those
    measured on the kernel source it has now (:class:`~sweeper.winners.Sources`), or the
    one trial ``number``."""
    records = store.records()[0]
    ok = [t for t in records if t.ok and len(t.samples_ms) >= 2]
    if number is None:      # a study forced past a kernel edit: its source now's trials
        return {(*_config_key(t), t.problem): t
                for t in Sources.of(store.study_meta()).measured_now(ok)}
    match = [t for t in ok if t.number == number]
    if not match:
        ended = [t.status.value for t in records if t.number == number]
        why = f" (it ended {ended[0]})" if ended else ""
        raise SweeperError(f"{store.root}: no successful trial number {number}{why}; "
                           f"successful: {_numbers(sorted(t.number for t in ok))}")
    return {("trial",): match[0]}


def _config_key(t: TrialRecord) -> tuple[str, ...]:
    """The trial's ``axis=label`` pairs less those of its problem (dtype, footprint, cache,
    dimensions), which :attr:`TrialRecord.problem` holds as measured: ``16KiB`` and
    ``16384`` are one footprint."""
    assert t.problem is not None                    # a measured trial's
    problem_axes = {"dtype", "footprint", "cache", *(name for name, _ in t.problem.dims)}
    return tuple(pair for pair in t.key() if pair.partition("=")[0] not in problem_axes)


def _numbers(numbers: list[int]) -> str:
    """``0-4, 7, 9-11``: trial numbers as runs, the first 10 runs shown."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    shown = [f"{a}-{b}" if b > a else str(a) for a, b in runs[:10]]
    return ", ".join(shown) + (f" and {len(runs) - 10} more runs" if len(runs) > 10 else "") \
        if shown else "none"


def _problems(trials: dict[tuple[Any, ...], TrialRecord]) -> str:
    """``float32 16KiB cold (12 configs), ...``: the problems a study's successful trials
    measured (the first four), so a reader sees why two studies have none in common."""
    counts = Counter(problem_text(t.problem) for t in trials.values() if t.problem)
    if not counts:
        return "no config successfully"
    shown = [f"{p} ({counted(n, 'config')})" for p, n in list(counts.items())[:4]]
    more = f" and {counted(len(counts) - 4, 'other problem')}" if len(counts) > 4 else ""
    return ", ".join(shown) + more


def _device(store: StudyStore) -> str:
    fingerprint = store.meta().get("fingerprint", {})
    return str(fingerprint.get("gpu") or fingerprint.get("device") or "an unknown device")


def _kernel(store: StudyStore) -> str:
    """The kernel a study ran, with its source's hash where it recorded one: ``copy``
    edited between two studies is another kernel as much as ``scale`` is."""
    meta = store.study_meta()
    source = meta.kernel_source_hash
    return f"kernel {meta.tuned_name}" + (f" (source {source})" if source else "")


def _earlier(store: StudyStore) -> tuple[int, int]:
    """How many of a study's successful trials are not counted as measured on its
    kernel's source now, and how many of those name no source, where which source ran
    them is unknown (:meth:`~sweeper.winners.Sources.unknown`: A, B, then A again)."""
    sources = Sources.of(store.study_meta())
    ok = [t for t in store.records()[0] if t.ok]
    return sources.earlier(ok), sources.unknown(ok)


def _source(store: StudyStore, trial: TrialRecord) -> str | None:
    """The hash of the kernel source ``trial`` was measured on, where known
    (:class:`~sweeper.winners.Sources`): a study resumed with ``--force`` after its
    kernel was edited holds trials of two."""
    return Sources.of(store.study_meta()).source_of(trial)


def _what(store: StudyStore, trial: TrialRecord) -> str:
    kernel = store.study_meta().tuned_name
    return f"{kernel} {problem_text(trial.problem)}" if trial.problem else kernel


def compare(a: StudyStore, b: StudyStore, a_number: int | None = None,
            b_number: int | None = None, max_noise: float = 0.05,
            threshold: float = PRACTICAL) -> tuple[list[Row], list[str]]:
    """One row per successful config that both studies measured (or one for the two trials
    ``a_number`` and ``b_number``): B against A from the raw samples, by
    :func:`~sweeper.measure.compare_samples` under ``max_noise`` and ``threshold``.  No
    config in common is a SweeperError, not an empty table.

    With the rows, the notes a reader needs before the ratios: how many configs only one
    study measured (left out, so the counts under the table are not read as the whole
    studies'), where the two studies were
    measured on different devices (each ratio then compares the devices as much as the
    configs, and an interpreter's times say nothing of a GPU), for two studies, where
    they ran different kernels, or one kernel's source edited between them (the ratios
    then compare the kernels: a copy against a scale with no word of it reads as if each
    config were that much slower), and for two trials, where
    they differ in kernel or problem (a copy of 1 GiB against one of 16 KiB, or a copy
    against a matmul: a verdict with no word of it read as if one config were that much
    slower) or were measured on other sources of the kernel (two trials of one config
    in a study resumed with ``--force`` after an edit).  A study resumed with ``--force``
    after its kernel's source was edited is compared by the trials of its source now,
    and a note says how many it left out.  The same study (or trial) on both sides is a
    SweeperError: its samples against themselves say nothing."""
    if os.path.realpath(a.root) == os.path.realpath(b.root) and a_number == b_number:
        what = "the study" if a_number is None else f"trial #{a_number} of"
        raise SweeperError(f"A and B are the same samples ({what} {a.root} on both sides): "
                           "compared with themselves they say nothing; compare two studies, "
                           "or two trials of one (STUDY@N STUDY@M)")
    ta, tb = _trials(a, a_number), _trials(b, b_number)
    keys = [k for k in ta if k in tb]
    if not keys:
        def measured(store: StudyStore, trials: dict[tuple[Any, ...], TrialRecord]) -> str:
            earlier, unknown = _earlier(store) if a_number is None else (0, 0)
            return _problems(trials) + (
                f" on its kernel's source now ({counted(earlier, 'trial')} on an earlier "
                f"source{unnamed_clause(earlier, unknown)} left out: a resume with --force "
                "after an edit measures them again)" if earlier else "")
        raise SweeperError(f"{a.root} and {b.root} have no successful config measured on "
                           f"the same problem in both: A measured {measured(a, ta)}; B "
                           f"measured {measured(b, tb)}")
    rows = []
    for k in keys:
        x, y = ta[k], tb[k]
        assert x.stats and y.stats                 # ok trials: the journal checks they have
        label = f"{' '.join(k[:-1])} ({problem_text(k[-1])})" if k != ("trial",) else \
            f"#{x.number} vs #{y.number}"
        rows.append(Row(label, x.stats.median, y.stats.median,
                        compare_samples(x.samples_ms, y.samples_ms, max_noise,
                                        threshold)))
    notes = []
    if (da := _device(a)) != (db := _device(b)):
        notes.append(f"note: A was measured on {da}, B on {db}: each ratio compares the "
                     "devices as well as the config")
    only = [(side, n) for side, n in (("A", len(ta) - len(keys)), ("B", len(tb) - len(keys)))
            if n]
    if only:
        notes.append("note: left out: " + " and ".join(
            f"{counted(n, 'config')} measured successfully only in {side}" for side, n in only)
            + " (a verdict needs the config's samples on the same problem in both)")
    earlier = [(side, n) for side, store in (("A", a), ("B", b))
               if a_number is None and (n := _earlier(store))[0]]
    if earlier:
        notes.append("note: left out: " + " and ".join(
            f"{counted(n, 'trial')} of {side} measured on an earlier source of its kernel"
            f"{unnamed_clause(n, unknown)}" for side, (n, unknown) in earlier)
            + " (a resume with --force after an edit measures its configs again; the source "
            "now's trials are compared)")
    alike = sum(bool(ta[k].samples_ms) and list(ta[k].samples_ms) == list(tb[k].samples_ms)
                for k in keys)
    if alike:
        # a copy of one study (copy-study, cp -r) or two replays of one table: the same
        # folder on both sides is refused, but a copy's path differs
        notes.append(f"note: {alike} of the {counted(len(keys), 'config')} compared "
                     f"{'has' if alike == 1 else 'have'} the very same samples in A and B (a "
                     "copy of one study, or two replays of one table?): their verdicts "
                     "compare those samples with themselves")
    if a_number is None and (ka := _kernel(a)) != (kb := _kernel(b)):
        notes.append(f"note: A ran {ka}, B {kb}: each ratio compares the kernels as "
                     "well as the config")
    if a_number is not None and b_number is not None:
        wa, wb = _what(a, ta[("trial",)]), _what(b, tb[("trial",)])
        if wa != wb:
            notes.append(f"note: A (#{a_number}) is {wa}, B (#{b_number}) is {wb}: the "
                         "ratio compares the problems as well as the configs")
        sa, sb = _source(a, ta[("trial",)]), _source(b, tb[("trial",)])
        if sa != sb and sa is not None and sb is not None:
            notes.append(f"note: A (#{a_number}) was measured on the kernel's source {sa}, "
                         f"B (#{b_number}) on {sb}: the ratio compares the sources as well "
                         "as the configs")
    return rows, notes


def ratio_text(x: float, width: int = 0) -> str:
    """A time ratio to four decimals, or in significant digits where four decimals would
    read 0.0000 or not fit ``width`` (a 1e-7 or a 2e5 ratio between studies of other
    problems or devices): as many as fit, so the columns stay in line."""
    fixed = f"{x:.4f}"
    if x == 0 or (abs(x) >= 1e-3 and len(fixed) <= (width or 9)):
        return f"{fixed:>{width}}"
    texts = [f"{x:.{digits}g}" for digits in (4, 3, 2, 1)]
    return f"{next((t for t in texts if len(t) <= width), texts[-1]):>{width}}"


def format_rows(rows: list[Row]) -> str:
    """A table of verdicts, then the counts and the rule they were given under."""
    lines = [f"{'verdict':8} {'B/A time':>9} {'95% interval':>17} {'A ms':>9} {'B ms':>9}  config"]
    for r in rows:
        c = r.comparison
        lines.append(f"{c.verdict.value:8} {ratio_text(c.ratio, 9)} [{ratio_text(c.lo, 7)}, "
                     f"{ratio_text(c.hi, 7)}] "
                     f"{r.a_ms:9.4g} {r.b_ms:9.4g}  {r.config}")
    counts = Counter(r.comparison.verdict.value for r in rows)
    lines.append(", ".join(f"{v} {n}" for v, n in sorted(counts.items())) +
                 f" of {counted(len(rows), 'config')} (FASTER/SLOWER: B against A)")
    threshold = rows[0].comparison.threshold if rows else PRACTICAL
    practical = sum(r.comparison.practically_same for r in rows)
    lines.append(f"practical threshold {100 * threshold:g}%: medians closer than that are SAME "
                 f"even where their 95% CIs are apart ({practical} such)")
    return "\n".join(lines)
